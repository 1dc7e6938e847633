"""Graph IR and layout: deterministic, topological (every edge points down), fast paths safe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.model.graph_ir import NodeKind, build_graph_ir
from edgestudio.core.model.layout import NODE_WIDTH, layered_layout
from edgestudio.core.progress import CancelledError
from tests import models
from tests.graph_builders import conv_branches, transformer_like


def _check_layout(graph: onnx.GraphProto) -> None:
    ir = build_graph_ir(graph)
    first = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    second = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    assert np.array_equal(first.x, second.x) and np.array_equal(first.y, second.y)
    if len(first.cyclic) == 0:
        assert (first.y[ir.edge_dst] > first.y[ir.edge_src]).all()
    # no two nodes overlap within a layer
    for layer in np.unique(first.layer):
        xs = np.sort(first.x[first.layer == layer])
        assert (np.diff(xs) >= NODE_WIDTH - 1e-6).all()


def test_ir_of_conv_model() -> None:
    ir = build_graph_ir(models.conv_relu_gemm().graph)
    assert ir.node_count == 4 + 2  # four operators, one input, one output
    assert ir.op_types[:4] == ["Conv", "Relu", "Flatten", "Gemm"]
    assert list(ir.kinds[4:]) == [NodeKind.INPUT, NodeKind.OUTPUT]
    edges = {
        (ir.names[s], ir.names[d], t)
        for s, d, t in zip(ir.edge_src, ir.edge_dst, ir.edge_tensor, strict=True)
    }
    assert ("x", "conv", "x") in edges and ("fc", "y", "y") in edges
    assert ("conv", "relu", "c") in edges
    assert ir.initializer_names == {"conv.w", "conv.b", "fc.w", "fc.b"}
    assert ir.tensor_info["fc.w"].text() == "float32[10, 256]"


def test_search_by_name_op_and_tensor() -> None:
    ir = build_graph_ir(models.conv_relu_gemm().graph)
    assert ir.find("relu") == [1]
    assert ir.find("GEMM") == [3]
    assert ir.find("conv.w") == [0]  # a weight tensor name
    assert ir.find("") == []


def test_outer_scope_tensors_of_subgraphs_make_edges() -> None:
    ir = build_graph_ir(models.with_if_subgraph().graph)
    if_node = ir.op_types.index("If")
    sources = {ir.names[s] for s, d in zip(ir.edge_src, ir.edge_dst, strict=True) if d == if_node}
    assert sources == {"cond", "a"}  # 'a' is read only inside the branches


@pytest.mark.parametrize("builder", [transformer_like, conv_branches])
def test_big_graphs_lay_out_down_and_narrow(builder) -> None:  # type: ignore[no-untyped-def]
    model = builder(5000)
    _check_layout(model.graph)
    ir = build_graph_ir(model.graph)
    layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    assert layout.width < 20 * NODE_WIDTH  # trunks stay straight: no drift sideways


def test_cycle_does_not_hang() -> None:
    src = np.array([0, 1, 2, 2, 3])
    dst = np.array([1, 2, 1, 4, 4])  # 1 -> 2 -> 1 is a cycle; 4 hangs below it
    layout = layered_layout(5, src, dst)
    assert set(layout.cyclic.tolist()) == {1, 2, 4}
    assert layout.y[4] >= layout.y[1]


def test_cancel_stops_the_layout() -> None:
    model = transformer_like(20_000)
    ir = build_graph_ir(model.graph)
    with pytest.raises(CancelledError):
        layered_layout(ir.node_count, ir.edge_src, ir.edge_dst, cancelled=lambda: True)


def test_progress_reaches_one() -> None:
    ir = build_graph_ir(transformer_like(2000).graph)
    seen: list[float] = []
    layered_layout(ir.node_count, ir.edge_src, ir.edge_dst, progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen)


@pytest.mark.e2e
def test_every_node_suite_model_lays_out(node_suite_models: list[Path]) -> None:
    for path in node_suite_models:
        _check_layout(onnx.load(str(path)).graph)


def test_light_zoo_models_lay_out(light_zoo_models: list[Path]) -> None:
    assert len(light_zoo_models) == 9
    for path in light_zoo_models:
        _check_layout(onnx.load(str(path), load_external_data=False).graph)
