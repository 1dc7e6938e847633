"""Accuracy you can trust, through the real jobs: a pre-quantized model is refused, exclusion
advice after a dynamic run names only what dynamic quantization touched (and following it
changes the model), a CTC model is judged by the text it reads, synthetic data gives no verdict,
and two identical models timed interleaved are never told apart."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.core.perf.latency_stats import median_ratio_interval
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models

pytestmark = pytest.mark.e2e  # every test here starts a worker process


def _succeeded(recipe: object) -> Any:
    job = run_job(recipe, timeout=300)  # type: ignore[arg-type]
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    return job.report.result


def test_a_weight_only_int8_model_is_refused_with_what_was_found(tmp_path: Path) -> None:
    src = models.save(models.int8_table_embedding(behind="mul"), tmp_path / "int8.onnx")
    out = tmp_path / "again.onnx"
    job = run_job(QuantRecipe(model=str(src), output=str(out), mode="dynamic"), timeout=300)
    assert job.state is JobState.FAILED
    assert "already quantized" in str(job.error) and "table_int8" in str(job.error)
    assert not out.exists()


def test_exclusion_advice_after_a_dynamic_run_is_true(tmp_path: Path) -> None:
    src = models.save(models.matmul_then_elementwise(), tmp_path / "m.onnx")
    data = tmp_path / "eval.npz"
    np.savez(data, x=np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32))
    first = tmp_path / "dyn.onnx"
    _succeeded(QuantRecipe(model=str(src), output=str(first), mode="dynamic"))
    analysis = _succeeded(
        AnalyzeRecipe(
            float_model=str(src), quant_model=str(first), data=DataSource("npz", str(data))
        )
    )
    assert analysis.quantized_nodes == ["proj"]
    assert analysis.worst_excludable(3) == ["proj"]  # never Sub, Min or Reshape
    assert analysis.verdict is not None
    for tip in analysis.verdict.suggestions:
        assert not any(name in tip for name in ("shift", "cap_values", "split"))
    # Following advice that names a node dynamic mode does not quantize would change nothing;
    # the advice given changes the model.
    no_change, changed = tmp_path / "no_change.onnx", tmp_path / "changed.onnx"
    _succeeded(
        QuantRecipe(model=str(src), output=str(no_change), mode="dynamic", exclude=("shift",))
    )
    # the advice changes the model: excluding its one quantized node leaves nothing quantized,
    # which is refused rather than written as the float model again
    job = run_job(
        QuantRecipe(
            model=str(src),
            output=str(changed),
            mode="dynamic",
            exclude=tuple(analysis.worst_excludable(1)),
        ),
        timeout=300,
    )
    assert job.state is JobState.FAILED and "No operator was quantized" in str(job.error)
    assert no_change.read_bytes() == first.read_bytes() and not changed.exists()


def _ctc_analysis(tmp_path: Path) -> tuple[Path, Path, Path, Analysis]:
    """The CTC head quantized dynamically and analysed on 12 random "lines": (model, lines,
    quantized, analysis)."""
    src = tmp_path / "ctc.onnx"
    if not src.exists():
        models.save(models.ctc_recogniser(), src)
    rng = np.random.default_rng(1)
    lines = tmp_path / "lines.npz"
    np.savez(lines, x=rng.standard_normal((12, 24, 16)).astype(np.float32))
    quant = tmp_path / "ctc_dyn.onnx"
    _succeeded(QuantRecipe(model=str(src), output=str(quant), mode="dynamic"))
    real = _succeeded(
        AnalyzeRecipe(
            float_model=str(src), quant_model=str(quant), data=DataSource("npz", str(lines))
        )
    )
    assert real is not None
    return src, lines, quant, real


def test_a_ctc_model_is_judged_by_the_text_it_reads(tmp_path: Path) -> None:
    src, _lines, quant, real = _ctc_analysis(tmp_path)
    assert real.task is not None and real.task.task == "ctc", real.task
    keys = [f.key for f in real.task.figures]
    assert keys == ["text_agreement", "cer"]
    assert real.verdict is not None and real.verdict.level is not None
    assert "CTC" in real.verdict.task and real.verdict.data == "12 samples from lines.npz"
    assert real.data is not None and real.data.kind == "npz" and real.data.samples == 12

    synthetic = _succeeded(
        AnalyzeRecipe(
            float_model=str(src),
            quant_model=str(quant),
            data=DataSource("synthetic", samples=4),
        )
    )
    assert synthetic.verdict is not None and synthetic.verdict.level is None
    assert synthetic.data is not None and not synthetic.data.representative
    assert synthetic.task is not None and synthetic.task.figures  # the numbers are still shown


def test_analyze_takes_the_shape_and_range_overrides(tmp_path: Path) -> None:
    src = models.save(models.char_ids_behind_cast(rows=48), tmp_path / "chars.onnx")
    copy = tmp_path / "chars_copy.onnx"
    shutil.copy(src, copy)
    analysis = _succeeded(
        AnalyzeRecipe(
            float_model=str(src),
            quant_model=str(copy),
            data=DataSource("synthetic", samples=2),
            shapes=("chars_in=1x7",),
            ranges=("chars_in=0:10",),
        )
    )
    assert analysis.samples == 2
    # an override that does not fit fails the job with the input named
    job = run_job(
        AnalyzeRecipe(
            float_model=str(src),
            quant_model=str(copy),
            data=DataSource("synthetic", samples=2),
            shapes=("nothere=1x7",),
        ),
        timeout=300,
    )
    assert job.state is JobState.FAILED and "nothere" in str(job.error)


@pytest.mark.parametrize("runs", [200])
def test_two_identical_models_timed_interleaved_are_not_told_apart(
    tmp_path: Path, runs: int
) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "a.onnx")
    twin = tmp_path / "b.onnx"
    shutil.copy(src, twin)
    recipe = BenchRecipe(models=(str(src), str(twin)), warmup=20, runs=runs)
    latency = _succeeded(recipe)
    a, b = latency.rows
    assert a.ok and b.ok and len(a.samples_ms) == len(b.samples_ms) == runs
    interval = median_ratio_interval(b.samples_ms, a.samples_ms)
    assert not interval.slower and not interval.faster, interval.text()


def test_a_quantization_that_quantized_nothing_is_refused(tmp_path: Path) -> None:
    src = models.save(models.matmul_inside_if(), tmp_path / "if.onnx")
    job = run_job(
        QuantRecipe(model=str(src), output=str(tmp_path / "q.onnx"), mode="dynamic"), timeout=300
    )
    assert job.state is JobState.FAILED  # refused: the "quantized" model would be the float one
    said = str(job.error)
    assert "No operator was quantized" in said and "MatMul" in said and "If" in said
    assert "Nothing was written" in said and not (tmp_path / "q.onnx").exists()


def test_a_worker_that_crashes_proving_its_result_is_run_again_with_the_proof_isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGESTUDIO_FAULT", "proof-crash")  # the worker segfaults in the proof
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    out = tmp_path / "q.onnx"
    job = run_job(QuantRecipe(model=str(src), output=str(out), mode="dynamic"), timeout=300)
    assert job.state is JobState.SUCCEEDED, job.error
    assert any("SIGSEGV" in w and "separate process" in w for w in job.warnings)
    assert out.is_file()


def test_a_ctc_model_reads_text_with_the_dictionary_beside_it(tmp_path: Path) -> None:
    symbols = [chr(ord("A") + k) for k in range(38)]  # classes 1–38, 39 is the space
    (tmp_path / "ctc_keys.txt").write_text("\n".join(symbols) + "\n", encoding="utf-8")
    src, lines, quant, real = _ctc_analysis(tmp_path)
    assert real.task is not None and "spelled with ctc_keys.txt" in real.task.note
    assert "characters of text" in real.task.note
    assert real.task.examples and all("'" in e for e in real.task.examples)  # text
    job = run_job(
        AnalyzeRecipe(
            float_model=str(src),
            quant_model=str(quant),
            data=DataSource("npz", str(lines)),
            alphabet=str(tmp_path / "nope.txt"),
        ),
        timeout=300,
    )
    assert job.state is JobState.FAILED and "nope.txt cannot be read" in str(job.error)


def test_a_frame_tagger_is_judged_by_its_decisions_frame_by_frame(tmp_path: Path) -> None:
    src = models.save(models.frame_tagger(), tmp_path / "tagger.onnx")
    rng = np.random.default_rng(2)
    clips = tmp_path / "clips.npz"
    x = rng.standard_normal((16, 50, 16)).astype(np.float32)
    np.savez(clips, x=x)
    quant = tmp_path / "tagger_q.onnx"
    _succeeded(QuantRecipe(model=str(src), output=str(quant), mode="dynamic"))
    real = _succeeded(
        AnalyzeRecipe(
            float_model=str(src), quant_model=str(quant), data=DataSource("npz", str(clips))
        )
    )
    assert real.task is not None and real.task.task == "multilabel", real.task
    figures = {f.key: f.value for f in real.task.figures}
    # by hand, with onnxruntime: the decisions of both models at 0.5
    import onnxruntime as ort

    def decisions(path: Path) -> np.ndarray:  # sample by sample, as analysed: a dynamic
        session = ort.InferenceSession(str(path))  # range is computed per run
        return np.concatenate([session.run(None, {"x": s[None]})[0] for s in x]) >= 0.5

    f, q = decisions(src), decisions(quant)
    assert figures["frame_agreement"] == pytest.approx((f == q).all(axis=-1).mean())
    tp, fp, fn = (f & q).sum(), (~f & q).sum(), (f & ~q).sum()
    assert figures["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
