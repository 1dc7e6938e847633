"""Tiny purpose-named models built in code for the tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model: onnx.ModelProto, path: Path) -> Path:
    """Write ``model`` to ``path`` and return the path."""
    onnx.save(model, str(path))
    return path


def conv_relu_gemm(opset: int = 17) -> onnx.ModelProto:
    """x[batch,3,8,8] -> Conv(4,3x3) -> Relu -> Flatten -> Gemm(10) -> y[batch,10].

    Parameters: conv 4*3*3*3 + 4 = 112, gemm 10*256 + 10 = 2570 -> 2682 float32 (10,728 bytes).
    """
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv.w")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "conv.b")
    gw = numpy_helper.from_array(rng.standard_normal((10, 256)).astype(np.float32), "fc.w")
    gb = numpy_helper.from_array(np.zeros(10, np.float32), "fc.b")
    nodes = [
        helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_relu_gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [w, b, gw, gb],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name="tests",
        producer_version="1.0",
    )
    model.ir_version = 8
    helper.set_model_props(model, {"author": "tests", "task": "toy"})
    return model


def relu_only(opset: int = 17, domain: str = "") -> onnx.ModelProto:
    """x[2] -> Relu -> y[2], no weights; ``domain`` puts the op in another domain."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], domain=domain)],
        "relu_only",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def with_if_subgraph() -> onnx.ModelProto:
    """cond -> If(then: Identity(a), else: Neg(a)) -> y: two nodes inside subgraphs."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])
    then_g = helper.make_graph([helper.make_node("Identity", ["a"], ["o"])], "then", [], [out])
    else_g = helper.make_graph([helper.make_node("Neg", ["a"], ["o"])], "else", [], [out])
    node = helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph(
        [node],
        "with_if",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), a],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def external_weights(folder: Path, name: str = "ext.onnx") -> Path:
    """Save :func:`conv_relu_gemm` with every weight in ``weights.bin`` next to it."""
    model = conv_relu_gemm()
    path = folder / name
    onnx.save(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    return path


def fixed_batch_reshape() -> onnx.ModelProto:
    """x[1,3,4] -> Reshape(shape=[1,12] baked in) -> Relu -> y[1,12]."""
    shape = numpy_helper.from_array(np.array([1, 12], np.int64), "shape")
    graph = helper.make_graph(
        [
            helper.make_node("Reshape", ["x", "shape"], ["r"], name="flatten_reshape"),
            helper.make_node("Relu", ["r"], ["y"], name="relu"),
        ],
        "fixed_batch_reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12])],
        [shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def fixed_batch_chain() -> onnx.ModelProto:
    """x[1,3,4] → Reshape [1,12] → Relu → Reshape [1,3,4] (a Constant node) → Sigmoid → y, as
    an exporter run at batch 1 writes it: a dynamic batch needs both constants freed, the
    second only once the first passes the batch on."""
    flat = numpy_helper.from_array(np.array([1, 12], np.int64), "flat_shape")
    nodes = [
        helper.make_node("Reshape", ["x", "flat_shape"], ["f"], name="flatten"),
        helper.make_node("Relu", ["f"], ["r"], name="relu"),
        helper.make_node(
            "Constant",
            [],
            ["unflat_shape"],
            name="unflat_const",
            value=numpy_helper.from_array(np.array([1, 3, 4], np.int64)),
        ),
        helper.make_node("Reshape", ["r", "unflat_shape"], ["u"], name="unflatten"),
        helper.make_node("Sigmoid", ["u"], ["y"], name="sigmoid"),
    ]
    graph = helper.make_graph(
        nodes,
        "fixed_batch_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])],
        [flat],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def fixed_batch_concats() -> onnx.ModelProto:
    """x[1,4,8] → Concat(x, pad[1,4,2] on the last axis) → Relu → Reshape(Concat([1], [40]))
    → y[1,40], as an STFT front end exported at batch 1 writes it: the padding and the shape
    vector both hold the old batch."""
    rng = np.random.default_rng(13)
    inits = [
        numpy_helper.from_array(rng.standard_normal((1, 4, 2)).astype(np.float32), "pad"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([40], np.int64), "forty"),
    ]
    nodes = [
        helper.make_node("Concat", ["x", "pad"], ["padded"], name="pad_concat", axis=2),
        helper.make_node("Relu", ["padded"], ["r"], name="relu"),
        helper.make_node("Concat", ["one", "forty"], ["flat"], name="shape_concat", axis=0),
        helper.make_node("Reshape", ["r", "flat"], ["y"], name="flatten"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40])],
        inits,
        "fixed_batch_concats",
    )


def lstm_state_at_batch_one(op: str = "LSTM") -> onnx.ModelProto:
    """x[seq 5, batch 1, 3] and the state (h0, and c0 for an LSTM)[1, 1, 4] as graph inputs →
    LSTM or GRU → y (every step), h (through an Identity), c: a recurrent network exported at
    batch 1 with its state outside."""
    rng = np.random.default_rng(14)
    hidden, size, gates = 4, 3, 4 if op == "LSTM" else 3
    inits = [
        numpy_helper.from_array(
            rng.standard_normal((1, gates * hidden, size)).astype(np.float32), "W"
        ),
        numpy_helper.from_array(
            rng.standard_normal((1, gates * hidden, hidden)).astype(np.float32), "R"
        ),
    ]
    lstm = op == "LSTM"
    states = ["h0", "c0"] if lstm else ["h0"]
    finals = ["h", "c"] if lstm else ["h"]
    nodes = [
        helper.make_node(
            op,
            ["x", "W", "R", "", "", *states],
            ["y", "h_out", *finals[1:]],
            name=op.lower(),
            hidden_size=hidden,
        ),
        helper.make_node("Identity", ["h_out"], ["h"], name="h_identity"),
    ]
    state = [1, 1, hidden]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, size]),
            *(helper.make_tensor_value_info(s, TensorProto.FLOAT, state) for s in states),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 1, 1, hidden]),
            *(helper.make_tensor_value_info(f, TensorProto.FLOAT, state) for f in finals),
        ],
        inits,
        f"{op.lower()}_state_at_batch_one",
    )


def tf2onnx_nhwc_unet() -> onnx.ModelProto:
    """An encoder–decoder as tf2onnx writes it: x[unk__1, unk__2, unk__3, 3] (every unknown
    dim named ``unk__N``, channels last) → Transpose to NCHW → Conv stride 2 → Relu → Conv
    stride 2 → Resize ×2 → Concat the first stage's features → Resize ×2 → Conv → Transpose back
    → y. It runs only where both sides are multiples of 4."""
    rng = np.random.default_rng(15)
    inits = [
        numpy_helper.from_array((0.3 * rng.standard_normal((8, 3, 3, 3))).astype(np.float32), "W1"),
        numpy_helper.from_array((0.3 * rng.standard_normal((8, 8, 3, 3))).astype(np.float32), "W2"),
        numpy_helper.from_array(
            (0.3 * rng.standard_normal((2, 16, 3, 3))).astype(np.float32), "W3"
        ),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "twice"),
    ]
    conv = {"pads": [1, 1, 1, 1]}
    nodes = [
        helper.make_node("Transpose", ["x"], ["xc"], name="to_nchw", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["xc", "W1"], ["c1"], name="down1", strides=[2, 2], **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "W2"], ["c2"], name="down2", strides=[2, 2], **conv),
        helper.make_node("Resize", ["c2", "", "twice"], ["u1"], name="up1", mode="nearest"),
        helper.make_node("Concat", ["u1", "r1"], ["skip"], name="skip", axis=1),
        helper.make_node("Resize", ["skip", "", "twice"], ["u2"], name="up2", mode="nearest"),
        helper.make_node("Conv", ["u2", "W3"], ["c3"], name="head", **conv),
        helper.make_node("Transpose", ["c3"], ["y"], name="to_nhwc", perm=[0, 2, 3, 1]),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["unk__1", "unk__2", "unk__3", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["unk__4", "unk__5", "unk__6", 2])],
        inits,
        "tf2onnx_nhwc_unet",
        opset=13,
    )


def fixed_batch_conv() -> onnx.ModelProto:
    """:func:`conv_relu_gemm` with its batch fixed to 1 (input and output)."""
    model = conv_relu_gemm(opset=17)
    for value in (model.graph.input[0], model.graph.output[0]):
        dim = value.type.tensor_type.shape.dim[0]
        dim.ClearField("dim_param")
        dim.dim_value = 1
    return model


def gelu_model() -> onnx.ModelProto:
    """x[2] -> Gelu -> y[2] at opset 20 (Gelu does not exist before opset 20)."""
    graph = helper.make_graph(
        [helper.make_node("Gelu", ["x"], ["y"])],
        "gelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model


def matmul_model(hidden: int = 64) -> onnx.ModelProto:
    """x[batch, 32] -> MatMul(W 32×hidden) -> Relu -> MatMul(W hidden×10) -> y: for int4 tests."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((32, hidden)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((hidden, 10)).astype(np.float32), "w2")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
            helper.make_node("Relu", ["h"], ["r"], name="relu"),
            helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2"),
        ],
        "matmul_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: list[onnx.TensorProto],
    name: str,
    opset: int = 17,
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def state_input(hidden: int = 128) -> onnx.ModelProto:
    """x[batch,16], state[2,batch,hidden] -> MatMul + state[1] -> y[batch,hidden].

    Like a VAD's recurrent state: the first axis is fixed at 2 and the batch is the second;
    setting the first axis to 1 makes Gather(index 1) fail.
    """
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((16, hidden)).astype(np.float32), "w")
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="proj"),
        helper.make_node("Gather", ["state", "one"], ["h"], name="last_layer", axis=0),
        helper.make_node("Add", ["m", "h"], ["y"], name="add"),
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", hidden]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", hidden])],
        [w, one],
        "state_input",
    )


