"""What each node costs at given input sizes: MACs, FLOPs, parameters, activation memory.

Shapes come from onnx's shape inference on a copy of the graph whose inputs carry the concrete
sizes (big weights declared, not stored: cheap at any model size). Counting conventions, the
ones onnx-tool, fvcore and ptflops share for the compute ops:

- Conv: one MAC per output element per input channel of its group per kernel tap (dilation
  changes where taps land, not how many); ConvTranspose: per *input* element, per output
  channel of its group per tap. MatMul (batched, broadcast) and Gemm: output elements × K.
- LSTM / GRU / RNN: per time step and direction, gates × (input size + hidden size) × hidden
  size per batch row (4, 3, 1 gates), times the steps.
- FLOPs: 2 per MAC, plus one per output element of elementwise ops and biases, a few per
  element of normalisations and softmax; pooling counts its window's reads.
- Parameters: the stored tensors a node reads — initializers and Constant nodes' values —
  each counted once, at its first reader, in their stored type: an int8 weight counts one byte
  per value.
- Peak activation memory: the graph's nodes run in order, every tensor alive from the node that
  makes it to its last reader (graph inputs from the start, outputs to the end).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.model.cost_recipe import CostTotal, ModelCost, NodeCost
from edgestudio.core.model.light_inference import declared_weights
from edgestudio.core.model.model_files import nested_graphs

# FLOPs per output element of ops that are not multiply-accumulates.
_PER_ELEMENT = {
    "Softmax": 5,
    "LogSoftmax": 5,
    "LayerNormalization": 8,
    "BatchNormalization": 2,
    "InstanceNormalization": 8,
    "Erf": 1,
    "Gelu": 8,
    "Sigmoid": 4,
    "Tanh": 4,
    "HardSigmoid": 2,
    "HardSwish": 3,
}
_ELEMENTWISE = frozenset(
    {
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Relu",
        "LeakyRelu",
        "Clip",
        "Pow",
        "Sqrt",
        "Exp",
        "Log",
        "Abs",
        "Neg",
        "Max",
        "Min",
        "Where",
        "Elu",
        "Selu",
        "PRelu",
        "Reciprocal",
        "Floor",
        "Ceil",
        "Round",
        "Sum",
        "Mean",
        "Equal",
        "Greater",
        "Less",
        "Not",
        "And",
        "Or",
    }
)
_POOLS = frozenset({"MaxPool", "AveragePool", "LpPool"})
_GLOBAL_POOLS = frozenset(
    {
        "GlobalAveragePool",
        "GlobalMaxPool",
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "ReduceL2",
    }
)
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _prod(dims: list[int] | tuple[int, ...]) -> int:
    return int(np.prod(dims, dtype=np.int64)) if dims else 1


def _itemsize(elem_type: int) -> int:
    try:
        return int(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except (KeyError, TypeError, ValueError):
        return 4  # strings, or a type numpy lacks: counted as 4 bytes


def _attr_ints(node: onnx.NodeProto, name: str) -> list[int]:
    return next((list(a.ints) for a in node.attribute if a.name == name), [])


def _attr_int(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


Shapes = dict[str, list[int]]
Types = dict[str, int]


def inferred_shapes(model: onnx.ModelProto, sizes: Mapping[str, list[int]]) -> tuple[Shapes, Types]:
    """Every tensor's concrete dims (only those fully known) and element type, with the graph
    inputs set to ``sizes``, as onnx's shape inference finds them."""
    light = declared_weights(model)
    for value in light.graph.input:
        if value.name in sizes:
            dims = value.type.tensor_type.shape.dim
            del dims[:]
            for n in sizes[value.name]:
                dims.add().dim_value = int(n)
    try:
        inferred = onnx.shape_inference.infer_shapes(light, data_prop=True)
    except Exception:  # onnx raises several classes; the costs it cannot tell stay unknown
        inferred = light
    shapes: dict[str, list[int]] = {}
    types: dict[str, int] = {}
    # the main graph last: a name a body reuses keeps the main graph's shape
    for graph in [*nested_graphs(inferred.graph), inferred.graph]:
        for value in (*graph.input, *graph.value_info, *graph.output):
            tensor = value.type.tensor_type
            types[value.name] = tensor.elem_type
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
            if tensor.HasField("shape") and all(d >= 0 for d in dims):
                shapes[value.name] = dims
        for init in graph.initializer:
            shapes[init.name] = [int(d) for d in init.dims]
            types[init.name] = init.data_type
    for init in model.graph.initializer:
        shapes[init.name] = [int(d) for d in init.dims]
        types[init.name] = init.data_type
    return shapes, types


