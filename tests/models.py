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
        nodes, "conv_relu_gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [w, b, gw, gb],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tests", producer_version="1.0")
    model.ir_version = 8
    helper.set_model_props(model, {"author": "tests", "task": "toy"})
    return model


def relu_only(opset: int = 17, domain: str = "") -> onnx.ModelProto:
    """x[2] -> Relu -> y[2], no weights; ``domain`` puts the op in another domain."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], domain=domain)], "relu_only",
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
        [node], "with_if",
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
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    return path


def fixed_batch_reshape() -> onnx.ModelProto:
    """x[1,3,4] -> Reshape(shape=[1,12] baked in) -> Relu -> y[1,12]."""
    shape = numpy_helper.from_array(np.array([1, 12], np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["r"], name="flatten_reshape"),
         helper.make_node("Relu", ["r"], ["y"], name="relu")],
        "fixed_batch_reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12])],
        [shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


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
        [helper.make_node("Gelu", ["x"], ["y"])], "gelu",
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
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")],
        "matmul_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])], [w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
