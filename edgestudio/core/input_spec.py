"""The input specification: what every job that feeds a model gives it (pure Python + onnx).

For each model input: its dtype, one concrete shape and a value domain. Calibration with
synthetic data, the conversion check, the analysis, benchmarks and profiles all draw their inputs
from it, so a model that runs on it runs everywhere.

A spec is *derived* from the graph — fixed dims kept, scalars kept scalar, batch axes 1, integer
inputs that index an embedding drawn below the table's row count, masks ones, recurrent state
zeros, integers compared with constants (a sample rate) taking those constants — and then
*verified* by running the model (:mod:`edgestudio.core.ops.input_probe`), trying candidate sizes
for the other symbolic dims until one runs. Users override any part with ``--shape NAME=1x3x8x8``
and ``--range NAME=LOW:HIGH`` (or the Inputs form).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import onnx

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.opsets import iter_nodes

Feeds = dict[str, np.ndarray]

# Ops through which an input keeps its meaning (an index stays an index after a Cast).
_PASSTHROUGH = frozenset({"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity",
                          "Expand", "Transpose"})
_RECURRENT = frozenset({"RNN", "GRU", "LSTM", "DynamicQuantizeLSTM"})
_STATE_NAME = re.compile(r"(^|[_.\-/])(state|states|hidden|h0|c0|h|c|cache|past|memory)"
                         r"($|[_.\-/\d])", re.IGNORECASE)
_MASK_NAME = re.compile(r"mask", re.IGNORECASE)
_BATCH_NAME = re.compile(r"^(bs|batch|batch_?size|unk__\d+)$", re.IGNORECASE)
_COMPARE_OPS = frozenset({"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"})

# Sizes tried, in order, for symbolic dims other than the batch (first one that runs wins).
IMAGE_SIZES = (224, 320, 640, 64, 32, 128, 256, 96, 48, 512)
SEQUENCE_SIZES = (16, 128, 8, 64, 32, 1, 256, 512)
SIGNAL_SIZES = (512, 1024, 16000, 16, 64, 256, 4096, 160, 1, 8, 32, 128, 2048)
MAX_CANDIDATES = 13


class InputSpecError(EdgeStudioError):
    """An override does not fit the model, or no derived spec lets the model run."""


@dataclass(frozen=True)
class Domain:
    """The values an input takes.

    ``normal``: standard normal floats; ``uniform``: floats in [low, high); ``integers``: ints
    in [low, high); ``ones`` / ``zeros``; ``bool``: random booleans; ``values``: drawn from
    ``values`` (a sample rate, say); ``sequence_length``: every element is the size of
    ``of_dim`` (an RNN's ``sequence_lens``); ``text``: a short word (string inputs).
    """

    kind: str = "normal"
    low: float = 0.0
    high: float = 1.0
    values: tuple[float, ...] = ()
    of_dim: str = ""

    def text(self) -> str:
        """Short form for tables: ``0:30522``, ``ones``, ``{16000, 8000}``."""
        if self.kind in ("integers", "uniform"):
            return f"{_num(self.low)}:{_num(self.high)}"
        if self.kind == "values":
            return "{" + ", ".join(_num(v) for v in self.values) + "}"
        if self.kind == "sequence_length":
            return f"= {self.of_dim}"
        return self.kind


    def cli_text(self) -> str:
        """The ``--range`` value that gives this domain: ``0:30522``, ``16000,8000``, ``ones``."""
        if self.kind == "values":
            return ",".join(_num(v) for v in self.values)
        if self.kind == "sequence_length":
            return self.text()
        return self.text()


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class InputEntry:
    """One input of the spec: dtype, concrete shape, domain, and why they were chosen."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    domain: Domain = field(default_factory=Domain)
    declared: tuple[int | str | None, ...] = ()
    reason: str = ""
    user_set: bool = False

    def shape_text(self) -> str:
        """``1x3x224x224`` (``scalar`` for rank 0)."""
        return "x".join(str(d) for d in self.shape) if self.shape else "scalar"

    def declared_text(self) -> str:
        """The shape as the model declares it: ``[batch, 3, 224, 224]``."""
        return "[" + ", ".join("?" if d is None else str(d) for d in self.declared) + "]"

    def make(self, rng: np.random.Generator, sizes: dict[str, int] | None = None) -> np.ndarray:
        """Draw one array for this input."""
        dtype = np.dtype(self.dtype)
        shape = self.shape
        d = self.domain
        if d.kind == "zeros":
            return np.zeros(shape, dtype)
        if d.kind == "ones":
            return np.ones(shape, dtype)
        if d.kind == "bool" or dtype == np.bool_:
            return (rng.random(shape) > 0.5).astype(dtype)
        if d.kind == "text" or dtype.kind in "OSU":  # in-graph tokenizers: a short word each
            return np.full(shape, "edge", dtype=object)
        if d.kind == "values":
            return rng.choice(np.asarray(d.values), size=shape).astype(dtype)
        if d.kind == "sequence_length":
            return np.full(shape, (sizes or {}).get(d.of_dim, 1), dtype)
        if d.kind == "integers":
            return rng.integers(int(d.low), max(int(d.high), int(d.low) + 1), shape).astype(dtype)
        if d.kind == "uniform":
            return rng.uniform(d.low, d.high, shape).astype(dtype)
        if np.issubdtype(dtype, np.integer):
            return rng.integers(0, 2, shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)


@dataclass(frozen=True)
class InputSpecification:
    """Every input of a model, as one concrete, runnable specification.

    ``sizes`` holds the size chosen for each symbolic dim (``{"batch": 1, "sequence": 128}``);
    ``verified`` says the model ran on it; ``note`` says how it was found.
    """

    inputs: tuple[InputEntry, ...] = ()
    sizes: tuple[tuple[str, int], ...] = ()
    verified: bool = False
    note: str = ""
    batch_symbols: tuple[str, ...] = ()

    def entry(self, name: str) -> InputEntry:
        """The entry for input ``name``."""
        for e in self.inputs:
            if e.name == name:
                return e
        raise KeyError(name)

    def feeds(self, seed: int = 0) -> Feeds:
        """Seeded arrays for every input (the same seed gives the same arrays)."""
        rng = np.random.default_rng(seed)
        sizes = dict(self.sizes)
        return {e.name: e.make(rng, sizes) for e in self.inputs}

    def scaled(self, symbol_sizes: dict[str, int]) -> InputSpecification:
        """The same spec with some symbolic dims resized (the conversion check's second size)."""
        sizes = {**dict(self.sizes), **symbol_sizes}
        entries = []
        for e in self.inputs:
            shape = tuple(sizes.get(d, n) if isinstance(d, str) else n
                          for d, n in zip(e.declared, e.shape, strict=True))
            entries.append(replace(e, shape=shape))
        return replace(self, inputs=tuple(entries), sizes=tuple(sorted(sizes.items())),
                       verified=False)

    def with_batch(self, batch: int) -> InputSpecification:
        """The same spec with every batch dim set to ``batch``."""
        if batch == 1 or not self.batch_symbols:
            return self
        return self.scaled(dict.fromkeys(self.batch_symbols, batch))

    def text_lines(self) -> list[str]:
        """One line per input: ``input_ids int64 1x16 (declared [batch, sequence]) 0:30522``."""
        lines = []
        for e in self.inputs:
            mark = " (set by you)" if e.user_set else ""
            why = f" — {e.reason}" if e.reason else ""
            lines.append(f"{e.name} {e.dtype} {e.shape_text()} (declared {e.declared_text()}) "
                         f"values {e.domain.text()}{mark}{why}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "inputs": [{"name": e.name, "dtype": e.dtype, "shape": list(e.shape),
                        "declared": list(e.declared), "reason": e.reason, "user_set": e.user_set,
                        "domain": {"kind": e.domain.kind, "low": e.domain.low,
                                   "high": e.domain.high, "values": list(e.domain.values),
                                   "of_dim": e.domain.of_dim}}
                       for e in self.inputs],
            "sizes": dict(self.sizes), "verified": self.verified, "note": self.note,
            "batch_symbols": list(self.batch_symbols),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InputSpecification:
        """Rebuild from :meth:`to_dict` output."""
        entries = []
        for e in data.get("inputs", []):
            d = e.get("domain", {})
            entries.append(InputEntry(
                e["name"], e["dtype"], tuple(int(x) for x in e["shape"]),
                Domain(d.get("kind", "normal"), float(d.get("low", 0.0)),
                       float(d.get("high", 1.0)), tuple(float(v) for v in d.get("values", [])),
                       str(d.get("of_dim", ""))),
                tuple(e.get("declared", [])), e.get("reason", ""), bool(e.get("user_set"))))
        sizes = tuple(sorted((str(k), int(v)) for k, v in dict(data.get("sizes", {})).items()))
        return cls(tuple(entries), sizes, bool(data.get("verified")), str(data.get("note", "")),
                   tuple(str(b) for b in data.get("batch_symbols", [])))


