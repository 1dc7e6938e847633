"""Opset and dims conversions through the real worker, each checked against the original."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.convert.conversion_plan import plan_dim_changes, plan_opset_conversion
from edgestudio.core.convert.convert_recipes import ConvertRecipe, DimChange
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.e2e
def test_opset_upgrade_is_equivalent_and_input_untouched(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(opset=13), tmp_path / "m.onnx")
    before = _sha(src)
    out = tmp_path / "m17.onnx"
    job = run_job(ConvertRecipe(model=str(src), output=str(out), opset=17))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.check is not None
    assert job.report.check.passed and job.report.check.verdict() == "equivalent"
    assert [c.label.split(" (")[0] for c in job.report.check.cases] == ["as specified", "batch=3"]
    assert onnx.load(str(out)).opset_import[0].version == 17
    assert _sha(src) == before


@pytest.mark.e2e
def test_conversion_with_external_data_input(tmp_path: Path) -> None:
    src = models.external_weights(tmp_path)
    job = run_job(ConvertRecipe(model=str(src), output=str(tmp_path / "o.onnx"), opset=18))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.passed


@pytest.mark.e2e
def test_downgrade_below_an_operator_is_blocked_up_front(tmp_path: Path) -> None:
    plan = plan_opset_conversion(models.gelu_model(), 17)
    assert not plan.ok and "Gelu (opset 20)" in plan.blockers[0]
    src = models.save(models.gelu_model(), tmp_path / "gelu.onnx")
    job = run_job(ConvertRecipe(model=str(src), output=str(tmp_path / "o.onnx"), opset=17))
    assert job.state is JobState.FAILED
    assert "Gelu (opset 20)" in (job.error or "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gelu.onnx"]


def test_a_model_of_another_domain_only_is_told_why_there_is_nothing_to_convert() -> None:
    """A scikit-learn export (ai.onnx.ml operators, no ai.onnx opset): the refusal says why
    and what does apply, instead of only that no opset is declared."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml", norm="L2")],
        "ml",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1)])
    plan = plan_opset_conversion(model, 17)
    assert not plan.ok
    assert "its operators come from ai.onnx.ml" in plan.blockers[0]
    assert "benchmark and profile apply" in plan.blockers[0]


def test_risky_downgrade_is_flagged() -> None:
    plan = plan_opset_conversion(models.conv_relu_gemm(opset=17), 11)
    assert plan.ok
    assert any("often fails" in w for w in plan.warnings)


@pytest.mark.e2e
def test_static_to_dynamic_batch_is_checked_at_two_sizes(tmp_path: Path) -> None:
    src = models.save(models.fixed_batch_conv(), tmp_path / "fixed.onnx")
    out = tmp_path / "dyn.onnx"
    recipe = ConvertRecipe(
        model=str(src),
        output=str(out),
        dims=(DimChange("x", 0, "batch"), DimChange("y", 0, "batch")),
    )
    job = run_job(recipe)
    assert job.state is JobState.SUCCEEDED, job.error
    check = job.report.check  # type: ignore[union-attr]
    assert check is not None and check.passed
    first, second = check.cases
    assert first.label == "as specified (x 1x3x8x8)" and first.compared  # the original's size
    assert second.label.startswith("batch=3") and second.status() == "could not check"
    assert "original cannot take" in (second.skipped or "")
    shape = onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim
    assert shape[0].dim_param == "batch"


