"""Deriving candidate input specifications from a model's graph (pure Python + onnx).

Which node consumes each input decides its values (an embedding's ids stay below its row count,
recurrent state starts at zeros, a sample rate compared with 16000 is 16000); fixed dims are
kept, batch dims are 1, and the other symbolic dims take candidate sizes of their kind in
lockstep. :mod:`edgestudio.core.inputs.input_probe` runs the candidates until one works.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import numpy as np
import onnx

from edgestudio.core.inputs.grammar import InputOverrides
from edgestudio.core.inputs.graph_constraints import (
    AxisSize,
    multiples_of,
    recurrent_batch_axes,
    total_stride,
    weight_fixed_axes,
    windowed_axes,
)
from edgestudio.core.inputs.input_spec import (
    Domain,
    Feeds,
    InputEntry,
    InputSpecError,
    InputSpecification,
)
from edgestudio.core.inputs.input_usage import (
    InputUsage,
    constants_of,
    consumers_of,
    input_usage,
    producers_of,
    resolve_index_dims,
)

_STATE_NAME = re.compile(
    r"(^|[_.\-/])(state|states|hidden|h0|c0|h|c|cache|past|memory)"
    r"($|[_.\-/\d])",
    re.IGNORECASE,
)
_MASK_NAME = re.compile(r"mask", re.IGNORECASE)
_BATCH_NAME = re.compile(r"^(bs|batch|batch_?size|unk__\d+)$", re.IGNORECASE)

# Sizes tried, in order, for symbolic dims other than the batch (first one that runs wins).
IMAGE_SIZES = (224, 320, 640, 64, 32, 128, 256, 96, 48, 512)
SEQUENCE_SIZES = (16, 128, 8, 64, 32, 1, 256, 512)
SIGNAL_SIZES = (512, 1024, 16000, 16, 64, 256, 4096, 160, 1, 8, 32, 128, 2048)
MAX_CANDIDATES = 13
# A guess is run to see whether it works: guesses that feed more values than this are not
# tried (two 16000-wide signal dims made one 1 GB input whose first Conv took 24 GB), unless
# the sizes are the user's.
MAX_GUESSED_VALUES = 1 << 24


@dataclass(frozen=True)
class DeclaredInput:
    """A model input as the graph declares it."""

    name: str
    dtype: str
    shape: tuple[int | str | None, ...]

    def text(self) -> str:
        """``image float32 [batch, 1, 8, 8]``."""
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.name} {self.dtype} [{dims}]"


def declared_inputs(model: onnx.ModelProto) -> list[DeclaredInput]:
    """The model's real inputs (initializers excluded), unknown dims as None."""
    inits = {t.name for t in model.graph.initializer}
    found = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        tensor = value.type.tensor_type
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name
        except (KeyError, TypeError, ValueError):
            dtype = "float32"
        shape = tuple(
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or None)
            for d in tensor.shape.dim
        )
        found.append(DeclaredInput(value.name, dtype, shape))
    return found


@dataclass(frozen=True)
class _Slot:
    """One unknown dim: the symbol that names it (or a private name) and its kind."""

    symbol: str
    kind: str  # batch | image | sequence | signal | state
    least: int = 1  # the smallest size that fits (a convolution's window along it)
    window: str = ""  # that window, named


def _is_state(inp: DeclaredInput, usage: InputUsage) -> bool:
    fixed_leading = bool(inp.shape) and isinstance(inp.shape[0], int) and len(inp.shape) >= 3
    return usage.recurrent_state or (
        np.issubdtype(np.dtype(inp.dtype), np.floating)
        and bool(_STATE_NAME.search(inp.name))
        and (fixed_leading or len(inp.shape) >= 2)
    )


def _batch_named(symbol: str, axis: int) -> bool:
    """True when ``symbol``'s name says it is a batch. tf2onnx names every unknown dim
    ``unk__N`` — a batch at axis 0, a height, width or length elsewhere (an NHWC input
    ``[unk__1, unk__2, unk__3, 3]`` had all three made 1, and its decoder failed)."""
    if not _BATCH_NAME.match(symbol):
        return False
    return axis == 0 or not symbol.lower().startswith("unk__")


