"""Realistic big graphs built in code: transformer-like blocks with residuals, and conv branches.

Weights are tiny shared initializers so that a 50k-node model stays a few MB: the graph view
and layout only care about structure.
"""

from __future__ import annotations

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
        nodes, "transformer_like",
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
        nodes, "conv_branches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