def scalar_rate() -> onnx.ModelProto:
    """x[batch,8] and a scalar int64 sample rate ``sr``; y = x * (sr == 16000).

    A scalar made [1] does not load; a rate of 0–3 gives all-zero outputs.
    """
    rate = numpy_helper.from_array(np.array(16000, np.int64), "rate")
    nodes = [
        helper.make_node("Equal", ["sr", "rate"], ["is16k"], name="check_rate"),
        helper.make_node("Cast", ["is16k"], ["gain"], name="gain", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "gain"], ["y"], name="apply"),
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8]),
            helper.make_tensor_value_info("sr", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [rate],
        "scalar_rate",
    )


def embedding_encoder(rows: int = 30, types: int = 2) -> onnx.ModelProto:
    """ids[batch,seq] int64 → Gather(table[rows,8]); type_ids → Gather(table[types,8]); masked
    mean → y[batch,8]. Ids of 0–3 break the 2-row type table."""
    rng = np.random.default_rng(2)
    table = numpy_helper.from_array(rng.standard_normal((rows, 8)).astype(np.float32), "table")
    type_table = numpy_helper.from_array(
        rng.standard_normal((types, 8)).astype(np.float32), "type_table"
    )
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"], name="word_embedding"),
        helper.make_node("Gather", ["type_table", "type_ids"], ["t"], name="type_embedding"),
        helper.make_node("Add", ["e", "t"], ["s"], name="sum"),
        helper.make_node("Cast", ["mask"], ["mf"], name="mask_float", to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mf", "minus1"], ["mu"], name="mask_axis"),
        helper.make_node("Mul", ["s", "mu"], ["masked"], name="apply_mask"),
        helper.make_node("ReduceMean", ["masked", "axes"], ["y"], name="pool", keepdims=0),
    ]
    minus1 = numpy_helper.from_array(np.array([-1], np.int64), "minus1")
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("type_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [table, type_table, axes, minus1],
        "embedding_encoder",
        opset=18,
    )


def reflect_pad(pad: int = 8) -> onnx.ModelProto:
    """x[batch,time] → reflect Pad by ``pad`` on the time axis: needs time > ``pad`` (a length
    of 1 fails)."""
    pads = numpy_helper.from_array(np.array([0, pad, 0, pad], np.int64), "pads")
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], name="reflect", mode="reflect")]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "time"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None])],
        [pads],
        "reflect_pad",
    )