# ----- overrides --------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputOverrides:
    """What the user fixed: shapes (``NAME=1x3x224x224``) and ranges (``NAME=0:30522``)."""

    shapes: tuple[str, ...] = ()
    ranges: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.shapes or self.ranges)

    def parsed_shapes(self) -> dict[str, tuple[int, ...]]:
        """``{name: shape}``; raises InputSpecError on a malformed entry."""
        out: dict[str, tuple[int, ...]] = {}
        for text in self.shapes:
            name, sep, dims = text.rpartition("=")
            if not sep or not name:
                raise InputSpecError(f"--shape expects NAME=DIMxDIM, e.g. image=1x3x224x224 "
                                     f"(got '{text}')")
            if dims.strip().lower() in ("", "scalar"):
                out[name] = ()
                continue
            try:
                shape = tuple(int(d) for d in dims.strip().lower().split("x"))
            except ValueError as exc:
                raise InputSpecError(f"--shape {text}: a shape is written DIMxDIM…, "
                                     "e.g. 1x3x224x224, or 'scalar'") from exc
            if any(d < 0 for d in shape):
                raise InputSpecError(f"--shape {text}: dims must be ≥ 0")
            out[name] = shape
        return out

    def parsed_ranges(self) -> dict[str, Domain]:
        """``{name: Domain}``: ``LOW:HIGH`` (integers: HIGH excluded), ``ones``, ``zeros``,
        ``normal``, ``bool`` or ``V1,V2,…`` (values)."""
        out = {}
        for text in self.ranges:
            name, sep, value = text.rpartition("=")
            if not sep or not name:
                raise InputSpecError(f"--range expects NAME=LOW:HIGH, e.g. input_ids=0:30522 "
                                     f"(got '{text}')")
            value = value.strip().lower()
            try:
                if value in ("ones", "zeros", "normal", "bool"):
                    out[name] = Domain(value)
                elif ":" in value:
                    low, high = (float(v) for v in value.split(":", 1))
                    if high <= low:
                        raise InputSpecError(f"--range {text}: HIGH must be above LOW")
                    out[name] = Domain("range", low, high)
                else:
                    out[name] = Domain("values", values=tuple(float(v)
                                                              for v in value.split(",")))
            except ValueError as exc:
                raise InputSpecError(f"--range {text}: expected LOW:HIGH, V1,V2,…, ones, zeros, "
                                     "normal or bool") from exc
        return out

    def to_cli(self) -> list[str]:
        """The ``--shape``/``--range`` arguments that give these overrides."""
        args = []
        for s in self.shapes:
            args += ["--shape", s]
        for r in self.ranges:
            args += ["--range", r]
        return args


