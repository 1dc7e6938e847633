"""onnxruntime's quantizer failures seen on real models, each reproduced with a model built in
code: an automatic, noted retry that works, or a refusal that names the node and the way on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.model.result_gate import run_in_process
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quantizer_fixes import fold_weight_casts
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models

SYNTHETIC = DataSource("synthetic", samples=4, seed=0)


def _quantize(src: Path, out: Path, **options: object):  # type: ignore[no-untyped-def]
    return run_job(QuantRecipe(model=str(src), output=str(out), calib=SYNTHETIC, **options))  # type: ignore[arg-type]


@pytest.mark.e2e
def test_per_channel_bias_adjustment_failure_is_retried_without_it(tmp_path: Path) -> None:
    src = models.save(models.gemm_row_bias(), tmp_path / "m.onnx")
    job = _quantize(src, tmp_path / "q.onnx", mode="qdq", per_channel=True)
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    notes = " ".join(job.report.result.notes)
    assert "QDQDisableWeightAdjustForInt32Bias" in notes and "truth value" in notes
    assert "did not run" not in notes  # the retry's own note says why, once
    result = onnx.load(str(tmp_path / "q.onnx"))
    weight_dq = [
        n
        for n in result.graph.node
        if n.op_type == "DequantizeLinear" and n.input[0].startswith("W")
    ]
    assert weight_dq and any(a.name == "axis" for a in weight_dq[0].attribute)  # per-channel
    assert run_in_process(tmp_path / "q.onnx", {"x": np.ones((2, 8), np.float32)}).ok


@pytest.mark.e2e
def test_float16_weights_behind_casts_are_stored_first_and_quantized(tmp_path: Path) -> None:
    src = models.save(models.fp16_weights_behind_casts(), tmp_path / "m.onnx")
    before = src.read_bytes()
    for mode in ("dynamic", "qoperator", "qdq"):
        out = tmp_path / f"{mode}.onnx"
        job = _quantize(src, out, mode=mode, preprocess=False)
        assert job.state is JobState.SUCCEEDED, (mode, job.error)
        assert job.report is not None
        assert any("stored as float32 first" in n for n in job.report.result.notes)
        result = onnx.load(str(out))
        nodes = result.graph.node
        assert any(
            len(t.dims) == 4 and t.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
            for t in result.graph.initializer
        ), mode  # the weight is stored in 8 bits
        ops = {n.op_type for n in nodes}
        assert ops & {"ConvInteger", "QLinearConv", "DequantizeLinear"}, (mode, ops)
        assert "Conv" not in ops or mode == "qdq"  # the conv itself is quantized
        assert not any(n.name.startswith("InsertedPrecisionFreeCast") for n in nodes)
    assert src.read_bytes() == before  # the input model is never modified


def test_fold_weight_casts_is_exact_and_keeps_shared_weights() -> None:
    model = models.fp16_weights_behind_casts()
    w16 = onnx.numpy_helper.to_array(model.graph.initializer[0])
    assert fold_weight_casts(model) == [
        "InsertedPrecisionFreeCast_W",
        "InsertedPrecisionFreeCast_B",
    ]
    stored = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    assert set(stored) == {"W", "B"} and stored["W"].dtype == np.float32
    assert np.array_equal(stored["W"], w16.astype(np.float32))
    assert [n.op_type for n in model.graph.node] == ["Conv"]


@pytest.mark.e2e
def test_a_node_the_quantizer_fails_on_is_kept_in_float(tmp_path: Path) -> None:
    src = models.save(models.sklearn_like(), tmp_path / "m.onnx")
    out = tmp_path / "q.onnx"
    job = _quantize(src, out, mode="qoperator")
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    assert any(
        "failed on node 'linear'" in n and "kept in float" in n for n in job.report.result.notes
    )
    nodes = {n.name: n.op_type for n in onnx.load(str(out)).graph.node}
    assert nodes.get("linear") == "MatMul"  # kept in float
    assert "QLinearMatMul" in nodes.values()  # the rest quantized
    assert run_in_process(out, {"x": np.ones((2, 4), np.float32)}).ok


@pytest.mark.e2e
def test_nothing_left_to_quantize_after_the_retry_is_a_refusal(tmp_path: Path) -> None:
    model = models.sklearn_like()
    model.graph.node[0].op_type = "Identity"  # no quantizable op before the failing one
    del model.graph.node[0].input[1:]
    src = models.save(model, tmp_path / "m.onnx")
    job = _quantize(src, tmp_path / "q.onnx", mode="qoperator")
    assert job.state is JobState.FAILED
    assert "Keeping 'linear' in float gets past it but leaves nothing quantized" in str(job.error)
    assert "--mode" in str(job.error) and not (tmp_path / "q.onnx").exists()


def test_a_node_onnxruntime_rejects_in_the_result_is_kept_in_float(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A QDQ result onnxruntime cannot load (seen: a Transpose of an audio transcription
    model) names the node in its error; that node is kept in float and the rest quantized.
    The refusal is played by the gate here: no small model makes onnxruntime 1.32 write one."""
    from edgestudio.core.model.result_gate import GateResult
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.quant import quant_proof, quantize

    seen: list[Path] = []

    def gate(path: Path, feeds: dict[str, np.ndarray], extended_only: bool = False) -> GateResult:
        seen.append(path)
        if _conv_is_quantized(path):
            return GateResult(
                False,
                "onnxruntime cannot load it: Conv node 'conv': Could not "
                "find an implementation for the node",
            )
        return run_in_process(path, feeds, extended_only)

    monkeypatch.setattr(quant_proof, "run_in_process", gate)
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    staging = tmp_path / "staging"
    staging.mkdir()
    report = quantize.run_quantize(
        QuantRecipe(model=str(src), output=str(tmp_path / "q.onnx"), calib=SYNTHETIC, mode="qdq"),
        RecordingReporter(),
        staging,
    )
    notes = " ".join(report.result.notes)
    assert "rejects the quantized form of 'conv'" in notes and "kept in float" in notes
    assert len(seen) == 3  # with and without pre-processing, then keeping 'conv' in float
    assert not _conv_is_quantized(staging / "q.onnx")
    assert "Precision: activations" in notes and "int8" in notes  # the Gemm is quantized