def odd_length(length: int = 37) -> onnx.ModelProto:
    """x[batch,n] → Reshape to [1, ``length``]: runs only when n == ``length``, a size no
    derivation guesses, so no derived input specification runs."""
    shape = numpy_helper.from_array(np.array([1, length], np.int64), "shape")
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="fixed_reshape"),
        helper.make_node("Relu", ["r"], ["y"], name="relu"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, length])],
        [shape],
        "odd_length",
    )


def feature_matrix(width: int = 80) -> onnx.ModelProto:
    """x[frames, features] (both symbolic) → LayerNorm → MatMul W[``width``,16] → y: runs
    only at features == ``width``, a size no list of guesses holds (an acoustic model's
    filterbank input)."""
    rng = np.random.default_rng(4)
    inits = [
        numpy_helper.from_array(rng.standard_normal((width, 16)).astype(np.float32), "W"),
        numpy_helper.from_array(np.ones(width, np.float32), "gamma"),
        numpy_helper.from_array(np.zeros(width, np.float32), "beta"),
    ]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["n"], name="norm", axis=-1),
        helper.make_node("MatMul", ["n", "W"], ["y"], name="fc1"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["frames", "features"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["frames", 16])],
        inits,
        "feature_matrix",
    )


def convolved_features(bands: int = 80, kernel: int = 7) -> onnx.ModelProto:
    """x[frames, bands, 3] → Mul by a per-band [bands, 3] scale → Unsqueeze(0) → NCHW →
    Conv 3→4 (``kernel``×3) → y: madmom's onset CNN. The graph adds its own batch axis, so
    axis 0 is frames, which the kernel needs at least ``kernel`` of; the width only the
    scale fixes."""
    rng = np.random.default_rng(8)
    inits = [
        numpy_helper.from_array(rng.random((bands, 3)).astype(np.float32) + 0.5, "scale"),
        numpy_helper.from_array(np.array([0], np.int64), "batch_axis"),
        numpy_helper.from_array(
            rng.standard_normal((4, 3, kernel, 3)).astype(np.float32) * 0.1, "W"
        ),
    ]
    nodes = [
        helper.make_node("Mul", ["x", "scale"], ["scaled"], name="band_scale"),
        helper.make_node("Unsqueeze", ["scaled", "batch_axis"], ["batched"], name="add_batch"),
        helper.make_node("Transpose", ["batched"], ["nchw"], name="to_nchw", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw", "W"], ["y"], name="conv"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["frames", "bands", "channels"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
        "convolved_features",
    )


def flatten_classifier(width: int = 40, reshape: bool = False) -> onnx.ModelProto:
    """x[N, 1, 28, w] (w declared symbolic) → Conv 4×3×3 → Relu → Flatten (or a Reshape to
    ``[-1, K]``) → Gemm: runs only at w == ``width``, which only the dense layer's K rows fix
    (4 · 26 · (w − 2)): a CNN classifier exported with a dynamic side."""
    rng = np.random.default_rng(10)
    rows = 4 * 26 * (width - 2)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal((rows, 10)).astype(np.float32) * 0.01, "D"),
        numpy_helper.from_array(np.array([-1, rows], np.int64), "rows"),
    ]
    flatten = (
        helper.make_node("Reshape", ["a", "rows"], ["flat"], name="to_rows")
        if reshape
        else helper.make_node("Flatten", ["a"], ["flat"], name="flatten", axis=1)
    )
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["a"], name="relu"),
        flatten,
        helper.make_node("Gemm", ["flat", "D"], ["y"], name="dense"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        inits,
        "flatten_classifier",
    )


def zipmap_classifier(features: int = 16, classes: int = 5) -> onnx.ModelProto:
    """A classifier as skl2onnx writes one: x[N, features] → MatMul → Relu → MatMul →
    Softmax → probabilities; ArgMax → ``label`` (int64) first, then ZipMap →
    ``probability`` (a sequence of maps, class → probability) — no tensor to compare there."""
    rng = np.random.default_rng(9)
    inits = [
        numpy_helper.from_array(rng.standard_normal((features, 32)).astype(np.float32), "W1"),
        numpy_helper.from_array(rng.standard_normal((32, classes)).astype(np.float32), "W2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["a"], name="relu"),
        helper.make_node("MatMul", ["a", "W2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
        helper.make_node("ArgMax", ["probabilities"], ["label"], name="argmax", axis=1, keepdims=0),
        helper.make_node(
            "ZipMap",
            ["probabilities"],
            ["probability"],
            name="zipmap",
            domain="ai.onnx.ml",
            classlabels_int64s=list(range(classes)),
        ),
    ]
    probability = helper.make_value_info(
        "probability",
        helper.make_sequence_type_proto(
            helper.make_map_type_proto(
                TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
            )
        ),
    )
    graph = helper.make_graph(
        nodes,
        "zipmap_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", features])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]), probability],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)],
    )
    model.ir_version = 8
    return model