def _slots(
    inputs: list[DeclaredInput],
    usages: dict[str, InputUsage],
    recurrent_batch: set[tuple[str, int]],
    windowed: Mapping[tuple[str, int], AxisSize] | None = None,
) -> dict[tuple[str, int], _Slot]:
    """Classify every unknown dim of every input (``recurrent_batch``: the axes a recurrent
    layer reads as its batch; ``windowed``: the axes a convolution slides along, with the
    least size its window needs)."""
    windowed = windowed or {}
    slots: dict[tuple[str, int], _Slot] = {}
    # An axis other inputs index into (a graph network's nodes) is a count of things, not a
    # batch: it takes real sizes so that the indices into it mean something.
    indexed = {
        (name, axis % max(1, len(shape)))
        for u in usages.values()
        for name, axis in u.gather_axes
        for shape in [next((i.shape for i in inputs if i.name == name), ())]
    }
    indexed_symbols = {d for u in usages.values() for d in u.index_dims if isinstance(d, str)}
    indexed |= {
        (i.name, axis)
        for i in inputs
        for axis, d in enumerate(i.shape)
        if isinstance(d, str) and d in indexed_symbols
    }
    batch_symbols: set[str] = set()
    for inp in inputs:  # a symbol at axis 0 of a tensor input is a batch wherever it appears
        if (
            len(inp.shape) >= 2
            and isinstance(inp.shape[0], str)
            and not _is_state(inp, usages[inp.name])
            and (inp.name, 0) not in indexed
            and (inp.name, 0) not in windowed
        ):
            batch_symbols.add(inp.shape[0])
    for inp in inputs:
        state = _is_state(inp, usages[inp.name])
        floating = np.issubdtype(np.dtype(inp.dtype), np.floating)
        for axis, dim in enumerate(inp.shape):
            if isinstance(dim, int):
                continue
            symbol = dim if isinstance(dim, str) else f"{inp.name}:{axis}"
            window = windowed.get((inp.name, axis))
            least = window.size if window is not None else 1
            if (inp.name, axis) in indexed:
                kind = "sequence"
            elif axis == 0 and (inp.name, 0) in windowed and not (floating and len(inp.shape) == 4):
                kind = "sequence"  # the frames of a feature matrix the graph convolves over
            elif (
                (isinstance(dim, str) and (dim in batch_symbols or _batch_named(dim, axis)))
                or (axis == 0 and len(inp.shape) >= 2)
                or state
                or (inp.name, axis) in recurrent_batch
            ):
                kind = "batch"
            elif floating and len(inp.shape) == 4 and axis >= 1:
                kind = "image"
            elif not floating or usages[inp.name].gather_rows:  # ids, even when stored as floats
                kind = "sequence"
            else:
                kind = "signal"
            slots[(inp.name, axis)] = (
                _Slot(symbol, kind, least, window.reason)
                if kind != "batch" and window is not None
                else _Slot(symbol, kind)
            )
    return slots


_SIZES_BY_KIND = {"image": IMAGE_SIZES, "sequence": SEQUENCE_SIZES, "signal": SIGNAL_SIZES}


def _domain_for(
    inp: DeclaredInput,
    usage: InputUsage,
    state: bool,
    slots: dict[tuple[str, int], _Slot],
    data_inputs: dict[str, DeclaredInput],
) -> tuple[Domain, str]:
    dtype = np.dtype(inp.dtype)
    if dtype == np.bool_:
        if _MASK_NAME.search(inp.name):  # random masks leave outputs undefined (NaN) where off
            return Domain("ones"), "a mask: all true (nothing masked)"
        return Domain("bool"), "a boolean input"
    if dtype.kind in "OSU":
        return Domain("text"), "a string input: a short word"
    if state:
        return Domain("zeros"), "recurrent state: starts at zeros"
    if np.issubdtype(dtype, np.integer):
        if usage.gather_rows:
            table, rows = min(usage.gather_rows, key=lambda tr: tr[1])
            return (
                Domain("integers", 0, rows),
                f"indexes '{table}' ({rows} rows): values below {rows}",
            )
        if _MASK_NAME.search(inp.name):
            return Domain("ones"), "a mask: all ones (nothing masked)"
        indexed = [
            (name, axis)
            for name, axis in usage.gather_axes
            if (name, axis % max(1, len(data_inputs[name].shape))) in slots
        ]
        if indexed:
            name, axis = indexed[0]
            symbol = slots[(name, axis % len(data_inputs[name].shape))].symbol
            return (
                Domain("below_dim", of_dim=symbol),
                f"indexes axis {axis} of '{name}': values below its size ({symbol})",
            )
        symbols = {s.symbol for s in slots.values()}
        named = [d for d in usage.index_dims if isinstance(d, str) and d in symbols]
        sizes = [d for d in usage.index_dims if isinstance(d, int) and d > 0]
        if named:
            return (
                Domain("below_dim", of_dim=named[0]),
                f"indexes a tensor of {named[0]} rows: values below its size",
            )
        if sizes:
            return (
                Domain("integers", 0, min(sizes)),
                f"indexes a tensor of {min(sizes)} rows: values below {min(sizes)}",
            )
        if usage.sequence_lens_of is not None:
            data = data_inputs.get(usage.sequence_lens_of)
            slot = slots.get((data.name, 0)) if data else None
            if slot is not None:
                return (
                    Domain("sequence_length", of_dim=slot.symbol),
                    "sequence lengths of a recurrent layer: the full length",
                )
            fixed = data.shape[0] if data and data.shape else None
            if isinstance(fixed, int):
                return (
                    Domain("values", values=(float(fixed),)),
                    "sequence lengths of a recurrent layer: the full length",
                )
        if usage.value_ranges:
            low, high, why = usage.value_ranges[0]
            return Domain("integers", low, high), f"{why}: values {low}–{high - 1}"
        if usage.compared_with:
            values = tuple(dict.fromkeys(usage.compared_with))
            return Domain("values", values=values), "compared with constants in the graph"
        if dtype == np.uint8 and len(inp.shape) in (3, 4):
            return Domain("integers", 0, 256), "an image in bytes: values 0–255"
        return Domain("integers", 0, 2), "an integer input: small safe values (0 or 1)"
    if usage.gather_rows:  # e.g. characters as floats, Cast to int64 before the embedding
        table, rows = min(usage.gather_rows, key=lambda tr: tr[1])
        return (
            Domain("integers", 0, rows),
            f"a float input Cast to integers that index '{table}' ({rows} rows): whole "
            f"numbers below {rows}",
        )
    if _MASK_NAME.search(inp.name):
        return Domain("ones"), "a mask: all ones"
    if usage.value_ranges:  # class ids stored as floats, one-hot encoded in the graph
        low, high, why = usage.value_ranges[0]
        return Domain("integers", low, high), f"{why}: whole numbers {low}–{high - 1}"
    return Domain("normal"), "a float input: standard normal values"


