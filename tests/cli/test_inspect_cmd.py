"""``edgestudio inspect``: text and JSON output, one-line errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import models
from tests.bad_models import CASES
from tests.cli.run import run_cli


def test_inspect_json_has_the_documented_keys(conv_model: Path) -> None:
    out = run_cli("inspect", str(conv_model), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["nodes"] == 4
    assert data["opset_imports"] == {"ai.onnx": 17}
    assert data["inputs"] == [{"name": "x", "dtype": "float32", "shape": ["batch", 3, 8, 8]}]
    assert data["outputs"] == [{"name": "y", "dtype": "float32", "shape": ["batch", 10]}]
    assert data["parameters"] == 2682
    assert data["op_types"] == {"Conv": 1, "Relu": 1, "Flatten": 1, "Gemm": 1}


def test_inspect_text(sample_model: Path) -> None:
    out = run_cli("inspect", str(sample_model))
    assert out.returncode == 0, out.stderr
    assert "image  float32  [batch, 1, 8, 8]" in out.stdout
    assert "Conv ×3" in out.stdout


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(CASES))
def test_every_bad_model_gives_a_clear_message_and_nonzero_exit(tmp_path: Path, case: str) -> None:
    bad = CASES[case]
    out = run_cli("inspect", str(bad.build(tmp_path)))
    assert "Traceback" not in out.stderr
    assert bad.words in out.stderr
    if bad.refused:
        assert out.returncode == 2
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("edgestudio: error: ")
    else:  # the summary is printed, then the problem, and the exit code says so
        assert out.returncode == 1
        assert "Inputs" in out.stdout or "inputs" in out.stdout


def test_opset_unknown_to_runtime_keeps_json_output(tmp_path: Path) -> None:
    out = run_cli("inspect", str(CASES["opset_99"].build(tmp_path)), "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["default_opset"] == 99


def test_version_and_help() -> None:
    assert run_cli("--version").stdout.startswith("edgestudio ")
    assert "inspect" in run_cli("--help").stdout


def test_huge_metadata_is_clipped_and_a_closed_pipe_is_quiet(tmp_path: Path) -> None:

    import onnx

    from tests import models

    model = models.conv_relu_gemm()
    onnx.helper.set_model_props(model, {"vocab": "\n".join(f"t{i}" for i in range(18000))})
    path = models.save(model, tmp_path / "m.onnx")
    text = subprocess.run(
        [sys.executable, "-m", "edgestudio", "inspect", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert len(text.splitlines()) < 30 and "--json prints all" in text
    piped = subprocess.run(
        f"{sys.executable} -m edgestudio inspect {path} --json | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.stdout.strip() == "{" and "Traceback" not in piped.stderr


@pytest.mark.e2e
def test_inspect_cost_gives_totals_and_per_node_rows(sample_model: Path, tmp_path: Path) -> None:
    report = tmp_path / "cost.json"
    out = run_cli("inspect", str(sample_model), "--cost", "--top", "3", "--json", str(report))
    assert out.returncode == 0, out.stderr
    assert "MACs 484,992" in out.stdout and "peak activation memory 16.0 KiB" in out.stdout
    cost = json.loads(report.read_text())["cost"]
    assert cost["total"] == {
        "macs": 484_992,
        "flops": 979_338,
        "params": 47_530,
        "param_bytes": 190_120,
        "peak_activation_bytes": 16_384,
    }
    assert len(cost["nodes"]) == 11 and cost["inputs"] == {"image": [1, 1, 8, 8]}
    conv = next(n for n in cost["nodes"] if n["node"] == "/features/features.3/Conv")
    assert conv["macs"] == 294_912 and conv["params"] == 4_640
    bigger = run_cli("inspect", str(sample_model), "--cost", "--shape", "image=4x1x8x8")
    assert "MACs 1,939,968" in bigger.stdout  # four images: four times the work


@pytest.mark.e2e
def test_inspect_cost_counts_a_loop_body_by_the_trips_of_one_run(tmp_path: Path) -> None:
    src = models.save(models.loop_matmul(trips=None), tmp_path / "loop.onnx")
    report = tmp_path / "cost.json"
    out = run_cli("inspect", str(src), "--cost", "--shape", "steps=1x9", "--json", str(report))
    assert out.returncode == 0, out.stderr
    loop = next(n for n in json.loads(report.read_text())["cost"]["nodes"] if n["op"] == "Loop")
    assert loop["macs"] == 9 * 16 * 16 and loop["body"] == "body × 9 iterations"
    assert "unrolled (Loop): body × 9 iterations" in out.stdout


def test_a_long_node_name_is_cut_in_its_middle_in_the_cost_table() -> None:
    from edgestudio.cli.inspect_cmd import NODE_CHARS, middle_cut

    name = "/model/encoder/layers.11/self_attn/" + "very_long_part/" * 12 + "MatMul_output"
    cut = middle_cut(name, NODE_CHARS)
    assert len(cut) == NODE_CHARS and cut.startswith("/model/encoder") and cut.endswith("output")
    assert middle_cut("/conv", NODE_CHARS) == "/conv"
