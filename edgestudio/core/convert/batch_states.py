"""Recurrent state inputs and outputs that carry the batch, made dynamic with it.

A recurrent network exported at batch 1 with its state as graph inputs (``h0[1, 1, 64]`` into
an LSTM's ``initial_h``) declares that state's batch fixed: once the data's batch is made
dynamic, onnxruntime refuses any other batch ("Input initial_h must have shape …"). The state's
batch axis is the one the operator defines (``[directions, batch, hidden]``, or ``[batch,
directions, hidden]`` with ``layout=1``), so it is made dynamic with the same symbol as the
data's, and so are the final states (``Y_h``, ``Y_c``) the graph returns.
"""

from __future__ import annotations

import onnx

from edgestudio.core.convert.conversion_plan import io_dims
from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.model.light_inference import inferred_dims

# input indices of the initial states and output indices of the final states, per operator
_STATE_INPUTS = {"LSTM": (5, 6), "GRU": (5,), "RNN": (5,)}
_STATE_OUTPUTS = {"LSTM": (1, 2), "GRU": (1,), "RNN": (1,)}
_PASS_THROUGH = ("Identity", "Cast")  # what an exporter puts between a state and the graph


def state_batch_changes(model: onnx.ModelProto, old_sizes: dict[str, int]) -> list[DimChange]:
    """The changes that give the recurrent states of ``model`` the batch symbol of their data.

    ``old_sizes``: each symbol just made dynamic → the fixed size it replaced. A state changes
    when its recurrent node's data carries such a symbol on its batch axis and the state, a
    graph input or output (directly or through Identity/Cast), declares that old size there.
    """
    graph = model.graph
    dims = inferred_dims(model)
    declared = io_dims(model)
    producers = {o: n for n in graph.node for o in n.output}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    changes: dict[tuple[str, int], DimChange] = {}
    for node in graph.node:
        if node.op_type not in _STATE_INPUTS:
            continue
        layout = next((a.i for a in node.attribute if a.name == "layout"), 0)
        data_axis, state_axis = (1, 1) if layout == 0 else (0, 0)
        data = dims.get(node.input[0]) or []
        symbol = data[data_axis] if len(data) > data_axis else None
        if not isinstance(symbol, str) or symbol not in old_sizes:
            continue
        ends = [_source(node.input[i], producers) for i in _STATE_INPUTS[node.op_type]]
        ends += [
            end
            for i in _STATE_OUTPUTS[node.op_type]
            for end in _sinks(node.output[i] if i < len(node.output) else "", readers, graph)
        ]
        for name in ends:
            shape = declared.get(name) or []
            if len(shape) > state_axis and shape[state_axis] == old_sizes[symbol]:
                changes[(name, state_axis)] = DimChange(name, state_axis, symbol)
    return list(changes.values())


def _source(name: str, producers: dict[str, onnx.NodeProto]) -> str:
    """Where ``name`` comes from, back through pass-through nodes."""
    while name in producers and producers[name].op_type in _PASS_THROUGH:
        name = producers[name].input[0]
    return name


def _sinks(
    name: str, readers: dict[str, list[onnx.NodeProto]], graph: onnx.GraphProto
) -> list[str]:
    """The graph outputs ``name`` becomes, forward through pass-through nodes."""
    if not name:
        return []
    outputs = {o.name for o in graph.output}
    found, stack = [], [name]
    while stack:
        current = stack.pop()
        if current in outputs:
            found.append(current)
        stack.extend(n.output[0] for n in readers.get(current, []) if n.op_type in _PASS_THROUGH)
    return found
