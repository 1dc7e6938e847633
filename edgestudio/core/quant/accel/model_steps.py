"""Stand-ins for onnxruntime's whole-model steps during quantization, with the same results.

Installed by :func:`edgestudio.core.quant.accel.accelerator.accelerated` beside the indexed helpers:

- :func:`save_and_reload_model_with_shape_infer`: ORT runs ONNX shape inference by writing the
  model to a temporary folder with its weights as external data, inferring shapes file to file
  and reading it all back (one file open per weight). Here the same shape inference runs in
  memory on the same view of the model (big weights marked external, their bytes left out) and
  the weights are put back as ORT's reload would put them.
- :func:`topological_sort`: ORT's sort, the same algorithm and order, without fetching the node
  list from the protobuf model again for every node it touches.

The identity tests compare the quantized models byte for byte with stock ORT's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

# onnx.save_model(save_as_external_data=True) moves a tensor's raw_data out of the model when
# sys.getsizeof(raw_data) reaches this (its size_threshold default).
EXTERNAL_THRESHOLD = 1024


def _initializer_tensors(graph: Any) -> Iterator[Any]:
    """The initializers of ``graph`` and of its subgraphs, in onnx's external-data order."""
    from onnx import AttributeProto

    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                yield from _initializer_tensors(attribute.g)
            elif attribute.type == AttributeProto.GRAPHS:
                for subgraph in attribute.graphs:
                    yield from _initializer_tensors(subgraph)


def _attribute_tensors(nodes: Any) -> Iterator[Any]:
    """The tensors held in the attributes of ``nodes`` and of their subgraphs' nodes."""
    from onnx import AttributeProto

    for node in nodes:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.type == AttributeProto.GRAPH:
                yield from _attribute_tensors(attribute.g.node)
            elif attribute.type == AttributeProto.GRAPHS:
                for subgraph in attribute.graphs:
                    yield from _attribute_tensors(subgraph.node)


def _any_external(model: Any) -> bool:
    """Whether any tensor of ``model`` (initializer or attribute, functions included) refers
    to external data."""
    tensors = [
        _initializer_tensors(model.graph),
        _attribute_tensors(model.graph.node),
        *(_attribute_tensors(f.node) for f in model.functions),
    ]
    return any(_uses_external_data(t) for group in tensors for t in group)


def _uses_external_data(tensor: Any) -> bool:
    from onnx import TensorProto

    return bool(tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL)


def save_and_reload_model_with_shape_infer(model: Any, stock: Callable[[Any], Any]) -> Any:
    """ORT's ``save_and_reload_model_with_shape_infer`` (``stock``), in memory: the same
    inferred model.

    What ORT's round trip does, step by step, and how it is kept:
    weights whose raw data reaches the external-data threshold are written to a side file and
    marked external, so shape inference sees them without their values (it then cannot read
    them as constant inputs) — here they are marked the same way, bytes left out, while the
    model is serialised for shape inference; reading the result back puts each weight's bytes
    into ``raw_data`` and sets its ``data_location`` to DEFAULT — done here on the same tensors.
    A model that already refers to external data takes ORT's own path."""
    import onnx
    from onnx import TensorProto
    from onnxruntime.quantization.quant_utils import add_infer_metadata

    if _any_external(model):
        return stock(model)
    moved = [
        t
        for t in _initializer_tensors(model.graph)
        if t.HasField("raw_data") and sys.getsizeof(t.raw_data) >= EXTERNAL_THRESHOLD
    ]
    # Each moved tensor's state, to restore the caller's model exactly (ORT works on a copy;
    # marking the original for the length of one serialisation avoids copying every weight).
    saved = [
        (
            t.raw_data,
            t.data_location if t.HasField("data_location") else None,
            [(e.key, e.value) for e in t.external_data],
        )
        for t in moved
    ]
    try:
        for offset, tensor in enumerate(moved):
            del tensor.external_data[:]
            tensor.data_location = TensorProto.EXTERNAL
            entry = tensor.external_data.add()
            entry.key, entry.value = "location", f"reload-{offset}.data"
            tensor.ClearField("raw_data")
        view = model.SerializeToString()
    finally:
        for tensor, (raw, location, external) in zip(moved, saved, strict=True):
            tensor.raw_data = raw
            if location is None:
                tensor.ClearField("data_location")
            else:
                tensor.data_location = location
            del tensor.external_data[:]
            for key, value in external:
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
    inferred = onnx.shape_inference.infer_shapes(view)
    marked = [t for t in _initializer_tensors(inferred.graph) if _uses_external_data(t)]
    if [t.name for t in marked] != [t.name for t in moved]:
        # A guard: shape inference adds value_info and leaves initializers as they are.
        raise RuntimeError("shape inference changed the model's weights")
    for tensor, (raw, _, _) in zip(marked, saved, strict=True):
        tensor.raw_data = raw
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
    add_infer_metadata(inferred)
    return inferred


def topological_sort(self: Any) -> None:
    """ORT's ``ONNXModel.topological_sort``: the same algorithm, so the same order (nodes
    without inputs first, then the consumers of graph inputs and initializers in sorted-name
    order, then breadth-first), with the node list fetched once instead of per node."""
    nodes = list(self.nodes())
    deps_count = [0] * len(nodes)
    deps_to_nodes: dict[str, list[int]] = {}
    sorted_nodes = []
    for node_idx, node in enumerate(nodes):
        inputs = [name for name in node.input if name]  # an empty name is a missing input
        deps_count[node_idx] = len(inputs)
        if not inputs:
            sorted_nodes.append(node)
            continue
        for input_name in inputs:
            deps_to_nodes.setdefault(input_name, []).append(node_idx)

    input_names = [init.name for init in self.initializer()]
    input_names += [graph_input.name for graph_input in self.model.graph.input]
    input_names.sort()
    previous = None
    for input_name in input_names:
        if input_name == previous:
            continue
        previous = input_name
        for node_idx in deps_to_nodes.get(input_name, ()):
            deps_count[node_idx] -= 1
            if deps_count[node_idx] == 0:
                sorted_nodes.append(nodes[node_idx])

    start = 0
    while start < len(sorted_nodes):
        for output in sorted_nodes[start].output:
            for node_idx in deps_to_nodes.get(output, ()):
                deps_count[node_idx] -= 1
                if deps_count[node_idx] == 0:
                    sorted_nodes.append(nodes[node_idx])
        start += 1

    assert len(sorted_nodes) == len(self.graph().node), "Graph is not a DAG"
    self.graph().ClearField("node")
    self.graph().node.extend(sorted_nodes)
