"""Deriving candidate input specifications from a model's graph (pure Python + onnx).

Which node consumes each input decides its values (an embedding's ids stay below its row count,
recurrent state starts at zeros, a sample rate compared with 16000 is 16000); fixed dims are
kept, batch dims are 1, and the other symbolic dims take candidate sizes of their kind in
lockstep. :mod:`edgestudio.core.inputs.input_probe` runs the candidates until one works.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

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
from edgestudio.core.model.light_inference import inferred_dims
from edgestudio.core.model.opsets import iter_nodes

# Ops through which an input keeps its meaning (an index stays an index after a Cast).
_PASSTHROUGH = frozenset(
    {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand", "Transpose"}
)
_RECURRENT = frozenset({"RNN", "GRU", "LSTM", "DynamicQuantizeLSTM"})
_STATE_NAME = re.compile(
    r"(^|[_.\-/])(state|states|hidden|h0|c0|h|c|cache|past|memory)"
    r"($|[_.\-/\d])",
    re.IGNORECASE,
)
_MASK_NAME = re.compile(r"mask", re.IGNORECASE)
_BATCH_NAME = re.compile(r"^(bs|batch|batch_?size|unk__\d+)$", re.IGNORECASE)
_COMPARE_OPS = frozenset({"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"})

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


@dataclass
class _Usage:
    """What the graph does with one input (found by following it through pass-through ops)."""

    gather_rows: list[tuple[str, int]] = field(default_factory=list)
    gather_axes: list[tuple[str, int]] = field(default_factory=list)  # (graph input, axis)
    recurrent_state: bool = False
    sequence_lens_of: str | None = None  # the RNN data input whose time dim this counts
    compared_with: list[float] = field(default_factory=list)
    # (data tensor, axis) this input's values index (Gather, GatherElements, ScatterElements,
    # GatherND/ScatterND) where the data is computed, not stored; resolved to the data's dim
    # at that axis (a symbol such as num_nodes, or a size) through the inferred shapes
    index_targets: list[tuple[str, int]] = field(default_factory=list)
    index_dims: list[str | int] = field(default_factory=list)
    # whole numbers in [low, high) the graph expects: a OneHot's depth, an Equal against a
    # range of constants (low, high, why)
    value_ranges: list[tuple[int, int, str]] = field(default_factory=list)


def _constants(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    found = {t.name: t for t in model.graph.initializer}
    for node in iter_nodes(model.graph):
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    found[node.output[0]] = attr.t
    return found


# Ops between a stored table and the Gather that reads it which keep its rows: a weight-only
# int8 table is Cast (or DequantizeLinear'd) to float and scaled by a Mul before the lookup.
_TABLE_CHAIN = frozenset({"Cast", "Identity", "DequantizeLinear", "Mul", "Div", "Add", "Sub"})


# Ops whose second input indexes their first (data) input: along ``axis`` (_AXIS_INDEX_OPS),
# or its leading dims (GatherND/ScatterND, batch_dims 0).
_AXIS_INDEX_OPS = frozenset({"GatherElements", "ScatterElements"})
_INDEX_OPS = _AXIS_INDEX_OPS | {"GatherND", "ScatterND"}


def _resolve_index_dims(model: onnx.ModelProto, usages: dict[str, _Usage]) -> None:
    """Turn each usage's index targets into the dims they index (see :class:`_Usage`)."""
    if not any(u.index_targets for u in usages.values()):
        return
    dims = inferred_dims(model)
    for usage in usages.values():
        for tensor, axis in usage.index_targets:
            shape = dims.get(tensor)
            if shape:
                dim = shape[axis % len(shape)]
                if dim is not None and dim != 0:
                    usage.index_dims.append(dim)


# Ops that pick a part of an index tensor (a row of edge_index) without changing what it means.
_INDEX_SELECTORS = frozenset({"Gather", "Slice", "Split"})


def _input_behind(
    tensor: str, producers: dict[str, onnx.NodeProto], graph_inputs: set[str]
) -> str | None:
    """The graph input whose values ``tensor`` holds, through ops that only move them."""
    for _ in range(8):
        if tensor in graph_inputs:
            return tensor
        node = producers.get(tensor)
        if node is None or node.op_type not in _PASSTHROUGH or not node.input:
            return None
        tensor = node.input[0]
    return None


