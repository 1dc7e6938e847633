"""Freeing a batch that shape constants hard-code, when an input's batch axis is made dynamic.

An exporter run at batch 1 often writes ``Reshape(x, [1, 64])``: the result of "make axis 0
dynamic" then declares a dynamic batch but fails at batch 3. Where the tensor reshaped provably
carries the batch on its first axis (onnx's shape inference says so, symbol and all), the
constant's leading value is rewritten: ``0`` for a Reshape (copy the input's first dim), ``1``
for an Expand (broadcast keeps it). The conversion's check then runs the result at batch 3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from edgestudio.core.model.light_inference import inferred_dims

MAX_PASSES = 16  # each pass frees the constants the previous one's symbols now reach


@dataclass(frozen=True)
class FreedConstant:
    """One shape constant rewritten: the node, and its values before and after."""

    node: str
    op: str
    before: list[int]
    after: list[int]

    def text(self) -> str:
        """``Reshape 'flatten' [1, 64] → [0, 64]``."""
        return f"{self.op} '{self.node}' {self.before} → {self.after}"


def _int_constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    found = {
        t.name: onnx.numpy_helper.to_array(t)
        for t in model.graph.initializer
        if t.data_type == onnx.TensorProto.INT64
        and len(t.dims) == 1
        and t.data_location != onnx.TensorProto.EXTERNAL
    }
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if (
                    attr.name == "value"
                    and attr.t.data_type == onnx.TensorProto.INT64
                    and len(attr.t.dims) == 1
                ):
                    found[node.output[0]] = onnx.numpy_helper.to_array(attr.t)
    return found


def free_batch_constants(
    model: onnx.ModelProto, batch_symbols: set[str], old_batch: int
) -> list[FreedConstant]:
    """Rewrite, in place, the Reshape/Expand shape constants whose first value is the old fixed
    batch ``old_batch`` and whose data input's first dim is one of ``batch_symbols``; returns
    what was rewritten. Nothing changes where shape inference fails or proves nothing."""
    freed: list[FreedConstant] = []
    done: set[int] = set()
    for _ in range(MAX_PASSES):
        dims = inferred_dims(model)
        consts = _int_constants(model)
        changed = False
        for index, node in enumerate(model.graph.node):
            if index in done or node.op_type not in ("Reshape", "Expand") or len(node.input) < 2:
                continue
            shape = consts.get(node.input[1])
            data = dims.get(node.input[0]) or []
            if (
                shape is None
                or not shape.size
                or int(shape[0]) != old_batch
                or not data
                or data[0] not in batch_symbols
            ):
                continue
            allowzero = any(a.name == "allowzero" and a.i for a in node.attribute)
            if node.op_type == "Reshape" and allowzero:
                continue  # 0 would mean a zero-sized dim there
            new = shape.copy()
            new[0] = 0 if node.op_type == "Reshape" else 1
            if node.op_type == "Expand" and old_batch == 1:
                continue  # broadcasting 1 already keeps the batch
            name = f"{node.input[1]}__batch_free_{index}"
            model.graph.initializer.append(onnx.numpy_helper.from_array(new, name))
            node.input[1] = name  # its own copy: other readers of the constant keep theirs
            freed.append(
                FreedConstant(
                    node.name or node.output[0], node.op_type, shape.tolist(), new.tolist()
                )
            )
            done.add(index)
            changed = True
        if not changed:
            break
    return freed
