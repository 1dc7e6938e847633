"""Per-node cost against hand counts, one operator family at a time (models built in code)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.model.cost import model_cost
from edgestudio.resources import SAMPLE_MODEL
from tests import models


def _one(
    node: onnx.NodeProto,
    inputs: dict[str, list[int]],
    inits: list[onnx.TensorProto],
    opset: int = 17,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _w(name: str, *shape: int, dtype: type = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(shape, dtype), name)


def test_the_digits_sample_costs_its_hand_count() -> None:
    # conv 1→16 3×3 at 8×8: 16·64·9 = 9,216; conv 16→32 3×3 at 8×8: 32·64·144 = 294,912;
    # conv 32→32 3×3 at 4×4: 32·16·288 = 147,456; Gemm 512→64: 32,768; Gemm 64→10: 640
    cost = model_cost(onnx.load(str(SAMPLE_MODEL)), {"image": [1, 1, 8, 8]})
    assert cost.total.macs == 484_992 and not cost.unknown
    assert cost.total.params == 47_530 and cost.total.param_bytes == 4 * 47_530
    # the largest live set: conv 2's 8 KiB output beside its ReLU's
    assert cost.total.peak_activation_bytes == 2 * 32 * 64 * 4


@pytest.mark.parametrize(
    ("group", "dilation", "macs"),
    [
        (1, 1, 8 * 6 * 6 * 4 * 9),  # out 8×6×6, each 4 channels × 9 taps
        (2, 1, 8 * 6 * 6 * 2 * 9),  # groups of 2 input channels
        (1, 2, 8 * 4 * 4 * 4 * 9),  # dilation: a smaller output, the same taps
    ],
)
def test_conv_with_groups_and_dilation(group: int, dilation: int, macs: int) -> None:
    node = helper.make_node(
        "Conv", ["x", "w", "b"], ["y"], group=group, dilations=[dilation, dilation]
    )
    model = _one(node, {"x": [1, 4, 8, 8]}, [_w("w", 8, 4 // group, 3, 3), _w("b", 8)])
    cost = model_cost(model, {"x": [1, 4, 8, 8]}).nodes[0]
    assert cost.macs == macs and cost.flops == 2 * macs + cost.output_bytes // 4
    assert cost.params == 8 * (4 // group) * 9 + 8


def test_conv_transpose_counts_per_input_element() -> None:
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
    model = _one(node, {"x": [1, 4, 5, 5]}, [_w("w", 4, 6, 3, 3)])
    assert model_cost(model, {"x": [1, 4, 5, 5]}).nodes[0].macs == 4 * 25 * 6 * 9


def test_batched_and_broadcast_matmul_and_gemm() -> None:
    # attention scores: [2 heads, 7, 16] × [2, 16, 7] → 2·7·7 outputs × 16
    scores = helper.make_node("MatMul", ["q", "k"], ["s"])
    model = _one(scores, {"q": [2, 7, 16], "k": [2, 16, 7]}, [])
    assert model_cost(model, {"q": [2, 7, 16], "k": [2, 16, 7]}).nodes[0].macs == 2 * 49 * 16
    broadcast = helper.make_node("MatMul", ["x", "w"], ["y"])  # [3, 5, 8] × [8, 4]
    model = _one(broadcast, {"x": [3, 5, 8]}, [_w("w", 8, 4)])
    assert model_cost(model, {"x": [3, 5, 8]}).nodes[0].macs == 3 * 5 * 4 * 8
    gemm = helper.make_node("Gemm", ["a", "w"], ["y"], transA=1)  # Aᵀ: K is A's first dim
    model = _one(gemm, {"a": [10, 3]}, [_w("w", 10, 6)])
    assert model_cost(model, {"a": [10, 3]}).nodes[0].macs == 3 * 6 * 10


def test_recurrent_layers_count_every_step() -> None:
    # bidirectional LSTM, 7 steps, batch 1, input 20, hidden 12: 7·2·(4·12)·(20+12)
    cost = model_cost(
        models.lstm_with_state(features=20, hidden=12),
        {"x": [7, 1, 20], "h0": [2, 1, 12], "c0": [2, 1, 12]},
    )
    assert cost.nodes[0].macs == 7 * 2 * 48 * 32
    cost = model_cost(models.gru_model(), {"x": [5, 2, 4], "sequence_lens": [2], "h0": [1, 2, 8]})
    assert cost.nodes[0].macs == 5 * 2 * 1 * 24 * (4 + 8)  # GRU: 3 gates of 8


def test_pooling_and_elementwise_are_flops_not_macs() -> None:
    pool = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    cost = model_cost(_one(pool, {"x": [1, 3, 8, 8]}, []), {"x": [1, 3, 8, 8]}).nodes[0]
    assert (cost.macs, cost.flops) == (0, 3 * 16 * 4)
    add = helper.make_node("Add", ["x", "x"], ["y"])
    cost = model_cost(_one(add, {"x": [2, 5]}, []), {"x": [2, 5]}).nodes[0]
    assert (cost.macs, cost.flops, cost.output_bytes) == (0, 10, 40)


def test_an_int8_weight_counts_one_byte_per_value() -> None:
    node = helper.make_node("DequantizeLinear", ["wq", "s"], ["w"])
    mm = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [node, mm],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_w("wq", 8, 4, dtype=np.int8), _w("s", 1)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    cost = model_cost(model, {"x": [1, 8]})
    assert cost.total.param_bytes == 32 + 4 and cost.total.macs == 32


def test_peak_memory_frees_a_tensor_after_its_last_reader() -> None:
    # x(4 KiB) → a(4 KiB) → b(4 KiB) → c, with x read again by the last node: x stays alive
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Relu", ["a"], ["b"]),
        helper.make_node("Add", ["b", "x"], ["c"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1024])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    # after Relu 2: x, a, b alive (a is freed after it) = 12 KiB; then x, b, c = 12 KiB
    assert model_cost(model, {"x": [1024]}).total.peak_activation_bytes == 3 * 4096


def test_weights_exported_as_constant_nodes_are_parameters() -> None:
    const = helper.make_node(
        "Constant", [], ["w"], value=numpy_helper.from_array(np.ones((8, 4), np.float32))
    )
    mm = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [const, mm],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    cost = model_cost(model, {"x": [2, 8]})
    assert cost.total.params == 32 and cost.total.param_bytes == 128
    assert cost.nodes[1].params == 32 and cost.nodes[0].params == 0  # at the MatMul reading it
    assert cost.total.macs == 2 * 4 * 8


def test_kernels_slow_for_their_work_are_marked() -> None:
    from edgestudio.core.model.cost_recipe import ModelCost, NodeCost
    from edgestudio.core.perf.perf_results import Profile, ProfiledNode
    from edgestudio.core.perf.time_vs_work import kernel_work

    cost = ModelCost(
        [
            NodeCost("conv", "Conv", macs=1_000_000, flops=2_000_000),
            NodeCost("relu", "Relu", flops=10_000),
            NodeCost("mm", "MatMul", macs=500_000, flops=1_000_000),
            NodeCost("t", "Transpose"),
        ]
    )
    profile = Profile(
        [
            ProfiledNode(
                "conv_relu", "FusedConv", "CPU", 100.0, 0.5, covers=["conv", "relu"], fused=True
            ),
            ProfiledNode("mm", "MatMul", "CPU", 50.0, 0.25, covers=["mm"]),
            ProfiledNode("add", "Add", "CPU", 40.0, 0.2, covers=["relu"]),
            ProfiledNode("t", "Transpose", "CPU", 9.0, 0.05, covers=["t"]),
        ]
    )
    rows = {r.node: r for r in kernel_work(profile, cost)}
    assert rows["conv_relu"].macs == 1_000_000 and rows["conv_relu"].ns_per_work == 0.1
    assert rows["add"].work == 5_000 and rows["add"].ns_per_work == 8.0  # FLOPs / 2
    assert "t" not in rows  # no work: not on a log axis
    assert [n for n, r in rows.items() if r.slow] == ["add"]  # 80× the median 0.1 ns/MAC


def test_work_inside_a_loop_body_is_counted_times_its_trips() -> None:
    from edgestudio.core.model.cost import model_cost

    fixed = model_cost(models.loop_matmul(trips=5), {"x": [1, 16]})
    loop = fixed.by_node()["unrolled"]
    assert loop.macs == 5 * 16 * 16 and loop.body == "body × 5 iterations" and loop.known
    assert loop.params == 16 * 16 + 2  # the body reads the outer weight (+ M and the condition)
    assert fixed.total.macs == 5 * 16 * 16
    dynamic = models.loop_matmul(trips=None)
    per_step = model_cost(dynamic, {"x": [1, 16], "steps": [1, 7]}).by_node()["unrolled"]
    assert per_step.macs == 16 * 16 and "per iteration" in per_step.body
    measured = model_cost(dynamic, {"x": [1, 16], "steps": [1, 7]}, trips={"M": 7})
    assert measured.by_node()["unrolled"].macs == 7 * 16 * 16
    assert [n.node for n in measured.bodies] == ["unrolled"]