# ----- derivation -------------------------------------------------------------------------------

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
        shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0
                      else (d.dim_param or None) for d in tensor.shape.dim)
        found.append(DeclaredInput(value.name, dtype, shape))
    return found


@dataclass
class _Usage:
    """What the graph does with one input (found by following it through pass-through ops)."""

    gather_rows: list[tuple[str, int]] = field(default_factory=list)
    recurrent_state: bool = False
    sequence_lens_of: str | None = None  # the RNN data input whose time dim this counts
    compared_with: list[float] = field(default_factory=list)


def _constants(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    found = {t.name: t for t in model.graph.initializer}
    for node in iter_nodes(model.graph):
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    found[node.output[0]] = attr.t
    return found


def _usage(model: onnx.ModelProto, name: str, consumers: dict[str, list[onnx.NodeProto]],
           consts: dict[str, onnx.TensorProto]) -> _Usage:
    usage = _Usage()
    frontier, seen = [name], {name}
    while frontier:
        tensor = frontier.pop()
        for node in consumers.get(tensor, []):
            op = node.op_type
            if op in _PASSTHROUGH and node.input and node.input[0] == tensor:
                for out in node.output:
                    if out not in seen:
                        seen.add(out)
                        frontier.append(out)
            elif op == "Gather" and len(node.input) > 1 and node.input[1] == tensor \
                    and node.input[0] in consts:
                axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                dims = list(consts[node.input[0]].dims)
                if dims:
                    usage.gather_rows.append((node.input[0], int(dims[axis % len(dims)])))
            elif op in _RECURRENT:
                index = list(node.input).index(tensor)
                if index in (5, 6):
                    usage.recurrent_state = True
                elif index == 4:
                    usage.sequence_lens_of = node.input[0]
            elif op in _COMPARE_OPS:
                other = [t for t in node.input if t != tensor and t in consts]
                for t in other:
                    values = onnx.numpy_helper.to_array(consts[t]).reshape(-1)
                    if 0 < values.size <= 4:
                        usage.compared_with += [float(v) for v in values]
    return usage


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


def _is_state(inp: DeclaredInput, usage: _Usage) -> bool:
    fixed_leading = bool(inp.shape) and isinstance(inp.shape[0], int) and len(inp.shape) >= 3
    return usage.recurrent_state or (
        np.issubdtype(np.dtype(inp.dtype), np.floating)
        and bool(_STATE_NAME.search(inp.name)) and (fixed_leading or len(inp.shape) >= 2))


def _slots(inputs: list[DeclaredInput], usages: dict[str, _Usage]) -> dict[tuple[str, int], _Slot]:
    """Classify every unknown dim of every input."""
    slots: dict[tuple[str, int], _Slot] = {}
    batch_symbols: set[str] = set()
    for inp in inputs:  # a symbol at axis 0 of a tensor input is a batch wherever it appears
        if len(inp.shape) >= 2 and isinstance(inp.shape[0], str) \
                and not _is_state(inp, usages[inp.name]):
            batch_symbols.add(inp.shape[0])
    for inp in inputs:
        state = _is_state(inp, usages[inp.name])
        floating = np.issubdtype(np.dtype(inp.dtype), np.floating)
        for axis, dim in enumerate(inp.shape):
            if isinstance(dim, int):
                continue
            symbol = dim if isinstance(dim, str) else f"{inp.name}:{axis}"
            if (isinstance(dim, str) and (dim in batch_symbols or _BATCH_NAME.match(dim))) \
                    or (axis == 0 and len(inp.shape) >= 2) or state:
                kind = "batch"
            elif floating and len(inp.shape) == 4 and axis >= 1:
                kind = "image"
            elif not floating:
                kind = "sequence"
            else:
                kind = "signal"
            slots[(inp.name, axis)] = _Slot(symbol, kind)
    return slots


_SIZES_BY_KIND = {"image": IMAGE_SIZES, "sequence": SEQUENCE_SIZES, "signal": SIGNAL_SIZES}


def _domain_for(inp: DeclaredInput, usage: _Usage, state: bool,
                slots: dict[tuple[str, int], _Slot],
                data_inputs: dict[str, DeclaredInput]) -> tuple[Domain, str]:
    dtype = np.dtype(inp.dtype)
    if dtype == np.bool_:
        return Domain("bool"), "a boolean input"
    if dtype.kind in "OSU":
        return Domain("text"), "a string input: a short word"
    if state:
        return Domain("zeros"), "recurrent state: starts at zeros"
    if np.issubdtype(dtype, np.integer):
        if usage.gather_rows:
            table, rows = min(usage.gather_rows, key=lambda tr: tr[1])
            return (Domain("integers", 0, rows),
                    f"indexes '{table}' ({rows} rows): values below {rows}")
        if _MASK_NAME.search(inp.name):
            return Domain("ones"), "a mask: all ones (nothing masked)"
        if usage.sequence_lens_of is not None:
            data = data_inputs.get(usage.sequence_lens_of)
            slot = slots.get((data.name, 0)) if data else None
            if slot is not None:
                return (Domain("sequence_length", of_dim=slot.symbol),
                        "sequence lengths of a recurrent layer: the full length")
            fixed = data.shape[0] if data and data.shape else None
            if isinstance(fixed, int):
                return (Domain("values", values=(float(fixed),)),
                        "sequence lengths of a recurrent layer: the full length")
        if usage.compared_with:
            values = tuple(dict.fromkeys(usage.compared_with))
            return Domain("values", values=values), "compared with constants in the graph"
        if dtype == np.uint8 and len(inp.shape) in (3, 4):
            return Domain("integers", 0, 256), "an image in bytes: values 0–255"
        return Domain("integers", 0, 2), "an integer input: small safe values (0 or 1)"
    if _MASK_NAME.search(inp.name):
        return Domain("ones"), "a mask: all ones"
    return Domain("normal"), ""


def derive_candidates(model: onnx.ModelProto,
                      overrides: InputOverrides | None = None) -> Iterator[InputSpecification]:
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
        raise InputSpecError(f"No input called {', '.join(unknown)}; the model's inputs are "
                             f"{listed}.")
    for name, shape in shapes.items():
        declared = by_name[name].shape
        if len(shape) != len(declared) or any(isinstance(d, int) and d != n
                                              for d, n in zip(declared, shape, strict=True)):
            raise InputSpecError(f"--shape {name}={'x'.join(map(str, shape)) or 'scalar'} does "
                                 f"not fit the declared shape {list(declared)} (rank and fixed "
                                 "dims must match).")
    consumers, consts = _consumers(model), _constants(model)
    usages = {i.name: _usage(model, i.name, consumers, consts) for i in inputs}
    slots = _slots(inputs, usages)
    # Symbols fixed by a user's --shape apply wherever the symbol appears.
    pinned: dict[str, int] = {}
    for name, shape in shapes.items():
        for axis, n in enumerate(shape):
            slot = slots.get((name, axis))
            if slot is not None:
                pinned[slot.symbol] = n
    free = sorted({s.symbol: s for s in slots.values()
                   if s.kind != "batch" and s.symbol not in pinned}.values(),
                  key=lambda s: s.symbol)
    domains = {i.name: _domain_for(i, usages[i.name], _is_state(i, usages[i.name]), slots,
                                   by_name) for i in inputs}
    tries = max([len(_SIZES_BY_KIND[s.kind]) for s in free] + [1])
    for k in range(min(tries, MAX_CANDIDATES)):
        sizes = {s.symbol: 1 for s in slots.values() if s.kind == "batch"}
        for s in free:
            options = _SIZES_BY_KIND[s.kind]
            sizes[s.symbol] = options[min(k, len(options) - 1)]
        sizes.update(pinned)
        entries = []
        for inp in inputs:
            shape = shapes.get(inp.name) or tuple(
                d if isinstance(d, int) else sizes[slots[(inp.name, a)].symbol]
                for a, d in enumerate(inp.shape))
            domain, reason = domains[inp.name]
            user = inp.name in shapes or inp.name in ranges
            if inp.name in ranges:
                domain = _user_domain(ranges[inp.name], inp.dtype)
                reason = "set by you"
            declared = tuple(d if d is not None else slots[(inp.name, a)].symbol
                             for a, d in enumerate(inp.shape))
            entries.append(InputEntry(inp.name, inp.dtype, tuple(shape), domain, declared,
                                      reason, user))
        batch = tuple(sorted({s.symbol for s in slots.values() if s.kind == "batch"}
                             - set(pinned)))
        yield InputSpecification(tuple(entries), tuple(sorted(sizes.items())),
                                 batch_symbols=batch)


def _user_domain(domain: Domain, dtype: str) -> Domain:
    if domain.kind != "range":
        return domain
    kind = "integers" if np.issubdtype(np.dtype(dtype), np.integer) else "uniform"
    return replace(domain, kind=kind)


def spec_from_sample(model: onnx.ModelProto, sample: Feeds) -> InputSpecification:
    """A spec that matches one sample of real data (shapes from the data, normal values)."""
    entries = []
    for inp in declared_inputs(model):
        if inp.name not in sample:
            raise InputSpecError(f"The data has no array for input '{inp.name}'.")
        array = sample[inp.name]
        entries.append(InputEntry(inp.name, inp.dtype, tuple(array.shape), Domain("normal"),
                                  tuple(d if d is not None else "?" for d in inp.shape),
                                  "shape from your data"))
    return InputSpecification(tuple(entries), note="from your data")


def needs_attention(model: onnx.ModelProto) -> list[str]:
    """Inputs a user may have to specify when no derived spec runs: unknown dims or ints."""
    names = []
    for inp in declared_inputs(model):
        if any(not isinstance(d, int) for d in inp.shape) or \
                np.issubdtype(np.dtype(inp.dtype), np.integer):
            names.append(f"{inp.name} {inp.dtype} {list(inp.shape)}")
    return names


def describe_failure(model: onnx.ModelProto, errors: Sequence[str]) -> str:
    """The message when no candidate ran: the last error and which inputs to specify."""
    last = errors[-1] if errors else "no candidate could be built"
    attention = needs_attention(model)
    hint = (f" Give the shapes or value ranges of {', '.join(attention)} with --shape "
            "NAME=DIMxDIM / --range NAME=LOW:HIGH (or in the Inputs form), or real data with "
            "--data." if attention else " Give real data with --data.")
    return (f"The model did not run on any of {len(errors)} derived input specification(s); "
            f"the last error was: {last}.{hint}")