def lstm_with_state(features: int = 20, hidden: int = 12) -> onnx.ModelProto:
    """A bidirectional LSTM whose data input's width and whose state inputs are all unnamed
    dims (a streaming model's cache): x[?, ?, ?], h0/c0[?, ?, ?] → LSTM → y, hn, cn."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((2, 4 * hidden, features)).astype(np.float32) * 0.2
    r = rng.standard_normal((2, 4 * hidden, hidden)).astype(np.float32) * 0.2
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")]
    nodes = [
        helper.make_node(
            "LSTM",
            ["x", "W", "R", "", "", "h0", "c0"],
            ["y", "hn", "cn"],
            name="lstm",
            hidden_size=hidden,
            direction="bidirectional",
        )
    ]

    def unknown(name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, None, None])

    return _model(
        nodes,
        [unknown("x"), unknown("h0"), unknown("c0")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "hn", "cn")],
        inits,
        "lstm_state",
        opset=14,
    )


def class_codes(depth: int = 300, codes: int = 256) -> onnx.ModelProto:
    """``label`` int64[batch] one-hot encoded to ``depth`` classes, ``byte`` int64[batch]
    compared with every value 0..``codes``-1 (a byte-level embedding written as Equal)."""
    inits = [
        numpy_helper.from_array(np.array([depth], np.int64), "depth"),
        numpy_helper.from_array(np.array([0.0, 1.0], np.float32), "off_on"),
        numpy_helper.from_array(np.arange(codes, dtype=np.int64), "codes"),
    ]
    nodes = [
        helper.make_node("OneHot", ["label", "depth", "off_on"], ["hot"], name="one_hot"),
        helper.make_node("Unsqueeze", ["byte", "axis1"], ["b2"], name="col"),
        helper.make_node("Equal", ["b2", "codes"], ["eq"], name="match_codes"),
        helper.make_node("Cast", ["eq"], ["y2"], name="as_float", to=TensorProto.FLOAT),
    ]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("label", TensorProto.INT64, ["batch"]),
            helper.make_tensor_value_info("byte", TensorProto.INT64, ["batch"]),
        ],
        [
            helper.make_tensor_value_info("hot", TensorProto.FLOAT, ["batch", depth]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["batch", codes]),
        ],
        inits,
        "class_codes",
    )


def unet(stages: int = 7) -> onnx.ModelProto:
    """x[1,1,H,W] halved ``stages`` times by stride-2 convs, then doubled back by Resize, each
    scale Concat'ed with its skip: runs only when H and W are multiples of 2**``stages``."""
    rng = np.random.default_rng(6)
    inits, nodes, skips, t = [], [], [], "x"
    for i in range(stages):
        inits.append(
            numpy_helper.from_array(
                rng.standard_normal((1, 1, 3, 3)).astype(np.float32) * 0.3, f"down{i}.w"
            )
        )
        skips.append(t)
        nodes.append(
            helper.make_node(
                "Conv",
                [t, f"down{i}.w"],
                [f"d{i}"],
                name=f"down{i}",
                strides=[2, 2],
                pads=[1, 1, 1, 1],
            )
        )
        t = f"d{i}"
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    for i, skip in enumerate(reversed(skips)):
        inits.append(
            numpy_helper.from_array(
                rng.standard_normal((1, 2, 3, 3)).astype(np.float32) * 0.3, f"up{i}.w"
            )
        )
        nodes += [
            helper.make_node(
                "Resize", [t, "", "scales"], [f"r{i}"], name=f"resize{i}", mode="nearest"
            ),
            helper.make_node("Concat", [f"r{i}", skip], [f"c{i}"], name=f"skip{i}", axis=1),
            helper.make_node(
                "Conv", [f"c{i}", f"up{i}.w"], [f"u{i}"], name=f"up{i}", pads=[1, 1, 1, 1]
            ),
        ]
        t = f"u{i}"
    nodes.append(helper.make_node("Identity", [t], ["y"], name="out"))
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "height", "width"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "height", "width"])],
        inits,
        "unet",
    )


def gemm_row_bias() -> onnx.ModelProto:
    """x[batch,8] → Gemm(W[4,8]ᵀ, C[1,4]) → Relu: a bias stored as a row, on which
    onnxruntime's per-channel bias adjustment raises "The truth value of an array…"."""
    rng = np.random.default_rng(7)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal((1, 4)).astype(np.float32), "C"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "W", "C"], ["g"], name="fc", transB=1),
        helper.make_node("Relu", ["g"], ["y"], name="relu"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        inits,
        "gemm_row_bias",
    )


def fp16_weights_behind_casts() -> onnx.ModelProto:
    """x[1,4,8,8] → Conv whose weight and bias are float16 initializers Cast to float32 in the
    graph, as a Keras mixed-precision export writes them (``InsertedPrecisionFreeCast_…``)."""
    rng = np.random.default_rng(8)
    inits = [
        numpy_helper.from_array(rng.standard_normal((6, 4, 3, 3)).astype(np.float16), "W16"),
        numpy_helper.from_array(rng.standard_normal(6).astype(np.float16), "B16"),
    ]
    nodes = [
        helper.make_node(
            "Cast", ["W16"], ["W"], name="InsertedPrecisionFreeCast_W", to=TensorProto.FLOAT
        ),
        helper.make_node(
            "Cast", ["B16"], ["B"], name="InsertedPrecisionFreeCast_B", to=TensorProto.FLOAT
        ),
        helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv", pads=[1, 1, 1, 1]),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8, 8])],
        inits,
        "fp16_casts",
    )


def float16_compute(half_interface: bool = False) -> onnx.ModelProto:
    """A digit-CRNN-like model that computes in float16 (onnxconverter's ``keep_io_types``):
    x[1,3,8,8] float32 → Cast(float16) → Conv(float16 weights) → Relu → Mul(float16
    Constant) → Conv → Cast(float32) → y. ``half_interface``: x and y are float16 themselves,
    with no Casts at the border."""
    rng = np.random.default_rng(12)
    half = TensorProto.FLOAT16
    io = half if half_interface else TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float16), "W1"),
        numpy_helper.from_array(rng.standard_normal(6).astype(np.float16), "B1"),
        numpy_helper.from_array((0.3 * rng.standard_normal((4, 6, 3, 3))).astype(np.float16), "W2"),
    ]
    body = [
        helper.make_node("Conv", ["xh", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(
            "Constant",
            [],
            ["k"],
            name="scale",
            value=numpy_helper.from_array(np.array([0.5], np.float16), "k"),
        ),
        helper.make_node("Mul", ["r1", "k"], ["m1"], name="scale_mul"),
        helper.make_node("Conv", ["m1", "W2"], ["yh"], name="conv2", pads=[1, 1, 1, 1]),
    ]
    if half_interface:
        nodes = [helper.make_node("Identity", ["x"], ["xh"], name="enter"), *body]
        nodes.append(helper.make_node("Identity", ["yh"], ["y"], name="leave"))
    else:
        nodes = [
            helper.make_node("Cast", ["x"], ["xh"], name="to_half", to=half),
            *body,
            helper.make_node("Cast", ["yh"], ["y"], name="to_float", to=TensorProto.FLOAT),
        ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", io, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", io, [1, 4, 8, 8])],
        inits,
        "float16_compute",
    )


