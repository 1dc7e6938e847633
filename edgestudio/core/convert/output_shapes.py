"""Declared output shapes against the shapes a model really produces (pure onnx).

Exporters sometimes declare an output wrongly (an OCR model declares ``[1, seqlen]`` and
produces ``[28, 1, 8210]``). onnxruntime ignores the declaration, so the model runs, but
onnx's version converter, shape inference and checker trust it and fail somewhere deep inside
(``Reshape_101 … rank (3) vs (2)``). Saying so up front, naming it in the error, and offering to
declare what the model produces turns that into something a user can act on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import onnx


@dataclass(frozen=True)
class ShapeMismatch:
    """One output whose declaration does not fit what the model produces."""

    output: str
    declared: tuple[int | str | None, ...]
    produced: tuple[int, ...]

    def text(self) -> str:
        """``'387' declares [1, seqlen] but the model produces [28, 1, 8210]``."""
        declared = ", ".join("?" if d is None else str(d) for d in self.declared)
        produced = ", ".join(map(str, self.produced))
        return f"'{self.output}' declares [{declared}] but the model produces [{produced}]"


def _declared(value: onnx.ValueInfoProto) -> tuple[int | str | None, ...] | None:
    tensor = value.type.tensor_type
    if not value.type.HasField("tensor_type") or not tensor.HasField("shape"):
        return None  # nothing declared: nothing to contradict
    return tuple(
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim
    )


def output_shape_mismatches(
    model: onnx.ModelProto, produced: Mapping[str, Sequence[int]]
) -> list[ShapeMismatch]:
    """Outputs whose declared rank, or a fixed declared dim, differs from what was produced."""
    found = []
    for value in model.graph.output:
        if value.name not in produced:
            continue
        declared = _declared(value)
        shape = tuple(int(d) for d in produced[value.name])
        if declared is None:
            continue
        if len(declared) != len(shape) or any(
            isinstance(d, int) and d > 0 and d != n for d, n in zip(declared, shape, strict=True)
        ):
            found.append(ShapeMismatch(value.name, declared, shape))
    return found


def declare_produced_shapes(model: onnx.ModelProto, mismatches: Sequence[ShapeMismatch]) -> None:
    """Re-declare each mismatched output with the rank the model produces: a dim keeps the
    declared value where that still fits, else becomes symbolic (``NAME_dimK``), since a size
    seen on one input need not hold on another."""
    by_name = {m.output: m for m in mismatches}
    for value in model.graph.output:
        mismatch = by_name.get(value.name)
        if mismatch is None:
            continue
        same_rank = len(mismatch.declared) == len(mismatch.produced)
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for k, size in enumerate(mismatch.produced):
            dim = dims.add()
            old = mismatch.declared[k] if same_rank else None
            if isinstance(old, str) and old:
                dim.dim_param = old
            elif isinstance(old, int) and old == size:
                dim.dim_value = size
            else:
                dim.dim_param = f"{value.name}_dim{k}"
