"""How a model's graph uses each of its inputs, followed through pass-through ops: the tables an
index input reads and along which axis, a recurrent state, an RNN's sequence lengths, the
constants it is compared with, the data its values index — what input derivation sizes and
fills inputs from."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from edgestudio.core.model.light_inference import inferred_dims
from edgestudio.core.model.opsets import iter_nodes

# Ops through which an input keeps its meaning (an index stays an index after a Cast).
_PASSTHROUGH = frozenset(
    {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand", "Transpose"}
)
_RECURRENT = frozenset({"RNN", "GRU", "LSTM", "DynamicQuantizeLSTM"})
_COMPARE_OPS = frozenset({"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"})


@dataclass
class InputUsage:
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


def constants_of(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    """The model's stored tensors by name: initializers and Constant nodes' values."""
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


def resolve_index_dims(model: onnx.ModelProto, usages: dict[str, InputUsage]) -> None:
    """Turn each usage's index targets into the dims they index (see :class:`InputUsage`)."""
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


def input_usage(
    model: onnx.ModelProto,
    name: str,
    consumers: dict[str, list[onnx.NodeProto]],
    consts: dict[str, onnx.TensorProto],
    producers: dict[str, onnx.NodeProto] | None = None,
) -> InputUsage:
    """What the graph does with input ``name``, followed from it through pass-through ops
    (``consumers``, ``consts`` and ``producers``: the model's, computed once by the caller)."""
    usage = InputUsage()
    producers = producers if producers is not None else producers_of(model)
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


def producers_of(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    """The node that makes each tensor, subgraphs included."""
    return {out: node for node in iter_nodes(model.graph) for out in node.output}


def consumers_of(model: onnx.ModelProto) -> dict[str, list[onnx.NodeProto]]:
    """The nodes that read each tensor (each node once), subgraphs included."""
    found: dict[str, list[onnx.NodeProto]] = {}
    for node in iter_nodes(model.graph):
        for t in dict.fromkeys(node.input):
            if t:
                found.setdefault(t, []).append(node)
    return found