def _table_behind(
    tensor: str,
    producers: dict[str, onnx.NodeProto],
    consts: dict[str, onnx.TensorProto],
    depth: int = 0,
) -> tuple[str, onnx.TensorProto] | None:
    """The stored table a Gather reads, through the ops that de-quantize or scale it."""
    if tensor in consts:
        return tensor, consts[tensor]
    node = producers.get(tensor)
    if depth > 8 or node is None or node.op_type not in _TABLE_CHAIN or not node.input:
        return None
    if node.op_type in ("Cast", "Identity", "DequantizeLinear"):
        return _table_behind(node.input[0], producers, consts, depth + 1)
    # Elementwise scaling: of the operands, the biggest table keeps the rows (not the scale).
    found = [
        t
        for t in (_table_behind(i, producers, consts, depth + 1) for i in node.input)
        if t is not None
    ]
    return max(found, key=lambda t: (len(t[1].dims), int(np.prod(t[1].dims))), default=None)


def _usage(
    model: onnx.ModelProto,
    name: str,
    consumers: dict[str, list[onnx.NodeProto]],
    consts: dict[str, onnx.TensorProto],
    producers: dict[str, onnx.NodeProto] | None = None,
) -> _Usage:
    usage = _Usage()
    producers = producers if producers is not None else _producers(model)
    graph_inputs = {v.name for v in model.graph.input}
    frontier, seen = [name], {name}
    while frontier:
        tensor = frontier.pop()
        for node in consumers.get(tensor, []):
            op = node.op_type
            if (
                (op in _PASSTHROUGH or op in _INDEX_SELECTORS)
                and node.input
                and node.input[0] == tensor
            ):  # a part of the indices is still indices
                for out in node.output:
                    if out not in seen:
                        seen.add(out)
                        frontier.append(out)
            elif op == "Gather" and len(node.input) > 1 and node.input[1] == tensor:
                table = _table_behind(node.input[0], producers, consts)
                axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                dims = list(table[1].dims) if table else []
                if table and dims:
                    usage.gather_rows.append((table[0], int(dims[axis % len(dims)])))
                source = _input_behind(node.input[0], producers, graph_inputs)
                if table is None and source is not None:
                    usage.gather_axes.append((source, axis))
                elif table is None:
                    usage.index_targets.append((node.input[0], axis))
            elif op in _INDEX_OPS and len(node.input) > 1 and node.input[1] == tensor:
                axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                usage.index_targets.append((node.input[0], axis if op in _AXIS_INDEX_OPS else 0))
            elif op in _RECURRENT:
                index = list(node.input).index(tensor)
                if index in (5, 6):
                    usage.recurrent_state = True
                elif index == 4:
                    usage.sequence_lens_of = node.input[0]
            elif (
                op == "OneHot"
                and node.input[0] == tensor
                and len(node.input) > 1
                and node.input[1] in consts
            ):
                depth = int(onnx.numpy_helper.to_array(consts[node.input[1]]).reshape(-1)[0])
                if depth > 0:
                    usage.value_ranges.append(
                        (
                            0,
                            depth,
                            f"one-hot encoded by '{node.name or node.output[0]}' (depth {depth})",
                        )
                    )
            elif op in _COMPARE_OPS:
                other = [t for t in node.input if t != tensor and t in consts]
                for t in other:
                    values = onnx.numpy_helper.to_array(consts[t]).reshape(-1)
                    if 0 < values.size <= 4:
                        usage.compared_with += [float(v) for v in values]
                    elif values.size > 4 and np.all(np.mod(values, 1) == 0):
                        low, high = int(values.min()), int(values.max())
                        usage.value_ranges.append(
                            (low, high + 1, f"compared with the constants {low}…{high}")
                        )
    return usage


