"""Constants folded into the nodes that use them: what is folded, what is kept, lookups."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.model.graph_ir import build_graph_ir, constant_nodes


def _model() -> onnx.ModelProto:
    w8 = numpy_helper.from_array(np.ones((4, 4), np.int8), "w_int8")
    scale = numpy_helper.from_array(np.array(0.1, np.float32), "w_scale")
    w16 = numpy_helper.from_array(np.ones((4, 4), np.float16), "w_half")
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["shape"],
            name="shape_const",
            value=numpy_helper.from_array(np.array([1, 4], np.int64)),
        ),
        helper.make_node("DequantizeLinear", ["w_int8", "w_scale"], ["w_deq"], name="deq"),
        helper.make_node("Cast", ["w_half"], ["w_float"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["x", "shape"], ["x2"], name="reshape"),
        helper.make_node("MatMul", ["x2", "w_deq"], ["y1"], name="mm1"),
        helper.make_node("MatMul", ["y1", "w_float"], ["y"], name="mm2"),
        helper.make_node("RandomNormal", [], ["noise"], name="noise", shape=[1, 4]),
        helper.make_node("Add", ["y", "noise"], ["z"], name="add"),
        helper.make_node(
            "Constant",
            [],
            ["const_out"],
            name="exported",
            value=numpy_helper.from_array(np.array([3.0], np.float32)),
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("const_out", TensorProto.FLOAT, [1]),
        ],
        initializer=[w8, scale, w16],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_constants_weight_casts_and_dequantization_are_folded() -> None:
    graph = _model().graph
    folded = constant_nodes(graph)
    assert sorted(graph.node[i].name for i in folded) == ["cast", "deq", "shape_const"]
    ir = build_graph_ir(graph)
    operators = [ir.names[i] for i in range(len(ir.onnx_nodes))]
    # random ops and a constant that is a graph output stay drawn
    assert operators == ["reshape", "mm1", "mm2", "noise", "add", "exported"]
    assert ir.folded_count == 3
    assert ir.constants == {
        "shape": ["Constant"],
        "w_deq": ["DequantizeLinear"],
        "w_float": ["Cast"],
    }
    assert ir.is_constant("w_deq") and ir.is_constant("w_int8") and not ir.is_constant("x2")
    # no edge comes from a folded node; a search for one lands on the node that uses it
    assert all(t not in ir.constants for t in ir.edge_tensor)
    assert ir.names[ir.index_of("deq") or 0] == "mm1"
    assert ir.names[ir.index_of("shape_const") or 0] == "reshape"


def test_unfolded_graph_keeps_every_node_with_the_same_names() -> None:
    graph = _model().graph
    ir = build_graph_ir(graph, fold_constants=False)
    assert ir.folded_count == 0 and len(ir.onnx_nodes) == len(graph.node)
    unnamed = helper.make_graph(
        [
            helper.make_node(
                "Constant", [], ["c"], value=numpy_helper.from_array(np.array([1.0], np.float32))
            ),
            helper.make_node("Add", ["x", "c"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    # unnamed nodes are called after their place in the file, folded or not
    assert build_graph_ir(unnamed).names[0] == "Add_1"
    assert build_graph_ir(unnamed, fold_constants=False).names[1] == "Add_1"


def test_chains_are_followed_input_side_first() -> None:
    w = numpy_helper.from_array(np.ones((2, 2), np.float16), "w")
    nodes = [
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT, name="c"),
        helper.make_node("Transpose", ["wf"], ["wt"], name="t"),
        helper.make_node("MatMul", ["x", "wt"], ["y"], name="mm"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        initializer=[w],
    )
    ir = build_graph_ir(graph)
    assert ir.constants["wt"] == ["Cast", "Transpose"]
    assert ir.names[: len(ir.onnx_nodes)] == ["mm"]
