"""``--workspace W`` on the commands: each run lands in the workspace as the window records it,
`edgestudio report W` renders it, and a workspace of another model is refused before any work."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from edgestudio.core.workspace import workspace
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests import models
from tests.cli.run import run_cli


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=tmp_path)


@pytest.mark.e2e
def test_commands_add_their_runs_to_a_workspace(tmp_path: Path) -> None:
    for f in (SAMPLE_MODEL, SAMPLE_CALIBRATION, SAMPLE_EVALUATION):
        shutil.copy(f, tmp_path / f.name)
    m, w = SAMPLE_MODEL.name, "w.edgestudio.json"
    for step in (
        ["quantize", m, "-o", "q.onnx", "--calib", SAMPLE_CALIBRATION.name],
        ["analyze", m, "q.onnx", "--data", SAMPLE_EVALUATION.name],
        ["profile", m, "--runs", "5"],
        [
            "tune",
            m,
            "--data",
            SAMPLE_EVALUATION.name,
            "--samples",
            "32",
            "--goal",
            "sqnr>=20",
            "--budget",
            "1",
            "--modes",
            "qdq",
            "--bench-runs",
            "10",
        ],
    ):
        done = _run(tmp_path, *step, "--workspace", w)
        assert done.returncode == 0, done.stderr
    restored = workspace.load(tmp_path / w)
    doc = restored.document
    assert doc.path == (tmp_path / m).absolute() and not restored.model_changed
    # the quantization and its analysis are one run, as in the window
    assert len(doc.runs) == 1 and doc.runs[0].analysis is not None
    assert doc.runs[0].output is not None and Path(doc.runs[0].output).name == "q.onnx"
    assert doc.runs[0].analysis.verdict is not None
    assert doc.profile is not None and doc.profile.nodes
    assert len(doc.tunes) == 1 and doc.tunes[0]["goal"] == "sqnr>=20"
    assert [j.title.split(":")[0] for j in doc.jobs] == ["Quantize", "Analyze", "Profile"]
    assert doc.summary["nodes"] == 11
    report = _run(tmp_path, "report", w)
    assert report.returncode == 0, report.stderr
    data = json.loads((tmp_path / "w_report.json").read_text())
    assert data["quantization"][0]["layers"] and data["profile"]


@pytest.mark.e2e
def test_a_workspace_of_another_model_is_refused_before_the_job(tmp_path: Path) -> None:
    shutil.copy(SAMPLE_MODEL, tmp_path / SAMPLE_MODEL.name)
    first = _run(tmp_path, "profile", SAMPLE_MODEL.name, "--runs", "3", "--workspace", "w.json")
    assert first.returncode == 0, first.stderr
    other = models.save(models.conv_relu_gemm(), tmp_path / "other.onnx")
    refused = _run(tmp_path, "profile", str(other), "--runs", "3", "--workspace", "w.json")
    assert refused.returncode != 0 and "is for" in refused.stderr
    assert "nothing was run" in refused.stderr


@pytest.mark.e2e
def test_an_analysis_of_a_model_quantized_elsewhere_records_its_size(tmp_path: Path) -> None:
    shutil.copy(SAMPLE_MODEL, tmp_path / SAMPLE_MODEL.name)
    shutil.copy(SAMPLE_EVALUATION, tmp_path / SAMPLE_EVALUATION.name)
    quant = models.quantized_sample(tmp_path)  # written by onnxruntime, not by EdgeStudio
    done = _run(
        tmp_path,
        "analyze",
        SAMPLE_MODEL.name,
        quant.name,
        "--data",
        SAMPLE_EVALUATION.name,
        "--workspace",
        "w.edgestudio.json",
    )
    assert done.returncode == 0, done.stderr
    run = workspace.load(tmp_path / "w.edgestudio.json").document.runs[0]
    summary = run.summary()  # what the Quantization tab's Size column shows
    assert summary.size_bytes == quant.stat().st_size
    assert summary.float_bytes == SAMPLE_MODEL.stat().st_size
    assert run.quantization is not None and run.quantization.precision is not None
    assert "QuantizeLinear" in run.quantization.quantized_ops
