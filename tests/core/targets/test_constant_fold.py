"""Folding what the fixed sizes made constant, QDQ kept: a detector's anchor row built from
``Shape(input)`` through Q/DQ pairs, as a YOLO head exports it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.targets.constant_fold import fold_constants


def _anchor_row_model() -> onnx.ModelProto:
    """x[1, W] (W dynamic) quantized, plus a row 0…W-1 computed from ``Shape(x)`` by a Range
    whose limit passes through a QuantizeLinear/DequantizeLinear pair; y = x + row."""
    consts = {
        "one": np.array(1, np.int64),
        "s_in": np.array(0.02, np.float32),
        "s_row": np.array(0.25, np.float32),
        "s_lim": np.array(0.25, np.float32),
        "s_out": np.array(0.3, np.float32),
        "z": np.array(0, np.uint8),
        "start": np.array(0.0, np.float32),
        "delta": np.array(1.0, np.float32),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_in", "z"], ["xq"], name="x_q"),
        helper.make_node("DequantizeLinear", ["xq", "s_in", "z"], ["xd"], name="x_dq"),
        helper.make_node("Shape", ["xd"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["width"], name="width", axis=0),
        helper.make_node("Cast", ["width"], ["limit"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("QuantizeLinear", ["limit", "s_lim", "z"], ["lq"], name="limit_q"),
        helper.make_node("DequantizeLinear", ["lq", "s_lim", "z"], ["ld"], name="limit_dq"),
        helper.make_node("Range", ["start", "ld", "delta"], ["row"], name="range"),
        helper.make_node("QuantizeLinear", ["row", "s_row", "z"], ["rq"], name="row_q"),
        helper.make_node("DequantizeLinear", ["rq", "s_row", "z"], ["rd"], name="row_dq"),
        helper.make_node("Add", ["xd", "rd"], ["sum"], name="add"),
        helper.make_node("QuantizeLinear", ["sum", "s_out", "z"], ["yq"], name="y_q"),
        helper.make_node("DequantizeLinear", ["yq", "s_out", "z"], ["y"], name="y_dq"),
    ]
    graph = helper.make_graph(
        nodes,
        "anchor_row",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "width"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "width"])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _fixed(width: int) -> onnx.ModelProto:
    from onnxruntime.tools.onnx_model_utils import fix_output_shapes, make_input_shape_fixed

    model = _anchor_row_model()
    make_input_shape_fixed(model.graph, "x", [1, width])
    fix_output_shapes(model)
    return model


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_a_shape_computed_chain_is_folded_and_the_dq_that_feeds_the_graph_kept() -> None:
    model = _fixed(6)
    before = _run(model, np.linspace(0, 1, 6, dtype=np.float32)[None])
    folded = fold_constants(model)  # shape, width, cast, limit Q and DQ, range, row Q
    assert [op for _, op in folded] == [
        "Shape",
        "Gather",
        "Cast",
        "QuantizeLinear",
        "DequantizeLinear",
        "Range",
        "QuantizeLinear",
    ]
    ops = [n.op_type for n in model.graph.node]
    assert "Range" not in ops and "Shape" not in ops
    kept = {n.name: n for n in model.graph.node}
    assert "row_dq" in kept and "x_dq" in kept  # QDQ the accelerator reads stays as it was
    row = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}["rq"]
    assert row.dtype == np.uint8 and row.tolist() == [0, 4, 8, 12, 16, 20]  # 0…5 at 0.25
    after = _run(model, np.linspace(0, 1, 6, dtype=np.float32)[None])
    np.testing.assert_array_equal(after, before)  # the values the session computed


def test_nothing_constant_leaves_the_model_as_it_is() -> None:
    model = _anchor_row_model()  # the width still dynamic: Shape(x) is not known
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    assert fold_constants(model) == []
    assert model == copy


@pytest.mark.e2e
def test_a_range_on_the_fixed_sizes_is_refused_until_folded(tmp_path: Path) -> None:
    """The provider refuses a Range whose limit it cannot see, and every node whose shape
    follows from it; the target check's fixes fold it and the NPU takes every compute node."""
    from edgestudio.core.targets.target_recipe import TargetCheckRecipe
    from edgestudio.jobs.scheduler import run_job

    src = tmp_path / "anchors.onnx"
    onnx.save(_anchor_row_model(), str(src))
    job = run_job(TargetCheckRecipe(model=str(src), shapes=("x=1x8",)))
    assert job.report is not None, job.error
    check = job.report.result
    assert check.after is not None and check.after.whole, check.after.reasons()
    assert any("folded into constants" in f for f in check.fixes), check.fixes
    # the folded nodes are in the model the user has: placed as folded, not missing
    placed = {n.node: n.placed for n in check.after.nodes}
    assert placed["range"] == "folded" and len(placed) == 13


def test_a_value_a_branch_reads_from_outside_stays_once_folded() -> None:
    """An If's branches read the outer graph's values by name: a folded value they read is
    kept, as an initializer, and the model still loads and computes the same."""
    import onnxruntime as ort
    from onnxruntime.tools.onnx_model_utils import make_input_shape_fixed

    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    branches = {
        op: helper.make_graph(
            [helper.make_node(op, ["x", "width_f"], [f"y_{op}"], name=f"in_{op}")],
            op,
            [],
            [helper.make_tensor_value_info(f"y_{op}", TensorProto.FLOAT, [1, "w"])],
        )
        for op in ("Add", "Sub")
    }
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["width"], name="width", axis=0),
        helper.make_node("Cast", ["width"], ["width_f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node(
            "If",
            ["cond"],
            ["y"],
            name="if",
            then_branch=branches["Add"],
            else_branch=branches["Sub"],
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "branches",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "w"]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "w"])],
        [one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    make_input_shape_fixed(model.graph, "x", [1, 5])
    assert [op for _, op in fold_constants(model)] == ["Shape", "Gather", "Cast"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.arange(5, dtype=np.float32)[None]
    for cond, expected in ((True, x + 5), (False, x - 5)):
        got = session.run(None, {"x": x, "cond": np.array(cond)})[0]
        np.testing.assert_array_equal(got, expected)


@pytest.mark.e2e
def test_a_model_the_fixed_sizes_break_is_said_to_be_broken_by_them(tmp_path: Path) -> None:
    """A branch written for other sizes (a Squeeze of the dim being fixed) fails onnxruntime's
    shape inference once the sizes are fixed: the check says the fix broke it and the way
    around, rather than a provider error."""
    from edgestudio.core.targets.target_recipe import TargetCheckRecipe
    from edgestudio.jobs.scheduler import run_job

    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y_then"], name="same")],
        "then",
        [],
        [helper.make_tensor_value_info("y_then", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Squeeze", ["x", "axes"], ["y_else"], name="squeeze")],
        "else",
        [],
        [helper.make_tensor_value_info("y_else", TensorProto.FLOAT, None)],
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then, else_branch=other)],
        "sizes",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    src = tmp_path / "sizes.onnx"
    onnx.save(model, str(src))
    job = run_job(TargetCheckRecipe(model=str(src), shapes=("x=1x2",), ranges=("cond=ones",)))
    assert job.report is not None, job.error
    after = job.report.result.after
    assert after is not None and "no longer loads, even on the CPU" in after.session_error
    assert "--keep-dynamic" in after.session_error