def derive_candidates(
    model: onnx.ModelProto, overrides: InputOverrides | None = None
) -> Iterator[InputSpecification]:
    """Candidate specifications, most plausible first; the first that runs is the one to use.

    Fixed dims are kept, batch dims are 1, and the other symbolic dims take, in lockstep, the
    sizes of their kind (image, sequence, signal). Overrides are applied to every candidate.
    Raises InputSpecError when an override names no input or contradicts a fixed dim.
    """
    overrides = overrides or InputOverrides()
    inputs = declared_inputs(model)
    by_name = {i.name: i for i in inputs}
    shapes, ranges = overrides.parsed_shapes(), overrides.parsed_ranges()
    unknown = sorted((set(shapes) | set(ranges)) - set(by_name))
    if unknown:
        listed = ", ".join(f"{i.name} {i.dtype} {list(i.shape)}" for i in inputs) or "none"
        raise InputSpecError(
            f"No input called {', '.join(unknown)}; the model's inputs are {listed}."
        )
    for name, shape in shapes.items():
        declared = by_name[name].shape
        if len(shape) != len(declared) or any(
            isinstance(d, int) and d != n for d, n in zip(declared, shape, strict=True)
        ):
            raise InputSpecError(
                f"Shape {name}={'x'.join(map(str, shape)) or 'scalar'} does "
                f"not fit the declared shape {list(declared)} (rank and fixed "
                "dims must match)."
            )
    consumers, consts, producers = consumers_of(model), constants_of(model), producers_of(model)
    usages = {i.name: input_usage(model, i.name, consumers, consts, producers) for i in inputs}
    resolve_index_dims(model, usages)
    ranks = {i.name: len(i.shape) for i in inputs if not all(isinstance(d, int) for d in i.shape)}
    slots = _slots(
        inputs,
        usages,
        recurrent_batch_axes(ranks, consumers, consts),
        windowed_axes(ranks, consumers, producers, consts),
    )
    # Symbols fixed by a user's --shape apply wherever the symbol appears.
    pinned: dict[str, int] = {}
    for name, shape in shapes.items():
        for axis, n in enumerate(shape):
            slot = slots.get((name, axis))
            if slot is not None:
                pinned[slot.symbol] = n
    fixed = {
        key: size
        for key, size in weight_fixed_axes(ranks, consumers, producers, consts).items()
        if key in slots
    }
    by_graph = {
        slots[(f.input, f.axis)].symbol: f.size
        for f in fixed.values()
        if slots[(f.input, f.axis)].symbol not in pinned
    }
    domains = {
        i.name: _domain_for(i, usages[i.name], _is_state(i, usages[i.name]), slots, by_name)
        for i in inputs
    }
    stride = total_stride(model, consts)
    yielded: set[tuple[tuple[int, ...], ...]] = set()
    # The sizes the weights imply first; the same candidates without them after, in case a
    # weight was followed through an op that does not keep the axis it meant.
    for graph_sizes in [by_graph, {}] if by_graph else [{}]:
        known = {**graph_sizes, **pinned}
        for spec in _candidates(inputs, slots, known, domains, shapes, ranges, fixed, stride):
            key = tuple(e.shape for e in spec.inputs)
            guessed = sum(int(np.prod(e.shape)) for e in spec.inputs if not e.user_set)
            if key not in yielded and guessed <= MAX_GUESSED_VALUES:
                yielded.add(key)
                yield spec


