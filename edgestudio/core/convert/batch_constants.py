"""Freeing a batch that shape constants hard-code, when an input's batch axis is made dynamic.

An exporter run at batch 1 often writes ``Reshape(x, [1, 64])``: the result of "make axis 0
dynamic" then declares a dynamic batch but fails at batch 3. Where the tensor reshaped provably
carries the batch on its first axis (onnx's shape inference says so, symbol and all), the
constant's leading value is rewritten: ``0`` for a Reshape (copy the input's first dim), ``1``
for an Expand (broadcast keeps it). The same holds for the two ways a Concat bakes the batch in:
a shape vector ``Concat([1], [-1], [64])`` that only a Reshape reads (its leading ``1`` becomes
``0``), and a tensor of batch 1 (a padding, a class token) joined to the batched data on another
axis, which is broadcast to the data's batch (``Expand`` to ``Shape(data)[0]``). The conversion's
check then runs the result at batch 3.
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
    before: list[int | str]
    after: list[int | str]

    def text(self) -> str:
        """``Reshape 'flatten' [1, 64] → [0, 64]``."""
        return f"{self.op} '{self.node}' {_listed(self.before)} → {_listed(self.after)}"


def _listed(values: list[int | str]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


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
        changed |= _free_concats(model, dims, consts, batch_symbols, old_batch, freed)
        if not changed:
            break
    return freed


def _free_concats(
    model: onnx.ModelProto,
    dims: dict[str, list[str | int | None]],
    consts: dict[str, np.ndarray],
    batch_symbols: set[str],
    old_batch: int,
    freed: list[FreedConstant],
) -> bool:
    """The Concat half of :func:`free_batch_constants` (see the module's docstring)."""
    graph = model.graph
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    changed = False
    for node in list(graph.node):
        if node.op_type != "Concat" or len(node.input) < 2:
            continue
        first = consts.get(node.input[0])
        shaped = readers.get(node.output[0], [])
        if (
            first is not None
            and first.size
            and int(first[0]) == old_batch
            and shaped
            and all(_reshapes_batch(r, node.output[0], dims, batch_symbols) for r in shaped)
        ):
            new = first.copy()
            new[0] = 0
            name = f"{node.input[0]}__batch_free_{node.name or node.output[0]}"
            graph.initializer.append(onnx.numpy_helper.from_array(new, name))
            node.input[0] = name
            freed.append(FreedConstant(_named(node), "Concat", first.tolist(), new.tolist()))
            changed = True
            continue
        changed |= _broadcast_joined(model, node, dims, batch_symbols, old_batch, freed)
    return changed


def _reshapes_batch(
    reader: onnx.NodeProto,
    shape: str,
    dims: dict[str, list[str | int | None]],
    batch_symbols: set[str],
) -> bool:
    """True when ``reader`` is a Reshape (without ``allowzero``) that takes ``shape`` as its
    shape and whose data carries a batch symbol first."""
    data = (dims.get(reader.input[0]) or []) if reader.input else []
    return (
        reader.op_type == "Reshape"
        and len(reader.input) > 1
        and reader.input[1] == shape
        and reader.input[0] != shape
        and not any(a.name == "allowzero" and a.i for a in reader.attribute)
        and bool(data)
        and data[0] in batch_symbols
    )


def _broadcast_joined(
    model: onnx.ModelProto,
    node: onnx.NodeProto,
    dims: dict[str, list[str | int | None]],
    batch_symbols: set[str],
    old_batch: int,
    freed: list[FreedConstant],
) -> bool:
    """A Concat on an axis other than the batch, of batched data and tensors of batch 1:
    those tensors are broadcast to the data's batch. Only a batch of 1 can be broadcast."""
    if old_batch != 1:
        return False
    shapes = [dims.get(name) or [] for name in node.input]
    rank = len(shapes[0])
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    batched = [
        name for name, d in zip(node.input, shapes, strict=True) if d and d[0] in batch_symbols
    ]
    if not rank or axis % rank == 0 or not batched:
        return False
    graph = model.graph
    changed = False
    for position, (name, d) in enumerate(zip(list(node.input), shapes, strict=True)):
        if len(d) != rank or d[0] != 1 or not all(isinstance(v, int) for v in d[1:]):
            continue
        stem = f"{name}__batch_broadcast_{node.name or node.output[0]}"
        tail: list[int | str] = [int(v) for v in d[1:] if isinstance(v, int)]
        rest = np.array(tail, np.int64)
        graph.initializer.extend(
            [
                onnx.numpy_helper.from_array(np.array([0], np.int64), f"{stem}_first"),
                onnx.numpy_helper.from_array(rest, f"{stem}_rest"),
            ]
        )
        # just before the Concat: what they read (the batched data) is made before it
        at = list(graph.node).index(node)
        for offset, added in enumerate(
            [
                onnx.helper.make_node("Shape", [batched[0]], [f"{stem}_of"], name=f"{stem}_shape"),
                onnx.helper.make_node(
                    "Gather",
                    [f"{stem}_of", f"{stem}_first"],
                    [f"{stem}_n"],
                    name=f"{stem}_n",
                    axis=0,
                ),
                onnx.helper.make_node(
                    "Concat",
                    [f"{stem}_n", f"{stem}_rest"],
                    [f"{stem}_to"],
                    name=f"{stem}_to",
                    axis=0,
                ),
                onnx.helper.make_node("Expand", [name, f"{stem}_to"], [stem], name=stem),
            ]
        ):
            graph.node.insert(at + offset, added)
        node.input[position] = stem
        freed.append(
            FreedConstant(
                _named(node),
                "Concat",
                [1, *tail],
                [str(dims[batched[0]][0]), *tail],
            )
        )
        changed = True
    return changed


def _named(node: onnx.NodeProto) -> str:
    return node.name or node.output[0]
