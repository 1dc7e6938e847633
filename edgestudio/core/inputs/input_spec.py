"""The input specification: what every job that feeds a model gives it (pure Python + onnx).

For each model input: its dtype, one concrete shape and a value domain. Calibration with
synthetic data, the conversion check, the analysis, benchmarks and profiles all draw their inputs
from it, so a model that runs on it runs everywhere.

A spec is *derived* from the graph — fixed dims kept, scalars kept scalar, batch axes 1, integer
inputs that index an embedding drawn below the table's row count, masks ones, recurrent state
zeros, integers compared with constants (a sample rate) taking those constants — and then
*verified* by running the model (:mod:`edgestudio.core.inputs.input_probe`), trying candidate sizes
for the other symbolic dims until one runs. This module holds the types; the derivation lives in
:mod:`edgestudio.core.inputs.input_derivation`. Users override any part with
``--shape NAME=1x3x8x8`` and ``--range NAME=LOW:HIGH`` (or the Inputs form).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.serialise import register_format

Feeds = dict[str, np.ndarray]


class InputSpecError(EdgeStudioError):
    """An override does not fit the model, or no derived spec lets the model run."""


@dataclass(frozen=True)
class Domain:
    """The values an input takes.

    ``normal``: standard normal floats; ``uniform``: floats in [low, high); ``integers``: ints
    in [low, high); ``ones`` / ``zeros``; ``bool``: random booleans; ``values``: drawn from
    ``values`` (a sample rate, say); ``sequence_length``: every element is the size of
    ``of_dim`` (an RNN's ``sequence_lens``); ``below_dim``: integers below the size of
    ``of_dim`` (indices into another input's axis: a graph network's ``edge_index`` into its
    node features); ``text``: a short word (string inputs).
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
        if self.kind == "below_dim":
            return f"< {self.of_dim}"
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
        """The shape as the model declares it: ``[batch, 3, 224, 224]`` (an unnamed dim,
        which the derivation calls ``NAME:AXIS`` internally, shows as ``?``)."""
        private = f"{self.name}:"
        return (
            "["
            + ", ".join(
                "?" if d is None or str(d).startswith(private) else str(d) for d in self.declared
            )
            + "]"
        )

    def make(self, rng: np.random.Generator, sizes: dict[str, int] | None = None) -> np.ndarray:
        """Draw one array for this input (a 0-d array for a scalar: onnxruntime takes no numpy
        scalar of every type, a bool one fails)."""
        return np.asarray(
            self._draw(rng, sizes), dtype=self.dtype if self.dtype != "object" else object
        )

    def _draw(self, rng: np.random.Generator, sizes: dict[str, int] | None) -> np.ndarray:
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
        if d.kind == "below_dim":
            return _covering(rng, max(1, (sizes or {}).get(d.of_dim, 1)), shape).astype(dtype)
        if d.kind == "integers":
            return rng.integers(int(d.low), max(int(d.high), int(d.low) + 1), shape).astype(dtype)
        if d.kind == "uniform":
            return rng.uniform(d.low, d.high, shape).astype(dtype)
        if np.issubdtype(dtype, np.integer):
            return rng.integers(0, 2, shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)


def _covering(rng: np.random.Generator, count: int, shape: tuple[int, ...]) -> np.ndarray:
    """Indices below ``count`` in which every index occurs when there are enough of them (a
    graph network's ``batch`` then leaves no graph empty: pooling an empty graph gives -inf),
    the rest drawn at random; a 1-D vector comes sorted, as graph libraries batch nodes."""
    size = int(np.prod(shape)) if shape else 1
    if size < count:
        return rng.integers(0, count, shape)
    values = np.concatenate([np.arange(count), rng.integers(0, count, size - count)])
    values = np.sort(values) if len(shape) == 1 else rng.permutation(values)
    return values.reshape(shape)


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
            shape = tuple(
                sizes.get(d, n) if isinstance(d, str) else n
                for d, n in zip(e.declared, e.shape, strict=True)
            )
            entries.append(replace(e, shape=shape))
        return replace(
            self, inputs=tuple(entries), sizes=tuple(sorted(sizes.items())), verified=False
        )

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
            lines.append(
                f"{e.name} {e.dtype} {e.shape_text()} (declared {e.declared_text()}) "
                f"values {e.domain.text()}{mark}{why}"
            )
        return lines


# Saved and sent with the chosen sizes as a mapping ({"batch": 1}), which reads better in a
# workspace and a job's JSON than a list of pairs.
register_format(
    InputSpecification,
    lambda spec, data: {**data, "sizes": dict(spec.sizes)},
    lambda data: {**data, "sizes": sorted(dict(data.get("sizes", {})).items())},
)