def sklearn_like() -> onnx.ModelProto:
    """x[?,4] → MatMul → Scaler (ai.onnx.ml, as skl2onnx writes) → Mul → MatMul → y: onnxruntime's
    QOperator quantizer fails on the MatMul after the ML-domain op (its input has no type)."""
    rng = np.random.default_rng(9)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "proj"),
        numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "coef"),
        numpy_helper.from_array(np.array([2.0], np.float32), "c"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "proj"], ["p"], name="project"),
        helper.make_node(
            "Scaler",
            ["p"],
            ["scaled"],
            domain="ai.onnx.ml",
            name="scaler",
            offset=[0.0] * 4,
            scale=[1.0] * 4,
        ),
        helper.make_node("Mul", ["scaled", "c"], ["mul_result"], name="mul"),
        helper.make_node("MatMul", ["mul_result", "coef"], ["y"], name="linear"),
    ]
    graph = helper.make_graph(
        nodes,
        "sklearn_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 1)]
    )
    model.ir_version = 8
    return model


def gru_model(opset: int = 11) -> onnx.ModelProto:
    """x[time,batch,4] with ``sequence_lens`` int32[batch] and h0[1,batch,8] → GRU → y."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((1, 24, 4)).astype(np.float32) * 0.3, "W")
    r = numpy_helper.from_array(rng.standard_normal((1, 24, 8)).astype(np.float32) * 0.3, "R")
    nodes = [
        helper.make_node(
            "GRU",
            ["x", "W", "R", "", "sequence_lens", "h0"],
            ["y", "hn"],
            name="gru",
            hidden_size=8,
        )
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["time", "batch", 4]),
            helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, ["batch"]),
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, "batch", 8]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["time", 1, "batch", 8]),
            helper.make_tensor_value_info("hn", TensorProto.FLOAT, [1, "batch", 8]),
        ],
        [w, r],
        "gru",
        opset=opset,
    )


def quantized_sample(folder: Path, **options: object) -> Path:
    """The digits sample quantized to QDQ by onnxruntime itself (random calibration data)."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    from edgestudio.resources import SAMPLE_MODEL

    data = np.random.default_rng(0).normal(size=(8, 1, 1, 8, 8)).astype(np.float32)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"image": x} for x in data])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    out = folder / "q.onnx"
    quantize_static(str(SAMPLE_MODEL), str(out), Reader(), **options)  # type: ignore[arg-type]
    return out


def char_ids_behind_cast(rows: int = 48) -> onnx.ModelProto:
    """A character model: chars float[batch, seq] → Cast(int64) → Gather(table[rows, 8]) →
    ReduceMean → y[batch, 8]. The ids arrive as floats; normal floats are not characters."""
    rng = np.random.default_rng(4)
    table = numpy_helper.from_array(rng.standard_normal((rows, 8)).astype(np.float32), "chars")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [
        helper.make_node("Cast", ["chars_in"], ["ids"], name="to_ids", to=TensorProto.INT64),
        helper.make_node("Gather", ["chars", "ids"], ["e"], name="char_embedding"),
        helper.make_node("ReduceMean", ["e", "axes"], ["y"], name="pool", keepdims=0),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("chars_in", TensorProto.FLOAT, [None, None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
        [table, axes],
        "char_ids_behind_cast",
        opset=18,
    )


def int8_table_embedding(rows: int = 50, behind: str = "mul") -> onnx.ModelProto:
    """A weight-only int8 embedding: table int8[rows, 16] → Cast(float) → Mul(scale) →
    Gather(ids int64[batch, seq]) → MatMul → y. ``behind="cast"``: the float table is behind a
    Cast from float16 only (no scaling), as some exporters write it."""
    rng = np.random.default_rng(5)
    scale = numpy_helper.from_array(np.array(0.02, np.float32), "scale")
    w = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "head.w")
    if behind == "cast":
        table = numpy_helper.from_array(
            rng.standard_normal((rows, 16)).astype(np.float16), "table_fp16"
        )
        lookup = [
            helper.make_node(
                "Cast", ["table_fp16"], ["table"], name="table_float", to=TensorProto.FLOAT
            )
        ]
        inits = [table, w]
    else:
        table = numpy_helper.from_array(
            rng.integers(-127, 128, (rows, 16)).astype(np.int8), "table_int8"
        )
        lookup = [
            helper.make_node(
                "Cast", ["table_int8"], ["table_f"], name="dequant_cast", to=TensorProto.FLOAT
            ),
            helper.make_node("Mul", ["table_f", "scale"], ["table"], name="dequant_scale"),
        ]
        inits = [table, scale, w]
    nodes = [
        *lookup,
        helper.make_node("Gather", ["table", "ids"], ["e"], name="embedding"),
        helper.make_node("MatMul", ["e", "head.w"], ["y"], name="head"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 4])],
        inits,
        f"int8_table_{behind}",
    )


def matmul_then_elementwise() -> onnx.ModelProto:
    """x[batch, 32] → MatMul → Sub → Min → Reshape → y: dynamic quantization touches only the
    MatMul; excluding Sub, Min or Reshape changes nothing."""
    rng = np.random.default_rng(6)
    w = numpy_helper.from_array(rng.standard_normal((32, 32)).astype(np.float32), "w")
    offset = numpy_helper.from_array(np.full(32, 0.5, np.float32), "offset")
    cap = numpy_helper.from_array(np.full(32, 3.0, np.float32), "cap")
    shape = numpy_helper.from_array(np.array([-1, 4, 8], np.int64), "shape")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="proj"),
        helper.make_node("Sub", ["m", "offset"], ["s"], name="shift"),
        helper.make_node("Min", ["s", "cap"], ["c"], name="cap_values"),
        helper.make_node("Reshape", ["c", "shape"], ["y"], name="split"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 8])],
        [w, offset, cap, shape],
        "matmul_then_elementwise",
    )


def frame_tagger(frames: int = 50, classes: int = 4) -> onnx.ModelProto:
    """A sound-event tagger's head: x[batch, frames, 16] → MatMul → Sigmoid → y[batch, frames,
    classes]: every class's probability at every frame, independently (multi-label)."""
    rng = np.random.default_rng(11)
    w = numpy_helper.from_array(rng.standard_normal((16, classes)).astype(np.float32) * 0.7, "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="tagger"),
        helper.make_node("Sigmoid", ["m"], ["y"], name="sigmoid"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", frames, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", frames, classes])],
        [w],
        "frame_tagger",
    )