def _producers(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {out: node for node in iter_nodes(model.graph) for out in node.output}


def _consumers(model: onnx.ModelProto) -> dict[str, list[onnx.NodeProto]]:
    found: dict[str, list[onnx.NodeProto]] = {}
    for node in iter_nodes(model.graph):
        for t in dict.fromkeys(node.input):
            if t:
                found.setdefault(t, []).append(node)
    return found


@dataclass(frozen=True)
class _Slot:
    """One unknown dim: the symbol that names it (or a private name) and its kind."""

    symbol: str
    kind: str  # batch | image | sequence | signal | state
    least: int = 1  # the smallest size that fits (a convolution's window along it)
    window: str = ""  # that window, named


def _is_state(inp: DeclaredInput, usage: _Usage) -> bool:
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
    usages: dict[str, _Usage],
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
    usage: _Usage,
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
    consumers, consts, producers = _consumers(model), _constants(model), _producers(model)
    usages = {i.name: _usage(model, i.name, consumers, consts, producers) for i in inputs}
    _resolve_index_dims(model, usages)
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


def needs_attention(model: onnx.ModelProto) -> list[str]:
    """Inputs a user may have to specify when no derived spec runs: unknown dims or ints."""
    names = []
    for inp in declared_inputs(model):
        if any(not isinstance(d, int) for d in inp.shape) or np.issubdtype(
            np.dtype(inp.dtype), np.integer
        ):
            names.append(f"{inp.name} {inp.dtype} {list(inp.shape)}")
    return names


def describe_failure(
    model: onnx.ModelProto, errors: Sequence[str], tried: Sequence[InputSpecification] = ()
) -> str:
    """The message when no candidate ran: which inputs and dims are still unknown, what the
    graph fixed, the ``--shape`` entry that settles them, and onnxruntime's last error."""
    last = errors[-1] if errors else "no candidate could be built"
    attention = needs_attention(model)
    head = (
        f"The model did not run on any of {len(errors)} input specification(s) derived "
        "from its graph" + (f" ({_shapes_tried(tried)})." if tried else ".")
    )
    if not attention:
        return (
            f"{head} Give real data (the Inputs tab's data; --data on the command line). "
            f"The last error: {last}"
        )
    parts = [head]
    first = tried[0] if tried else None
    fixed = [
        f"{e.name}: {why.strip()}"
        for e in (first.inputs if first else ())
        for why in e.reason.split(";")[1:]
    ]
    if fixed:
        parts.append("What the graph fixes: " + "; ".join(fixed) + ".")
    varied = _varied_symbols(tried)
    entries = []
    for e in first.inputs if first else ():
        unknown = [(a, d) for a, d in enumerate(e.declared) if isinstance(d, str) and d in varied]
        if unknown:
            letters = {a: _placeholder(d, e.name) for a, d in unknown}
            shape = "x".join(letters.get(a, str(n)) for a, n in enumerate(e.shape))
            tried_sizes = ", ".join(str(n) for n in varied[unknown[0][1]])
            dims = ", ".join(f"{letters[a]} = {_dim_label(d, e.name, a)}" for a, d in unknown)
            entries.append(f"--shape {e.name}={shape} ({dims}; tried {tried_sizes})")
    listed = ", ".join(attention)
    if entries:
        parts.append(
            f"Still unknown in {listed}: give the sizes your data has, "
            + "; ".join(entries)
            + " — on the command line, or the same entries in "
            "the Inputs tab's Shapes (values: --range NAME=LOW:HIGH, its Ranges), "
            "or real data (--data)."
        )
    else:
        parts.append(
            f"Give the shapes or value ranges of {listed} (the Inputs tab's Shapes "
            "and Ranges; --shape NAME=DIMxDIM / --range NAME=LOW:HIGH on the command "
            "line), or real data (--data)."
        )
    parts.append(f"The last error: {last}")
    return " ".join(parts)


def _shapes_tried(tried: Sequence[InputSpecification], most: int = 3) -> str:
    """``x 1x224x224x3; x 1x320x320x3; … 13 in all``: the shapes the candidates had."""
    shapes = [
        ", ".join(f"{e.name} {'x'.join(map(str, e.shape)) or 'scalar'}" for e in spec.inputs)
        for spec in tried
    ]
    said = "; ".join(shapes[:most])
    return f"tried {said}" + (f"; … {len(shapes)} in all" if len(shapes) > most else "")


def _varied_symbols(tried: Sequence[InputSpecification]) -> dict[str, list[int]]:
    """The symbols the candidates gave different sizes, with the sizes in the order tried."""
    sizes: dict[str, list[int]] = {}
    for spec in tried:
        for symbol, n in spec.sizes:
            sizes.setdefault(symbol, [])
            if n not in sizes[symbol]:
                sizes[symbol].append(n)
    return {s: v for s, v in sizes.items() if len(v) > 1}


def _dim_label(symbol: str, name: str, axis: int) -> str:
    return f"axis {axis}" if symbol.startswith(f"{name}:") else symbol


def _placeholder(symbol: str, name: str) -> str:
    """``N`` for an unnamed dim, the symbol in capitals (``TIME``) for a named one."""
    if symbol.startswith(f"{name}:"):
        return "N"
    return re.sub(r"\W", "_", symbol).upper()
