"""The in-memory stand-ins for ORT's whole-model quantization steps give what ORT's own give:
the same inferred model from the reload with shape inference (also where a weight big enough
to go external is one that shape inference would read), the same node order from the sort,
and the caller's model untouched."""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.quant.accel import model_steps as quant_model_steps
from edgestudio.core.quant.accel import ort_guard
from tests import graph_builders, models


def _big_shape_reshape() -> onnx.ModelProto:
    """A Reshape whose shape initializer (124 int64s) is big enough for ORT's round trip to
    move it out of the model: there shape inference cannot read it (output shape unknown),
    in a plain in-memory inference it could."""
    target = [2] + [1] * 123
    shape = numpy_helper.from_array(np.array(target, np.int64), "shape")
    small = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "small")
    nodes = [
        helper.make_node("Add", ["x", "small"], ["a"], name="add"),
        helper.make_node("Reshape", ["a", "shape"], ["y"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [shape, small],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = {
    "big_shape_reshape": _big_shape_reshape,
    "residual_mlp": lambda: graph_builders.residual_mlp(60, hidden=32),  # 4 KB weights
    "cnn": lambda: graph_builders.cnn_like(blocks=3),
    "if_subgraph": models.with_if_subgraph,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reload_with_shape_inference_matches_orts(case: str) -> None:
    from onnxruntime.quantization.quant_utils import save_and_reload_model_with_shape_infer

    model = CASES[case]()
    before = model.SerializeToString()
    want = save_and_reload_model_with_shape_infer(copy.deepcopy(model))
    got = quant_model_steps.save_and_reload_model_with_shape_infer(
        model, save_and_reload_model_with_shape_infer
    )
    assert got.SerializeToString() == want.SerializeToString()
    assert model.SerializeToString() == before  # the caller's model is as it was


def test_a_big_weight_stays_unreadable_to_shape_inference_as_in_orts_round_trip() -> None:
    """The case above is only a test if the two inferences really differ."""
    model = _big_shape_reshape()
    plain = onnx.shape_inference.infer_shapes(model)
    ours = quant_model_steps.save_and_reload_model_with_shape_infer(model, lambda m: m)
    assert plain.SerializeToString() != ours.SerializeToString()
    assert [t.data_location for t in ours.graph.initializer] == [TensorProto.DEFAULT] * 2
    assert ours.graph.initializer[0].HasField("data_location")  # ORT's reload sets it
    assert not ours.graph.initializer[1].HasField("data_location")  # too small to move


@pytest.mark.parametrize("where", ["initializer", "constant_attribute", "subgraph_constant"])
def test_a_model_with_external_references_takes_orts_path(where: str) -> None:
    model = _big_shape_reshape() if where == "initializer" else models.with_if_subgraph()
    if where == "initializer":
        tensor = model.graph.initializer[0]
    else:
        constant = helper.make_node(
            "Constant", [], ["c"], name="c", value=numpy_helper.from_array(np.ones(4, np.float32))
        )
        graph = (
            model.graph
            if where == "constant_attribute"
            else next(a.g for n in model.graph.node for a in n.attribute if a.type == a.GRAPH)
        )
        graph.node.insert(0, constant)
        tensor = graph.node[0].attribute[0].t
    tensor.data_location = TensorProto.EXTERNAL
    called: list[onnx.ModelProto] = []
    quant_model_steps.save_and_reload_model_with_shape_infer(model, called.append)
    assert called == [model]


@pytest.mark.parametrize(
    "build",
    [
        lambda: graph_builders.residual_mlp(80),
        lambda: graph_builders.transformer_like(60),
        models.with_if_subgraph,
    ],
)
def test_topological_sort_gives_orts_order(build: object) -> None:
    from onnxruntime.quantization.onnx_model import ONNXModel

    model = build()  # type: ignore[operator]
    nodes = list(model.graph.node)
    shuffled = [nodes[k] for k in np.random.default_rng(0).permutation(len(nodes))]
    model.graph.ClearField("node")
    model.graph.node.extend(shuffled)
    stock, ours = ONNXModel(copy.deepcopy(model)), ONNXModel(copy.deepcopy(model))
    ort_guard.replaced_functions()["ONNXModel.topological_sort"](stock)
    quant_model_steps.topological_sort(ours)
    assert [n.name for n in ours.nodes()] == [n.name for n in stock.nodes()]
    assert ours.model.SerializeToString() == stock.model.SerializeToString()