def outlier_block(width: int = 16) -> onnx.ModelProto:
    """A transformer block's shape with an outlier channel: x[batch, seq, width] → LayerNorm
    (γ of channel 3 is 60: a few channels hundreds of times larger, as in real transformers)
    → two MatMuls (its only readers: smoothing folds into γ, β) → Add → h; h → MatMul, with h
    also on a residual Add (smoothing needs an inserted Mul there) → y."""
    rng = np.random.default_rng(12)
    gamma = np.ones(width, np.float32)
    gamma[3] = 60.0
    inits = [
        numpy_helper.from_array(gamma, "ln.gamma"),
        numpy_helper.from_array(rng.standard_normal(width).astype(np.float32) * 0.1, "ln.beta"),
    ]
    for name in ("wq", "wk", "wo"):
        inits.append(
            numpy_helper.from_array(
                rng.standard_normal((width, width)).astype(np.float32) * 0.2, name
            )
        )
    nodes = [
        helper.make_node(
            "LayerNormalization", ["x", "ln.gamma", "ln.beta"], ["n"], name="ln", axis=-1
        ),
        helper.make_node("MatMul", ["n", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["n", "wk"], ["k"], name="k_proj"),
        helper.make_node("Add", ["q", "k"], ["h"], name="mix"),
        helper.make_node("MatMul", ["h", "wo"], ["o"], name="o_proj"),
        helper.make_node("Add", ["o", "h"], ["y"], name="residual"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, width])],
        inits,
        "outlier_block",
    )


def ctc_recogniser(time: int = 24, alphabet: int = 40) -> onnx.ModelProto:
    """A CTC recogniser's head: x[batch, time, 16] → MatMul(16×alphabet) → Softmax(last axis) →
    probs[batch, time, alphabet] (class 0 is the blank, strongly biased so that it wins most
    steps, as a trained recogniser's blank does)."""
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((16, alphabet)).astype(np.float32), "w")
    bias = np.zeros(alphabet, np.float32)
    bias[0] = 4.0
    b = numpy_helper.from_array(bias, "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="classifier"),
        helper.make_node("Add", ["m", "b"], ["logits"], name="bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", time, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", time, alphabet])],
        [w, b],
        "ctc_recogniser",
    )


def graph_network(features: int = 8) -> onnx.ModelProto:
    """A graph network's inputs: feat[num_nodes, F], edge_index int64[2, num_edges]; the edges'
    source nodes are gathered from feat (indices must stay below num_nodes) and summed."""
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    nodes = [
        helper.make_node("Gather", ["edge_index", "zero"], ["src"], name="sources", axis=0),
        helper.make_node("Gather", ["feat", "src"], ["msg"], name="messages", axis=0),
        helper.make_node("ReduceSum", ["msg", "axes"], ["y"], name="aggregate", keepdims=1),
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("feat", TensorProto.FLOAT, ["num_nodes", features]),
            helper.make_tensor_value_info("edge_index", TensorProto.INT64, [2, "num_edges"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, features])],
        [zero, axes],
        "graph_network",
        opset=18,
    )


def matmul_inside_if() -> onnx.ModelProto:
    """x[1, 16] → If(cond: MatMul(W), else: MatMul(W·2)) → y: every layer inside a branch, as
    in the Silero VADs (onnxruntime's quantizer does not enter If bodies)."""
    rng = np.random.default_rng(8)
    w = rng.standard_normal((16, 16)).astype(np.float32)
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, [1, 16])
    branches = [
        helper.make_graph(
            [helper.make_node("MatMul", ["x", f"w{k}"], ["o"], name=f"mm{k}")],
            f"branch{k}",
            [],
            [out],
            [numpy_helper.from_array(w * (k + 1), f"w{k}")],
        )
        for k in range(2)
    ]
    node = helper.make_node(
        "If", ["cond"], ["y"], name="choose", then_branch=branches[0], else_branch=branches[1]
    )
    return _model(
        [node],
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [],
        "matmul_inside_if",
    )


def wrong_output_declaration() -> onnx.ModelProto:
    """x[1, 8] → Reshape → y, declared [1, seqlen] but produced [4, 1, 2] (as an OCR export
    declared [1, seqlen] for a [28, 1, 8210] output)."""
    shape = numpy_helper.from_array(np.array([4, 1, 2], np.int64), "shape")
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="Reshape_101"),
        helper.make_node("Relu", ["r"], ["y"], name="relu"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seqlen"])],
        [shape],
        "wrong_output_declaration",
        opset=13,
    )


def tree_ensemble(
    trees: int = 200, depth: int = 6, features: int = 20, classes: int = 3
) -> onnx.ModelProto:
    """A LightGBM-style classifier: one ``TreeEnsembleClassifier`` (ai.onnx.ml, IR 4, opset 9)
    holding every tree in its attributes, a probability tensor through ``ZipMap`` (a sequence of
    maps) and the labels: one node whose attributes are the whole model."""
    rng = np.random.default_rng(0)
    per_tree = 2 ** (depth + 1) - 1
    leaves = 2**depth
    tree_ids = np.repeat(np.arange(trees), per_tree)
    node_ids = np.tile(np.arange(per_tree), trees)
    inner = np.tile(np.arange(per_tree) < per_tree - leaves, trees)
    local = np.tile(np.arange(per_tree), trees)
    modes = np.where(inner, "BRANCH_LEQ", "LEAF").tolist()
    leaf_tree = np.repeat(np.arange(trees), leaves)
    leaf_node = np.tile(np.arange(per_tree - leaves, per_tree), trees)
    attrs = dict(
        nodes_treeids=tree_ids.tolist(),
        nodes_nodeids=node_ids.tolist(),
        nodes_featureids=rng.integers(0, features, tree_ids.size).tolist(),
        nodes_values=rng.normal(size=tree_ids.size).astype(np.float32).tolist(),
        nodes_modes=modes,
        nodes_truenodeids=np.where(inner, 2 * local + 1, 0).tolist(),
        nodes_falsenodeids=np.where(inner, 2 * local + 2, 0).tolist(),
        nodes_missing_value_tracks_true=[0] * tree_ids.size,
        nodes_hitrates=[1.0] * tree_ids.size,
        class_treeids=leaf_tree.tolist(),
        class_nodeids=leaf_node.tolist(),
        class_ids=rng.integers(0, classes, leaf_tree.size).tolist(),
        class_weights=rng.normal(size=leaf_tree.size).astype(np.float32).tolist(),
        classlabels_int64s=list(range(classes)),
        post_transform="SOFTMAX",
    )
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, features])
    label = helper.make_tensor_value_info("label", TensorProto.INT64, [None])
    probs = helper.make_value_info(
        "probabilities",
        helper.make_sequence_type_proto(
            helper.make_map_type_proto(
                TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
            )
        ),
    )
    nodes = [
        helper.make_node(
            "TreeEnsembleClassifier",
            ["input"],
            ["label", "probability_tensor"],
            name="LightGBM",
            domain="ai.onnx.ml",
            **attrs,
        ),
        helper.make_node(
            "ZipMap",
            ["probability_tensor"],
            ["probabilities"],
            name="ZipMap",
            domain="ai.onnx.ml",
            classlabels_int64s=list(range(classes)),
        ),
    ]
    graph = helper.make_graph(nodes, "lightgbm_like", [x], [label, probs])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 9), helper.make_opsetid("ai.onnx.ml", 1)]
    )
    model.ir_version = 4
    return model


