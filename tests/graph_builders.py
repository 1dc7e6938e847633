"""Realistic big graphs built in code: transformer-like blocks with residuals, and conv branches.

Weights are tiny shared initializers so that a 50k-node model stays a few MB: the graph view
and layout only care about structure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 8


def transformer_like(target_nodes: int) -> onnx.ModelProto:
    """A stack of attention-like blocks (~24 nodes each) until ``target_nodes`` is reached."""
    w = numpy_helper.from_array(np.eye(HIDDEN, dtype=np.float32), "w")
    scale = numpy_helper.from_array(np.ones(HIDDEN, np.float32), "ln_scale")
    bias = numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "ln_bias")
    nodes: list[onnx.NodeProto] = []
    x = "x"
    block = 0
    while len(nodes) < target_nodes - 30:
        p = f"b{block}/"

        def n(op: str, inputs: list[str], name: str, p: str = p, **attrs: object) -> str:
            out = p + name
            nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
            return out

        ln = n("LayerNormalization", [x, "ln_scale", "ln_bias"], "ln1", axis=-1)
        q = n("MatMul", [ln, "w"], "q")
        k = n("MatMul", [ln, "w"], "k")
        v = n("MatMul", [ln, "w"], "v")
        kt = n("Transpose", [k], "kt", perm=[0, 2, 1])
        s = n("MatMul", [q, kt], "scores")
        s2 = n("Mul", [s, "alpha"], "scaled")
        a = n("Softmax", [s2], "softmax", axis=-1)
        av = n("MatMul", [a, v], "attn")
        o = n("MatMul", [av, "w"], "proj")
        r1 = n("Add", [x, o], "residual1")
        ln2 = n("LayerNormalization", [r1, "ln_scale", "ln_bias"], "ln2", axis=-1)
        h1 = n("MatMul", [ln2, "w"], "fc1")
        g = n("Gelu", [h1], "gelu")
        h2 = n("MatMul", [g, "w"], "fc2")
        branch_a = n("Relu", [h2], "branch_a")
        branch_b = n("Sigmoid", [h2], "branch_b")
        gate = n("Mul", [branch_a, branch_b], "gate")
        mix = n("Add", [gate, h2], "mix")
        d = n("Identity", [mix], "dropout")
        x = n("Add", [r1, d], "residual2")
        block += 1
    out = helper.make_node("Identity", [x], ["y"], name="output_identity")
    nodes.append(out)
    alpha = numpy_helper.from_array(np.array(0.35, np.float32), "alpha")
    graph = helper.make_graph(
        nodes,
        "transformer_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        [w, scale, bias, alpha],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model


def conv_branches(target_nodes: int) -> onnx.ModelProto:
    """Inception-like: blocks of four parallel conv branches concatenated, plus a residual."""
    w = numpy_helper.from_array(np.zeros((4, 4, 1, 1), np.float32), "cw")
    nodes: list[onnx.NodeProto] = []
    x = "x"
    block = 0
    while len(nodes) < target_nodes - 20:
        p = f"c{block}/"
        outs = []
        for b in range(4):
            c = f"{p}conv{b}"
            r = f"{p}relu{b}"
            nodes.append(helper.make_node("Conv", [x, "cw"], [c], name=c))
            nodes.append(helper.make_node("Relu", [c], [r], name=r))
            outs.append(r)
        s1, s2, s3 = f"{p}sum1", f"{p}sum2", f"{p}sum3"
        nodes.append(helper.make_node("Add", [outs[0], outs[1]], [s1], name=s1))
        nodes.append(helper.make_node("Add", [outs[2], outs[3]], [s2], name=s2))
        nodes.append(helper.make_node("Add", [s1, s2], [s3], name=s3))
        res = f"{p}residual"
        nodes.append(helper.make_node("Add", [s3, x], [res], name=res))
        x = res
        block += 1
    nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        "conv_branches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def residual_mlp(target_nodes: int, hidden: int = 16, seed: int = 0) -> onnx.ModelProto:
    """Blocks of MatMul → Add(bias) → Relu → Add(residual) → Mul(0.5), each with its own
    weights (what the quantizer works on), until ``target_nodes``; values stay bounded."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes: list[onnx.NodeProto] = []
    x = "x"
    i = 0
    while len(nodes) + 5 <= target_nodes:
        inits += [
            numpy_helper.from_array(
                (rng.standard_normal((hidden, hidden)) / 4).astype(np.float32), f"w{i}"
            ),
            numpy_helper.from_array((rng.standard_normal(hidden) / 10).astype(np.float32), f"b{i}"),
        ]
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"matmul{i}"),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"bias{i}"),
            helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}"),
            helper.make_node("Add", [x, f"r{i}"], [f"s{i}"], name=f"res{i}"),
            helper.make_node("Mul", [f"s{i}", "half"], [f"x{i}"], name=f"scale{i}"),
        ]
        x = f"x{i}"
        i += 1
    graph = helper.make_graph(
        nodes,
        "residual_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", hidden])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def cnn_like(blocks: int = 6, channels: int = 8, seed: int = 0) -> onnx.ModelProto:
    """Conv → BatchNorm-free Relu → residual Add blocks with their own weights, then Gemm."""
    rng = np.random.default_rng(seed)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    x = "x"
    for i in range(blocks):
        w = (rng.standard_normal((channels, channels, 3, 3)) / (3 * channels)).astype(np.float32)
        inits += [
            numpy_helper.from_array(w, f"cw{i}"),
            numpy_helper.from_array(np.zeros(channels, np.float32), f"cb{i}"),
        ]
        nodes += [
            helper.make_node(
                "Conv", [x, f"cw{i}", f"cb{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]
            ),
            helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
            helper.make_node("Add", [x, f"r{i}"], [f"x{i}"], name=f"res{i}"),
        ]
        x = f"x{i}"
    inits += [
        numpy_helper.from_array(
            (rng.standard_normal((10, channels * 64)) / 20).astype(np.float32), "fc_w"
        ),
        numpy_helper.from_array(np.zeros(10, np.float32), "fc_b"),
    ]
    nodes += [
        helper.make_node("Flatten", [x], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", channels, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def llama_decoder(
    folder: Path,
    name: str = "decoder.onnx",
    layers: int = 2,
    hidden: int = 64,
    intermediate: int = 176,
    vocab: int = 256,
    heads: int = 4,
    seed: int = 0,
) -> Path:
    """A LLaMA-style decoder-only transformer: token embedding, per layer RMSNorm, q/k/v
    projections, rotary embedding (``cos``/``sin`` inputs), a KV cache (``past_*`` inputs,
    ``present_*`` outputs), attention, output projection, SiLU-gated MLP, residual adds; a final
    norm and the LM head. Random weights, written straight to ``NAME.data`` as external data one
    tensor at a time (a 1 B-parameter model never sits in memory). Returns the model's path."""
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads
    data_path = folder / f"{name}.data"
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    with data_path.open("wb") as data:

        def weight(label: str, shape: tuple[int, ...], scale: float = 0.02) -> str:
            array = (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
            tensor = onnx.TensorProto(name=label, data_type=TensorProto.FLOAT, dims=list(shape))
            offset = data.tell()
            data.write(array.tobytes())
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (
                ("location", data_path.name),
                ("offset", str(offset)),
                ("length", str(array.nbytes)),
            ):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            inits.append(tensor)
            return label

        def const(label: str, values: list[float] | list[int], dtype: type) -> str:
            inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), label))
            return label

        def op(kind: str, inputs: list[str], label: str, name: str = "", **attrs: object) -> str:
            nodes.append(helper.make_node(kind, inputs, [label], name=name or label, **attrs))
            return label

        eps, root = const("eps", [1e-6], np.float32), const("sqrt_hd", [head_dim**0.5], np.float32)
        split_shape = const("heads_shape", [0, 0, heads, head_dim], np.int64)
        merge_shape = const("hidden_shape", [0, 0, hidden], np.int64)
        axes = const("last_axis", [-1], np.int64)

        def rms_norm(x: str, prefix: str) -> str:
            square = op("Mul", [x, x], f"{prefix}/sq")
            mean = op("ReduceMean", [square, axes], f"{prefix}/mean", keepdims=1)
            std = op("Sqrt", [op("Add", [mean, eps], f"{prefix}/add_eps")], f"{prefix}/sqrt")
            return op(
                "Mul",
                [op("Div", [x, std], f"{prefix}/div"), weight(f"{prefix}.weight", (hidden,), 1.0)],
                f"{prefix}/scale",
            )

        def rotary(t: str, prefix: str) -> str:
            first, second = f"{prefix}/half1", f"{prefix}/half2"
            nodes.append(
                helper.make_node(
                    "Split", [t], [first, second], name=f"{prefix}/split", axis=-1, num_outputs=2
                )
            )
            rotated = op(
                "Concat", [op("Neg", [second], f"{prefix}/neg"), first], f"{prefix}/rotate", axis=-1
            )
            return op(
                "Add",
                [
                    op("Mul", [t, "cos"], f"{prefix}/cos"),
                    op("Mul", [rotated, "sin"], f"{prefix}/sin"),
                ],
                f"{prefix}/rot",
            )

        def heads_first(t: str, prefix: str) -> str:
            return op(
                "Transpose",
                [op("Reshape", [t, split_shape], f"{prefix}/reshape")],
                f"{prefix}/transpose",
                perm=[0, 2, 1, 3],
            )

        x = op(
            "Gather", [weight("embed_tokens.weight", (vocab, hidden)), "input_ids"], "embed_tokens"
        )
        past_inputs, present_outputs = [], []
        for i in range(layers):
            p = f"layers.{i}"
            n = rms_norm(x, f"{p}/input_norm")
            q = rotary(
                heads_first(
                    op("MatMul", [n, weight(f"{p}.q_proj", (hidden, hidden))], f"{p}/q_proj"),
                    f"{p}/q",
                ),
                f"{p}/q_rope",
            )
            k = rotary(
                heads_first(
                    op("MatMul", [n, weight(f"{p}.k_proj", (hidden, hidden))], f"{p}/k_proj"),
                    f"{p}/k",
                ),
                f"{p}/k_rope",
            )
            v = heads_first(
                op("MatMul", [n, weight(f"{p}.v_proj", (hidden, hidden))], f"{p}/v_proj"), f"{p}/v"
            )
            # named inside the layer's scope, as exporters name them
            keys = op(
                "Concat", [f"past_key.{i}", k], f"present_key.{i}", f"{p}/present_key", axis=2
            )
            values = op(
                "Concat", [f"past_value.{i}", v], f"present_value.{i}", f"{p}/present_value", axis=2
            )
            past_inputs += [f"past_key.{i}", f"past_value.{i}"]
            present_outputs += [keys, values]
            scores = op(
                "Div",
                [
                    op(
                        "MatMul",
                        [q, op("Transpose", [keys], f"{p}/keys_t", perm=[0, 1, 3, 2])],
                        f"{p}/qk",
                    ),
                    root,
                ],
                f"{p}/scaled",
            )
            context = op(
                "MatMul", [op("Softmax", [scores], f"{p}/softmax", axis=-1), values], f"{p}/context"
            )
            merged = op(
                "Reshape",
                [op("Transpose", [context], f"{p}/context_t", perm=[0, 2, 1, 3]), merge_shape],
                f"{p}/merge",
            )
            x = op(
                "Add",
                [x, op("MatMul", [merged, weight(f"{p}.o_proj", (hidden, hidden))], f"{p}/o_proj")],
                f"{p}/attn_residual",
            )
            n = rms_norm(x, f"{p}/post_norm")
            gate = op(
                "MatMul", [n, weight(f"{p}.gate_proj", (hidden, intermediate))], f"{p}/gate_proj"
            )
            up = op("MatMul", [n, weight(f"{p}.up_proj", (hidden, intermediate))], f"{p}/up_proj")
            silu = op("Mul", [gate, op("Sigmoid", [gate], f"{p}/sigmoid")], f"{p}/silu")
            down = op(
                "MatMul",
                [
                    op("Mul", [silu, up], f"{p}/gated"),
                    weight(f"{p}.down_proj", (intermediate, hidden)),
                ],
                f"{p}/down_proj",
            )
            x = op("Add", [x, down], f"{p}/mlp_residual")
        logits = op("MatMul", [rms_norm(x, "norm"), weight("lm_head", (hidden, vocab))], "logits")
    kv = ["batch", heads, "past", head_dim]
    graph = helper.make_graph(
        nodes,
        "llama_decoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("cos", TensorProto.FLOAT, [1, 1, "seq", head_dim]),
            helper.make_tensor_value_info("sin", TensorProto.FLOAT, [1, 1, "seq", head_dim]),
            *[helper.make_tensor_value_info(t, TensorProto.FLOAT, kv) for t in past_inputs],
        ],
        [
            helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["batch", "seq", vocab]),
            *[
                helper.make_tensor_value_info(
                    t, TensorProto.FLOAT, ["batch", heads, "total", head_dim]
                )
                for t in present_outputs
            ],
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    path = folder / name
    onnx.save(model, str(path))
    return path
