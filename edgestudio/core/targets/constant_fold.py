"""Folding what became constant once a model's input sizes are fixed, QDQ kept (runs in a
job worker).

A detector's anchor grid, an LSTM's zero state, a reshape's target: computed in the graph from
``Shape(input)``, they are constants once the sizes are fixed — but in a quantized model they
pass through QuantizeLinear/DequantizeLinear pairs, which onnxruntime's own constant folding
never folds (it keeps every DQ so that QDQ groups survive), so an accelerator gets a Range or
Expand whose inputs it cannot see and refuses everything after it ("Cannot get shape"). Here
every node whose value no longer depends on the inputs is computed once, by onnxruntime on the
CPU (the same kernels, so the values are the ones the session would compute), and replaced by
its value; a DequantizeLinear that feeds the rest of the graph is kept, its quantized input
becoming an initializer like any weight's, so the QDQ format the accelerator reads is intact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgestudio.core.model.graph_ir import NONDETERMINISTIC_OPS

if TYPE_CHECKING:
    import numpy as np
    import onnx


def _static_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Tensor name → its dims, for every tensor whose dims shape inference fixed."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # over 2 GB in memory, an operator onnx cannot infer: no shape known
        return {}
    shapes = {}
    graph = inferred.graph
    for value in [*graph.input, *graph.value_info, *graph.output]:
        tensor = value.type.tensor_type
        if tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            shapes[value.name] = [d.dim_value for d in tensor.shape.dim]
    return shapes


def _shape_value(node: onnx.NodeProto, dims: list[int]) -> np.ndarray:
    """What ``Shape`` computes for an input of ``dims`` (its start/end attributes included)."""
    import numpy as np
    import onnx

    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    start, end = attrs.get("start", 0), attrs.get("end", len(dims))
    return np.array(dims[start:end], dtype=np.int64)


def _reads(node: onnx.NodeProto) -> set[str]:
    """The names ``node`` reads: its inputs, and what the nodes of its subgraphs (an If's
    branches, a Loop's body) read, outer-scope values among them."""
    names = set(node.input)
    for attribute in node.attribute:
        for graph in [attribute.g, *attribute.graphs]:
            for inner in graph.node:
                names |= _reads(inner)
    return names


def _evaluate(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    known: dict[str, np.ndarray],
    wanted: list[str],
) -> dict[str, np.ndarray]:
    """The values of ``wanted``, computed by onnxruntime from ``nodes`` whose inputs are all
    initializers of ``model`` or in ``known``."""
    import onnx
    import onnxruntime as ort

    produced = {o for n in nodes for o in n.output}
    used = {i for n in nodes for i in n.input} - produced
    initializers = [i for i in model.graph.initializer if i.name in used and i.name not in known]
    initializers += [
        onnx.numpy_helper.from_array(v, name) for name, v in known.items() if name in used
    ]
    graph = onnx.helper.make_graph(
        nodes,
        "constants",
        [],
        [onnx.ValueInfoProto(name=name) for name in wanted],
        initializers,
    )
    sub = onnx.helper.make_model(graph, opset_imports=model.opset_import)
    sub.ir_version = model.ir_version
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(
        sub.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return dict(zip(wanted, session.run(wanted, {}), strict=True))


def fold_constants(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """Replace in ``model`` every node whose value is fixed by its (now static) input sizes
    with that value, DequantizeLinear nodes at the boundary kept; the nodes folded, each its
    name (``OpType_index`` when it has none) and operator (none, and ``model`` unchanged, when
    nothing is constant or the values cannot be computed)."""
    import onnx

    graph = model.graph
    shapes = _static_shapes(model)
    constant = {i.name for i in graph.initializer} | {""}
    shape_of: dict[str, np.ndarray] = {}  # Shape outputs, computed here from the fixed dims
    folded: list[int] = []  # indices of the nodes whose value is constant
    for index, node in enumerate(graph.node):
        has_body = any(a.g.node or a.graphs for a in node.attribute)  # an If, a Loop: kept
        if node.op_type in NONDETERMINISTIC_OPS or has_body:
            continue
        if node.op_type == "Shape" and node.input[0] in shapes:
            shape_of[node.output[0]] = _shape_value(node, shapes[node.input[0]])
        elif not all(i in constant for i in node.input):
            continue
        folded.append(index)
        constant.update(node.output)
    folded_set = set(folded)
    outputs = {o.name for o in graph.output}
    read = outputs | {i for k, n in enumerate(graph.node) if k not in folded_set for i in _reads(n)}
    # A DQ the rest of the graph reads stays (a weight's, or the last of a constant chain):
    # its quantized input becomes an initializer, as a weight's is.
    boundary = {
        k
        for k in folded
        if graph.node[k].op_type == "DequantizeLinear" and graph.node[k].output[0] in read
    }
    read |= {i for k in boundary for i in graph.node[k].input}
    computed = [
        graph.node[k]
        for k in folded
        if k not in boundary and graph.node[k].output[0] not in shape_of
    ]
    wanted = sorted({o for n in computed for o in n.output if o in read})
    values = {k: v for k, v in shape_of.items() if k in read}
    if not wanted and not values:
        return []
    try:
        values.update(_evaluate(model, computed, shape_of, wanted) if wanted else {})
    except Exception:  # a kernel onnxruntime cannot run on its own: the model is left as it is
        return []
    initial = {i.name for i in graph.initializer}
    kept = [n for k, n in enumerate(graph.node) if k not in folded_set or k in boundary]
    removed = [
        (n.name or f"{n.op_type}_{k}", n.op_type)
        for k, n in enumerate(graph.node)
        if k in folded_set and k not in boundary
    ]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(
        onnx.numpy_helper.from_array(v, name) for name, v in values.items() if name not in initial
    )
    still_read = outputs | {i for n in graph.node for i in _reads(n)}
    unread = [i for i in graph.initializer if i.name not in still_read]
    for init in unread:
        graph.initializer.remove(init)
    return removed