def pooled_graph_network(features: int = 8, hidden: int = 4) -> onnx.ModelProto:
    """A graph network as molecule models export it (minimol-style): node features projected
    (h = feat·W, computed, so no stored table says how many rows it has), messages gathered
    along edge_index, nodes scatter-added into their graph by ``batch`` (indices into
    graph_slots[num_graphs]), divided by each graph's node count, and a bool ``node_mask``.
    Inputs whose sizes must agree: num_nodes, num_edges, num_graphs."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=(features, hidden)).astype(np.float32), "w")
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    hid = numpy_helper.from_array(np.array([hidden], np.int64), "hid")
    ones = numpy_helper.from_array(np.ones((1, hidden), np.float32), "ones_h")
    nodes = [
        helper.make_node("MatMul", ["feat", "w"], ["h"], name="project"),
        helper.make_node("Gather", ["edge_index", "zero"], ["src"], name="sources", axis=0),
        helper.make_node("Gather", ["h", "src"], ["msg"], name="messages", axis=0),
        helper.make_node("ReduceSum", ["msg"], ["edge_sum"], name="edge_sum", keepdims=0),
        helper.make_node("Cast", ["node_mask"], ["mask_f"], name="mask_float", to=1),
        helper.make_node("Unsqueeze", ["mask_f", "axis1"], ["mask_col"], name="mask_col"),
        helper.make_node("Mul", ["h", "mask_col"], ["h_masked"], name="masked"),
        helper.make_node("Unsqueeze", ["batch", "axis1"], ["batch_col"], name="batch_col"),
        helper.make_node("Shape", ["h_masked"], ["h_shape"], name="h_shape"),
        helper.make_node("Expand", ["batch_col", "h_shape"], ["index"], name="index"),
        helper.make_node("Shape", ["graph_slots"], ["graphs"], name="graphs"),
        helper.make_node("Concat", ["graphs", "hid"], ["pool_shape"], name="pool_shape", axis=0),
        helper.make_node("ConstantOfShape", ["pool_shape"], ["pool_zero"], name="pool_zero"),
        helper.make_node(
            "ScatterElements",
            ["pool_zero", "index", "h_masked"],
            ["pooled"],
            name="pool_sum",
            axis=0,
            reduction="add",
        ),
        helper.make_node("Expand", ["ones_h", "h_shape"], ["unit"], name="unit"),
        helper.make_node(
            "ScatterElements",
            ["pool_zero", "index", "unit"],
            ["counts"],
            name="pool_count",
            axis=0,
            reduction="add",
        ),
        helper.make_node("Div", ["pooled", "counts"], ["mean"], name="mean"),  # 0/0 if empty
        helper.make_node("Add", ["mean", "edge_sum"], ["y"], name="out"),
    ]
    axis1 = numpy_helper.from_array(np.array([1], np.int64), "axis1")
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("feat", TensorProto.FLOAT, ["num_nodes", features]),
            helper.make_tensor_value_info("edge_index", TensorProto.INT64, [2, "num_edges"]),
            helper.make_tensor_value_info("batch", TensorProto.INT64, ["num_nodes"]),
            helper.make_tensor_value_info("node_mask", TensorProto.BOOL, ["num_nodes"]),
            helper.make_tensor_value_info("graph_slots", TensorProto.FLOAT, ["num_graphs"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["num_graphs", hidden])],
        [w, zero, hid, ones, axis1],
        "pooled_graph_network",
        opset=18,
    )


def nan_fill_where() -> onnx.ModelProto:
    """MatMul → Where(target_mask, y, NaN): a NaN fill value marks "no prediction" where the
    mask is off (a protein model's pattern); the fill tensor's calibrated range is NaN."""
    w = numpy_helper.from_array(
        np.random.default_rng(0).normal(size=(4, 6)).astype(np.float32), "w"
    )
    nan = helper.make_tensor("nan", TensorProto.FLOAT, [1], [float("nan")])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
        helper.make_node("Shape", ["h"], ["h_shape"], name="shape"),
        helper.make_node("ConstantOfShape", ["h_shape"], ["fill"], name="nan_fill", value=nan),
        helper.make_node("Where", ["target_mask", "h", "fill"], ["y"], name="where"),
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
            helper.make_tensor_value_info("target_mask", TensorProto.BOOL, ["batch", 6]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 6])],
        [w],
        "nan_fill_where",
    )


def silu_detector(blocks: int = 3, channels: int = 4) -> onnx.ModelProto:
    """A YOLO-style trunk: Conv → SiLU as ``Mul(c, Sigmoid(c))`` (the Mul reads the Conv's output
    past the Sigmoid) and a residual Add over every block."""
    rng = np.random.default_rng(0)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    x = "x"
    for i in range(blocks):
        w = (rng.standard_normal((channels, channels, 3, 3)) / 9).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [
            helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
            helper.make_node("Sigmoid", [f"c{i}"], [f"s{i}"], name=f"sigmoid{i}"),
            helper.make_node("Mul", [f"c{i}", f"s{i}"], [f"m{i}"], name=f"silu{i}"),
            helper.make_node("Add", [x, f"m{i}"], [f"x{i}"], name=f"res{i}"),
        ]
        x = f"x{i}"
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 8, 8])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, channels, 8, 8])],
        inits,
        "silu_detector",
    )


def residual_block(channels: int = 4) -> onnx.ModelProto:
    """x[batch,4,8,8] -> Conv c1 -> Relu r1 -> Conv c2 -> Add(x) add -> Mul(0.5) mul ->
    GlobalAveragePool gap -> Flatten flat -> Gemm fc -> y[batch,10]: compute operators with
    elementwise ones between them (where quantizer placement matters) and a fused Relu."""
    rng = np.random.default_rng(3)

    def init(name: str, shape: tuple[int, ...], scale: float = 0.3) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    c = channels
    inits = [
        init("w1", (c, c, 3, 3)),
        init("b1", (c,)),
        init("w2", (c, c, 3, 3)),
        init("b2", (c,)),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        init("fw", (10, c)),
        init("fb", (10,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1_out"], name="c1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1_out"], ["r1_out"], name="r1"),
        helper.make_node("Conv", ["r1_out", "w2", "b2"], ["c2_out"], name="c2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2_out", "x"], ["add_out"], name="add"),
        helper.make_node("Mul", ["add_out", "half"], ["mul_out"], name="mul"),
        helper.make_node("GlobalAveragePool", ["mul_out"], ["gap_out"], name="gap"),
        helper.make_node("Flatten", ["gap_out"], ["flat_out"], name="flat"),
        helper.make_node("Gemm", ["flat_out", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "residual_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", c, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def argmax_tagger(time: int = 32, tags: int = 9) -> onnx.ModelProto:
    """A character tagger whose output is its tags: x[batch, time, 16] and attention_mask
    [batch, time] (1 real, 0 padding) → MatMul → ArgMax(last axis) → tags[batch, time] int64,
    as a sequence tagger exported with its decision in the graph."""
    rng = np.random.default_rng(13)
    w = numpy_helper.from_array(rng.standard_normal((16, tags)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last"], ["mask_3d"]),
        helper.make_node("Mul", ["x", "mask_3d"], ["masked"], name="mask"),
        helper.make_node("MatMul", ["masked", "w"], ["scores"], name="classifier"),
        helper.make_node("ArgMax", ["scores"], ["tags"], name="decide", axis=-1, keepdims=0),
    ]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", time, 16]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", time]),
        ],
        [helper.make_tensor_value_info("tags", TensorProto.INT64, ["batch", time])],
        [w, numpy_helper.from_array(np.array([-1], np.int64), "last")],
        "argmax_tagger",
    )


def digit_ctc(time: int = 24, digits: int = 10) -> onnx.ModelProto:
    """A digit CRNN's CTC head with the blank as its *last* class (Keras' convention): x[batch,
    time, 16] → MatMul → Add → Softmax → probs[batch, time, digits + 1]; 11 classes, too few
    to be read as a CTC alphabet without the dictionary."""
    rng = np.random.default_rng(17)
    w = numpy_helper.from_array(rng.standard_normal((16, digits + 1)).astype(np.float32), "w")
    bias = np.zeros(digits + 1, np.float32)
    bias[-1] = 3.0  # the blank wins most steps, as a trained recogniser's does
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="classifier"),
        helper.make_node("Add", ["m", "b"], ["logits"], name="bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", time, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", time, digits + 1])],
        [w, numpy_helper.from_array(bias, "b")],
        "digit_ctc",
    )


def tanh_embedding(features: int = 64, width: int = 300) -> onnx.ModelProto:
    """A character-LSTM-style embedding head: x[batch, features] → MatMul → Tanh →
    output[batch, 300]: a squashed feature vector, no softmax (not 300 classes)."""
    rng = np.random.default_rng(19)
    w = numpy_helper.from_array(
        (rng.standard_normal((features, width)) / np.sqrt(features)).astype(np.float32), "w"
    )
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="project"),
        helper.make_node("Tanh", ["m"], ["output"], name="squash"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", width])],
        [w],
        "tanh_embedding",
    )


def three_frame_heads(frames: int = 40) -> onnx.ModelProto:
    """An audio transcriber's three per-frame Sigmoid outputs (onset, frame, offset), the third
    made from a much smaller projection so that quantization hurts it most."""
    rng = np.random.default_rng(23)
    inits, nodes, outputs = [], [], []
    for k, (name, scale) in enumerate((("onset", 1.0), ("frame", 1.0), ("offset", 0.05))):
        w = (rng.standard_normal((16, 8)) * scale).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{k}"))
        nodes += [
            helper.make_node("MatMul", ["x", f"w{k}"], [f"m{k}"], name=f"head{k}"),
            helper.make_node("Sigmoid", [f"m{k}"], [name], name=f"sigmoid{k}"),
        ]
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", frames, 8]))
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", frames, 16])],
        outputs,
        inits,
        "three_frame_heads",
    )


def loop_matmul(trips: int | None = 5, width: int = 16) -> onnx.ModelProto:
    """A recurrent layer unrolled into a Loop (as a scripted LSTM exports): v[1, width] →
    Loop(M) { v = Tanh(MatMul(v, W)) } → y. ``trips`` fixes M in the graph; None reads it from
    the second input's length (Shape → Gather), as a sequence length is."""
    rng = np.random.default_rng(29)
    w = numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32), "W")
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("MatMul", ["v_in", "W"], ["m"], name="step_matmul"),
            helper.make_node("Tanh", ["m"], ["v_out"], name="step_tanh"),
        ],
        "step",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1, width]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1, width]),
        ],
    )
    inits = [w, numpy_helper.from_array(np.array(True), "keep_going")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])]
    nodes = []
    if trips is None:
        inputs.append(helper.make_tensor_value_info("steps", TensorProto.FLOAT, [1, "time"]))
        inits.append(numpy_helper.from_array(np.array(1, np.int64), "time_axis"))
        nodes += [
            helper.make_node("Shape", ["steps"], ["steps_shape"]),
            helper.make_node("Gather", ["steps_shape", "time_axis"], ["M"], axis=0),
        ]
    else:
        inits.append(numpy_helper.from_array(np.array(trips, np.int64), "M"))
    nodes.append(
        helper.make_node("Loop", ["M", "keep_going", "x"], ["y"], name="unrolled", body=body)
    )
    return _model(
        nodes,
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
        inits,
        "loop_matmul",
    )