def _subgraphs_of(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graphs ``node`` holds (a body, both branches) and every graph nested in them."""
    graphs = [
        sub
        for attribute in node.attribute
        for sub in (*([attribute.g] if attribute.HasField("g") else []), *attribute.graphs)
    ]
    return [g for sub in graphs for g in (sub, *nested_graphs(sub))]


_BODY_OPS = frozenset({"Loop", "Scan", "If"})
_COMPUTE_OPS = frozenset(
    {
        "Conv",
        "ConvInteger",
        "QLinearConv",
        "ConvTranspose",
        "MatMul",
        "MatMulInteger",
        "QLinearMatMul",
        "Gemm",
        "LSTM",
        "GRU",
        "RNN",
    }
)


def _graph_work(
    graph: onnx.GraphProto, shapes: Shapes, trips: Mapping[str, int]
) -> tuple[int, int, bool]:
    """(MACs, FLOPs, every compute node's shapes known) of one body, its own bodies counted."""
    macs = flops = 0
    known = True
    for node in graph.node:
        if node.op_type in _BODY_OPS:
            inner = _body_work(node, shapes, trips, graph)
            macs, flops, known = macs + inner[0], flops + inner[1], known and inner[3]
            continue
        work = _compute(node, shapes)
        if work is None:
            known = known and node.op_type not in _COMPUTE_OPS
            continue
        macs, flops = macs + work[0], flops + work[1]
    return macs, flops, known


def _constant_int(name: str, graph: onnx.GraphProto) -> int | None:
    """The value of a scalar integer initializer or Constant node named ``name``."""
    for init in graph.initializer:
        if init.name == name:
            return int(onnx.numpy_helper.to_array(init).reshape(-1)[0])
    for node in graph.node:
        if node.op_type == "Constant" and node.output and node.output[0] == name:
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            if value is not None:
                return int(onnx.numpy_helper.to_array(value).reshape(-1)[0])
    return None


def _body_work(
    node: onnx.NodeProto, shapes: Shapes, trips: Mapping[str, int], graph: onnx.GraphProto
) -> tuple[int, int, str, bool]:
    """(MACs, FLOPs, how it was counted, counted) of a Loop's or Scan's body × its iterations,
    or an If's larger branch."""
    bodies = {a.name: a.g for a in node.attribute if a.HasField("g")}
    if node.op_type == "If":
        branches = [_graph_work(g, shapes, trips) for g in bodies.values()]
        macs, flops, known = max(branches, key=lambda b: b[0], default=(0, 0, True))
        return macs, flops, "the larger branch", known
    body = bodies.get("body")
    if body is None:
        return 0, 0, "", True
    macs, flops, known = _graph_work(body, shapes, trips)
    if not known:
        return macs, flops, "body not counted: its shapes are not known here", False
    if node.op_type == "Scan":
        states = _attr_int(node, "num_scan_inputs", 0)
        first = node.input[len(node.input) - states] if states else ""
        axes = _attr_ints(node, "scan_input_axes") or [0]
        steps = shapes.get(first, [])[axes[0]] if len(shapes.get(first, [])) > axes[0] else None
    else:  # Loop: its trip count, when fixed in the graph or read from one run
        count = node.input[0] if node.input else ""
        steps = _constant_int(count, graph) if count else None
        steps = steps if steps is not None else trips.get(count)
    if steps is None:
        return macs, flops, "body per iteration: the trip count is not fixed", True
    return macs * steps, flops * steps, f"body × {steps} iterations", True


def _compute(node: onnx.NodeProto, shapes: Mapping[str, list[int]]) -> tuple[int, int] | None:
    """(MACs, FLOPs) of one node, or None when a shape it needs is unknown."""
    op = node.op_type
    ins = [shapes.get(t) if t else None for t in node.input]
    out = shapes.get(node.output[0]) if node.output else None
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        w_index = 3 if op == "QLinearConv" else 1
        weight = ins[w_index] if len(ins) > w_index else None
        if out is None or weight is None:
            return None
        macs = _prod(out) * _prod(weight[1:])  # per output: C/group × kernel taps
        bias = len(node.input) > (8 if op == "QLinearConv" else 2)
        return macs, 2 * macs + (_prod(out) if bias else 0)
    if op == "ConvTranspose":
        data, weight = ins[0], ins[1] if len(ins) > 1 else None
        if data is None or weight is None or out is None:
            return None
        macs = _prod(data) * _prod(weight[1:])  # per input: M/group × kernel taps
        return macs, 2 * macs + (_prod(out) if len(node.input) > 2 else 0)
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
        a = ins[0]
        if a is None or out is None:
            return None
        k = a[-1] if a else 1
        macs = _prod(out) * k
        return macs, 2 * macs
    if op == "Gemm":
        a = ins[0]
        if a is None or out is None or len(a) != 2:
            return None
        k = a[0] if _attr_int(node, "transA", 0) else a[1]
        macs = _prod(out) * k
        return macs, 2 * macs + (_prod(out) if len(node.input) > 2 else 0)
    if op in _GATES:
        data, weight = ins[0], ins[1] if len(ins) > 1 else None
        if data is None or weight is None:
            return None
        layout = _attr_int(node, "layout", 0)
        steps, batch = (data[1], data[0]) if layout else (data[0], data[1])
        directions, gates_hidden, input_size = weight
        hidden = gates_hidden // _GATES[op]
        macs = steps * batch * directions * gates_hidden * (input_size + hidden)
        return macs, 2 * macs
    if out is None:
        return None
    if op in _POOLS:
        window = _prod(_attr_ints(node, "kernel_shape"))
        return 0, _prod(out) * window
    if op in _GLOBAL_POOLS:
        return 0, _prod(ins[0]) if ins and ins[0] is not None else _prod(out)
    if op in _PER_ELEMENT:
        return 0, _PER_ELEMENT[op] * _prod(out)
    if op in _ELEMENTWISE:
        return 0, _prod(out)
    return 0, 0  # data movement (Reshape, Transpose, Gather, Concat…): no arithmetic


def model_cost(
    model: onnx.ModelProto,
    sizes: Mapping[str, list[int]],
    measured: tuple[Shapes, Types] | None = None,
    trips: Mapping[str, int] | None = None,
) -> ModelCost:
    """Every node's cost and the totals with the graph inputs at ``sizes``; a Loop or Scan
    counts its body × its iterations (per iteration, said, where the count is not fixed), an If
    its larger branch. ``measured``: shapes and types of tensors that inference left unknown,
    from a run (:func:`measured_shapes`); ``trips``: Loop trip counts read from a run."""
    shapes, types = inferred_shapes(model, sizes)
    if measured is not None:
        shapes.update(measured[0])
        types.update(measured[1])
    stored = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:  # weights exported as Constant nodes count as parameters
        if node.op_type == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            if value is not None:
                stored.setdefault(node.output[0], value)
    counted: set[str] = set()
    nodes: list[NodeCost] = []
    for index, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{index}"
        body, body_known = "", True
        reads = list(node.input)
        if node.op_type in _BODY_OPS:
            body_macs, body_flops, body, body_known = _body_work(
                node, shapes, trips or {}, model.graph
            )
            work: tuple[int, int] | None = (body_macs, body_flops)
            # a body reads the enclosing graph's weights by name (an LSTM's, unrolled)
            reads += [t for g in _subgraphs_of(node) for n in g.node for t in n.input]
        else:
            work = _compute(node, shapes)
        params = param_bytes = 0
        for t in reads:
            if t in stored and t not in counted:
                counted.add(t)
                count = _prod(list(stored[t].dims))
                params += count
                param_bytes += count * _itemsize(stored[t].data_type)
        outputs = [o for o in node.output if o]
        known = body_known and work is not None and all(o in shapes for o in outputs)
        out_bytes = sum(
            _prod(shapes[o]) * _itemsize(types.get(o, 1)) for o in outputs if o in shapes
        )
        macs, flops = work if work is not None else (0, 0)
        nodes.append(
            NodeCost(name, node.op_type, macs, flops, params, param_bytes, out_bytes, known, body)
        )
    peak = peak_activation_bytes(model, shapes, types)
    total = CostTotal(
        sum(n.macs for n in nodes),
        sum(n.flops for n in nodes),
        sum(n.params for n in nodes),
        sum(n.param_bytes for n in nodes),
        peak,
    )
    return ModelCost(nodes, total, {k: list(v) for k, v in sizes.items()})


def peak_activation_bytes(
    model: onnx.ModelProto, shapes: Mapping[str, list[int]], types: Mapping[str, int]
) -> int:
    """The most activation bytes alive at once when the nodes run in graph order (a tensor
    lives from the node that makes it to its last reader; graph outputs to the end)."""
    stored = {t.name for t in model.graph.initializer}

    def size(tensor: str) -> int:
        return _prod(shapes[tensor]) * _itemsize(types.get(tensor, 1)) if tensor in shapes else 0

    last_read: dict[str, int] = {}
    for index, node in enumerate(model.graph.node):
        for t in node.input:
            if t and t not in stored:
                last_read[t] = index
    outputs = {o.name for o in model.graph.output}
    live = {v.name for v in model.graph.input if v.name not in stored}
    current = sum(size(t) for t in live)
    peak = current
    for index, node in enumerate(model.graph.node):
        for o in node.output:
            if o and o not in live:
                live.add(o)
                current += size(o)
        peak = max(peak, current)
        for t in set(node.input) | set(node.output):
            if t in live and t not in outputs and last_read.get(t, -1) <= index:
                live.discard(t)
                current -= size(t)
    return peak


def unknown_tensors(model: onnx.ModelProto, shapes: Shapes) -> list[str]:
    """The main graph's node outputs whose shape is not known."""
    return [o for n in model.graph.node for o in n.output if o and o not in shapes]


MEASURE_LIMIT = 1_500_000_000  # bytes of model above which unknown shapes stay unknown


def measured_shapes(
    path: Path, tensors: list[str], feeds: dict[str, np.ndarray]
) -> tuple[Shapes, Types]:
    """The shapes and types ``tensors`` take when onnxruntime runs the model on ``feeds`` (a
    copy with them as outputs; what onnx's inference cannot follow, such as a Reshape whose
    target is computed). Empty for a model too big to copy in memory."""
    from edgestudio.core.model.model_files import load_full_model
    from edgestudio.core.model.sessions import cpu_session

    if not tensors or path.stat().st_size > MEASURE_LIMIT:
        return {}, {}
    model = load_full_model(path)
    if model.ByteSize() > MEASURE_LIMIT:
        return {}, {}
    present = {o.name for o in model.graph.output}
    for name in tensors:
        if name not in present:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    session = cpu_session(model.SerializeToString(), optimized=False)
    shapes: Shapes = {}
    types: Types = {}
    for start in range(0, len(tensors), 256):  # in groups: bounded memory on long graphs
        names = tensors[start : start + 256]
        for name, value in zip(names, session.run(names, feeds), strict=True):
            array = np.asarray(value)
            shapes[name] = list(array.shape)
            if array.dtype != object:
                types[name] = int(onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
    return shapes, types


def measured_trips(path: Path, counts: list[str], feeds: dict[str, np.ndarray]) -> dict[str, int]:
    """The values of Loop trip-count tensors ``counts`` when onnxruntime runs the model on
    ``feeds`` (a sequence length computed from an input's shape); empty for a model too big
    to copy in memory, or one that does not run so."""
    from edgestudio.core.model.model_files import load_full_model
    from edgestudio.core.model.sessions import cpu_session

    if path.stat().st_size > MEASURE_LIMIT:
        return {}
    model = load_full_model(path)
    present = {o.name for o in model.graph.output}
    for name in counts:
        if name not in present:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    try:
        session = cpu_session(model.SerializeToString(), optimized=False)
        values = session.run(counts, feeds)
    except Exception:  # a count that cannot be read stays "per iteration", said
        return {}
    return {name: int(np.asarray(v).reshape(-1)[0]) for name, v in zip(counts, values, strict=True)}


def computed_trip_counts(model: onnx.ModelProto) -> list[str]:
    """The tensors that give the main graph's Loops a trip count the graph does not fix (a
    sequence length read from an input's shape): measured by running the model."""
    return [
        n.input[0]
        for n in model.graph.node
        if n.op_type == "Loop"
        and n.input
        and n.input[0]
        and _constant_int(n.input[0], model.graph) is None
    ]