def _candidates(
    inputs: list[DeclaredInput],
    slots: dict[tuple[str, int], _Slot],
    known: dict[str, int],
    domains: dict[str, tuple[Domain, str]],
    shapes: dict[str, tuple[int, ...]],
    ranges: dict[str, Domain],
    fixed: dict[tuple[str, int], AxisSize],
    stride: int,
) -> Iterator[InputSpecification]:
    """Specs in which the ``known`` symbols keep their sizes, batch dims are 1 and the other
    symbols take, in lockstep, the sizes of their kind (multiples of the graph's stride)."""
    free = sorted(
        {
            s.symbol: s for s in slots.values() if s.kind != "batch" and s.symbol not in known
        }.values(),
        key=lambda s: s.symbol,
    )
    options_by_kind = {
        kind: multiples_of(sizes, stride) if kind != "sequence" else sizes
        for kind, sizes in _SIZES_BY_KIND.items()
    }
    tries = max([len(options_by_kind[s.kind]) for s in free] + [1])
    for k in range(min(tries, MAX_CANDIDATES)):
        sizes = {s.symbol: 1 for s in slots.values() if s.kind == "batch"}
        for s in free:
            options = [o for o in options_by_kind[s.kind] if o >= s.least] or [s.least]
            sizes[s.symbol] = options[min(k, len(options) - 1)]
        sizes.update(known)
        entries = []
        for inp in inputs:
            shape = shapes.get(inp.name) or tuple(
                d if isinstance(d, int) else sizes[slots[(inp.name, a)].symbol]
                for a, d in enumerate(inp.shape)
            )
            domain, reason = domains[inp.name]
            user = inp.name in shapes or inp.name in ranges
            if inp.name in ranges:
                domain = _user_domain(ranges[inp.name], inp.dtype)
                reason = "set by you"
            why_sizes = [
                f"{d if isinstance(d, str) else f'axis {a}'} = "
                f"{fixed[(inp.name, a)].size}, fixed by {fixed[(inp.name, a)].reason}"
                for a, d in enumerate(inp.shape)
                if (inp.name, a) in fixed
                and inp.name not in shapes
                and sizes[slots[(inp.name, a)].symbol] == fixed[(inp.name, a)].size
            ]
            # why a leading axis is no batch of 1 (an image's sides need no saying)
            why_sizes += [
                f"{d} = {sizes[slot.symbol]}, at least {slot.least} for {slot.window}"
                for a, d in enumerate(inp.shape)
                if a == 0
                and (slot := slots.get((inp.name, a))) is not None
                and slot.least > 1
                and (inp.name, a) not in fixed
                and inp.name not in shapes
                and slot.symbol not in known
            ]
            if why_sizes:
                reason = "; ".join([reason, *why_sizes])
            declared = tuple(
                d if d is not None else slots[(inp.name, a)].symbol for a, d in enumerate(inp.shape)
            )
            entries.append(
                InputEntry(inp.name, inp.dtype, tuple(shape), domain, declared, reason, user)
            )
        batch = tuple(sorted({s.symbol for s in slots.values() if s.kind == "batch"} - set(known)))
        yield InputSpecification(tuple(entries), tuple(sorted(sizes.items())), batch_symbols=batch)


def _user_domain(domain: Domain, dtype: str) -> Domain:
    if domain.kind != "range":
        return domain
    kind = "integers" if np.issubdtype(np.dtype(dtype), np.integer) else "uniform"
    return replace(domain, kind=kind)


def spec_from_sample(
    model: onnx.ModelProto, sample: Feeds, derived: InputSpecification | None = None
) -> InputSpecification:
    """A spec that matches one sample of real data: shapes from the data, values as
    ``derived`` (the graph's first candidate) has them (a sample-rate input's 16000, a
    recurrent state's zeros) — what is drawn for the inputs audio or text does not feed — else
    normal."""
    domains = {e.name: e.domain for e in derived.inputs} if derived is not None else {}
    entries = []
    for inp in declared_inputs(model):
        if inp.name not in sample:
            raise InputSpecError(f"The data has no array for input '{inp.name}'.")
        array = sample[inp.name]
        entries.append(
            InputEntry(
                inp.name,
                inp.dtype,
                tuple(array.shape),
                domains.get(inp.name, Domain("normal")),
                tuple(d if d is not None else "?" for d in inp.shape),
                "shape from your data",
            )
        )
    return InputSpecification(tuple(entries), note="from your data")
