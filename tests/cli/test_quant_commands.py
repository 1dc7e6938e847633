"""``edgestudio quantize`` and ``edgestudio analyze``: JSON/CSV reports and exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests.cli.run import run_cli


def test_quantize_then_analyze(tmp_path: Path) -> None:
    quant, qreport = tmp_path / "q.onnx", tmp_path / "q.json"
    proc = run_cli(
        "quantize",
        str(SAMPLE_MODEL),
        "-o",
        str(quant),
        "--mode",
        "qdq",
        "--per-channel",
        "--reduce-range",
        "--calib",
        str(SAMPLE_CALIBRATION),
        "--json",
        str(qreport),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(qreport.read_text())
    assert data["output"] == str(quant)
    assert data["recipe"]["mode"] == "qdq" and data["recipe"]["per_channel"] is True
    assert data["calibration_warnings"] == []

    report, table = tmp_path / "a.json", tmp_path / "layers.csv"
    proc = run_cli(
        "analyze",
        str(SAMPLE_MODEL),
        str(quant),
        "--data",
        str(SAMPLE_EVALUATION),
        "--json",
        str(report),
        "--csv",
        str(table),
    )
    assert proc.returncode == 0, proc.stderr
    written = json.loads(report.read_text())
    layer = written["layers"][0]
    assert {"tensor", "node", "sqnr_db", "mse", "max_abs", "cosine"} <= set(layer)
    assert written["outputs"][0]["output"] == "logits"
    assert written["accuracy"]["float_top1"] > 0.95 and written["accuracy"]["quant_top1"] > 0.9
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == len(written["layers"])
    sqnrs = [float(r["sqnr_db"]) for r in rows if r["sqnr_db"]]
    assert sqnrs == sorted(sqnrs)  # worst first
    assert "top-1 agreement" in proc.stdout


def test_quantize_rule_violation_is_one_line(tmp_path: Path) -> None:
    proc = run_cli(
        "quantize",
        str(SAMPLE_MODEL),
        "-o",
        str(tmp_path / "q.onnx"),
        "--mode",
        "dynamic",
        "--activation-type",
        "int8",
    )
    assert proc.returncode == 2 and "uint8 activations" in proc.stderr
    assert not (tmp_path / "q.onnx").exists()


def test_synthetic_calibration_warns(tmp_path: Path) -> None:
    proc = run_cli(
        "quantize",
        str(SAMPLE_MODEL),
        "-o",
        str(tmp_path / "q.onnx"),
        "--mode",
        "qoperator",
        "--calib",
        "synthetic:8:1",
    )
    assert proc.returncode == 0, proc.stderr
    assert "meaningless" in proc.stderr


@pytest.mark.e2e
def test_bench_and_profile_json(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    proc = run_cli(
        "bench",
        str(SAMPLE_MODEL),
        "--ep",
        "cpu,cuda",
        "--runs",
        "20",
        "--warmup",
        "2",
        "--json",
        str(report),
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(report.read_text())["results"]
    cpu = results[0]
    assert {"model", "ep", "threads", "median_ms", "p90_ms", "p99_ms", "runs"} <= set(cpu)
    assert "error" not in cpu  # a measured row has no error key (scripts test for it)
    assert "install onnxruntime-gpu" in results[1]["error"]
    assert "contended" in proc.stdout.splitlines()[0] or "median ms" in proc.stdout
    report = tmp_path / "profile.json"
    proc = run_cli("profile", str(SAMPLE_MODEL), "--runs", "5", "--json", str(report))
    assert proc.returncode == 0, proc.stderr
    nodes = json.loads(report.read_text())["nodes"]
    assert {"node", "op_type", "ep", "time_us"} <= set(nodes[0])
    assert "placement: " in proc.stdout