def _conv_is_quantized(path: Path) -> bool:
    """Whether node 'conv' reads a de-quantized weight."""
    nodes = onnx.load(str(path)).graph.node
    conv = next(n for n in nodes if n.name == "conv")
    return any(n.op_type == "DequantizeLinear" and conv.input[1] in n.output for n in nodes)


def test_a_refusal_naming_a_node_the_optimiser_made_keeps_its_operator_type(
    tmp_path: Path,
) -> None:
    """onnxruntime's optimiser can make the node it then rejects (a tf2onnx transcriber, after
    static quantization): the operator type it names is kept in float, every node of it."""
    from edgestudio.core.quant.fallbacks import rejected_nodes

    src = models.save(models.fixed_batch_concats(), tmp_path / "m.onnx")
    recipe = QuantRecipe(model=str(src), mode="qdq", calib=SYNTHETIC)
    made_by_optimiser = (
        "Concat node 'Concat_token_7': Invalid attribute perm {0, 2, 3, 1}, input shape = {36}"
    )
    assert rejected_nodes(made_by_optimiser, src, recipe) == ["pad_concat", "shape_concat"]
    named = "Concat node 'pad_concat': something"
    assert rejected_nodes(named, src, recipe) == ["pad_concat"]
    kept = QuantRecipe(model=str(src), mode="qdq", calib=SYNTHETIC, exclude=("pad_concat",))
    assert rejected_nodes(named, src, kept) == []  # already kept: nothing new to try