@pytest.mark.e2e
def test_dynamic_to_static(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    out = tmp_path / "static.onnx"
    recipe = ConvertRecipe(
        model=str(src), output=str(out), dims=(DimChange("x", 0, 2), DimChange("y", 0, 2))
    )
    job = run_job(recipe)
    assert job.state is JobState.SUCCEEDED and job.report is not None and job.report.passed
    assert onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 2


def test_baked_reshape_is_warned_before_the_job() -> None:
    plan = plan_dim_changes(models.fixed_batch_reshape(), [DimChange("x", 0, "batch")])
    assert plan.ok
    assert any("flatten_reshape" in w and "[1, 12]" in w for w in plan.warnings)


@pytest.mark.e2e
def test_a_dynamic_axis_the_graph_cannot_honour_fails_the_job(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    out = tmp_path / "o.onnx"
    job = run_job(
        ConvertRecipe(model=str(src), output=str(out), dims=(DimChange("x", 2, "height"),))
    )
    assert job.state is JobState.FAILED
    assert "declares dynamic axes but does not run at batch=3, height=16" in (job.error or "")
    assert not out.exists()


@pytest.mark.parametrize(
    "bad",
    [
        DimChange("nope", 0, "b"),
        DimChange("x", 7, "b"),
        DimChange("x", 0, 0),
        DimChange("x", 0, "not a name"),
    ],
)
def test_invalid_dim_changes_are_blocked(bad: DimChange) -> None:
    assert not plan_dim_changes(models.conv_relu_gemm(), [bad]).ok


@pytest.mark.e2e
def test_a_batch_hard_coded_in_shape_constants_is_freed_and_proven(tmp_path: Path) -> None:
    import numpy as np
    import onnxruntime as ort

    src = models.save(models.fixed_batch_chain(), tmp_path / "fixed.onnx")
    out = tmp_path / "dyn.onnx"
    job = run_job(
        ConvertRecipe(
            model=str(src),
            output=str(out),
            dims=(DimChange("x", 0, "batch"), DimChange("y", 0, "batch")),
        )
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    assert job.report.result.batch_freed == [
        "Reshape 'flatten' [1, 12] → [0, 12]",
        "Reshape 'unflatten' [1, 3, 4] → [0, 3, 4]",
    ]
    second = job.report.check.cases[1]  # type: ignore[union-attr]
    assert second.label.startswith("batch=3") and not second.error
    # each row of a batch of 3 is what the original computes for it alone
    x = np.random.default_rng(0).standard_normal((3, 3, 4)).astype(np.float32)
    got = ort.InferenceSession(str(out)).run(None, {"x": x})[0]
    original = ort.InferenceSession(str(src))
    for i in range(3):
        np.testing.assert_allclose(
            got[i : i + 1], original.run(None, {"x": x[i : i + 1]})[0], rtol=1e-6
        )
    assert onnx.load(str(src)).graph.initializer[0].name == "flat_shape"  # input untouched


def _layer_norm_at_opset_12() -> onnx.ModelProto:
    """What onnxruntime's optimiser writes: LayerNormalization (ONNX's from opset 17) in an
    opset-12 graph, which onnxruntime runs as its own."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node(
                "LayerNormalization", ["r", "g", "b"], ["y"], name="norm", axis=-1, epsilon=1e-5
            ),
        ],
        "ortopt",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [
            numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "g"),
            numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


def test_an_operator_used_before_its_opset_is_set_aside_and_comes_back() -> None:
    from edgestudio.core.convert.ahead_ops import ahead_of_opset, convert_version

    model = _layer_norm_at_opset_12()
    assert [n.name for n in ahead_of_opset(model)] == ["norm"]
    with pytest.raises(Exception, match="LayerNormalization"):
        onnx.version_converter.convert_version(_layer_norm_at_opset_12(), 17)
    converted, held = convert_version(model, 17)
    assert held == ["LayerNormalization"]
    assert [(n.domain, n.op_type) for n in converted.graph.node] == [
        ("", "Relu"),
        ("", "LayerNormalization"),
    ]
    assert [(o.domain, o.version) for o in converted.opset_import] == [("", 17)]
    onnx.checker.check_model(converted)


@pytest.mark.e2e
def test_an_onnxruntime_optimised_model_converts_and_stays_equivalent(tmp_path: Path) -> None:
    src = tmp_path / "ortopt.onnx"
    onnx.save(_layer_norm_at_opset_12(), src)
    job = run_job(ConvertRecipe(model=str(src), output=str(tmp_path / "o.onnx"), opset=17))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.check is not None
    assert job.report.check.verdict().startswith("equivalent")
    assert any("LayerNormalization: used before opset 17" in w for w in job.report.warnings)


def _rows_match(
    out: Path, src: Path, feeds: dict[str, np.ndarray], batch_axes: dict[str, int]
) -> None:
    """Each sample of a batch of 3 through ``out`` is what ``src`` computes for it alone."""
    import onnxruntime as ort

    got = ort.InferenceSession(str(out)).run(None, feeds)
    original = ort.InferenceSession(str(src))
    names = [o.name for o in original.get_outputs()]
    for i in range(3):
        one = {k: np.take(v, [i], axis=batch_axes[k]) for k, v in feeds.items()}
        for name, want, have in zip(names, original.run(None, one), got, strict=True):
            axis = batch_axes.get(name, 0)
            np.testing.assert_allclose(np.take(have, [i], axis=axis), want, rtol=1e-5, atol=1e-6)


@pytest.mark.e2e
def test_a_batch_baked_into_concats_is_freed_and_proven(tmp_path: Path) -> None:
    src = models.save(models.fixed_batch_concats(), tmp_path / "fixed.onnx")
    out = tmp_path / "dyn.onnx"
    job = run_job(
        ConvertRecipe(
            model=str(src),
            output=str(out),
            dims=(DimChange("x", 0, "batch"), DimChange("y", 0, "batch")),
        )
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    assert job.report.result.batch_freed == [
        "Concat 'pad_concat' [1, 4, 2] → [batch, 4, 2]",
        "Concat 'shape_concat' [1] → [0]",
    ]
    x = np.random.default_rng(0).standard_normal((3, 4, 8)).astype(np.float32)
    _rows_match(out, src, {"x": x}, {"x": 0})


@pytest.mark.e2e
@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_recurrent_state_inputs_get_the_batch_of_their_data(tmp_path: Path, op: str) -> None:
    src = models.save(models.lstm_state_at_batch_one(op), tmp_path / "fixed.onnx")
    out = tmp_path / "dyn.onnx"
    job = run_job(ConvertRecipe(model=str(src), output=str(out), dims=(DimChange("x", 1, "b"),)))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.check is not None
    states = ("h0", "c0", "h", "c") if op == "LSTM" else ("h0", "h")
    assert job.report.result.batch_freed == [f"recurrent state '{n}' axis 1 → b" for n in states]
    assert not job.report.check.cases[1].error
    dims = {v.name: v.type.tensor_type.shape.dim for v in onnx.load(str(out)).graph.input}
    assert dims["h0"][1].dim_param == "b"
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((5, 3, 3)).astype(np.float32)}
    feeds |= {
        s: rng.standard_normal((1, 3, 4)).astype(np.float32) for s in states[: len(states) // 2]
    }
    _rows_match(out, src, feeds, {"x": 1, "h0": 1, "c0": 1, "y": 2, "h": 1, "c": 1})
