"""``edgestudio inspect``: text and JSON output, one-line errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import models


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "edgestudio", *args],
                          capture_output=True, text=True, timeout=120)


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


def _bad_files(tmp: Path) -> dict[str, Path]:
    (tmp / "empty.onnx").write_bytes(b"")
    (tmp / "text.onnx").write_text("hello\n")
    (tmp / "random.onnx").write_bytes(bytes(range(256)) * 8)
    good = models.save(models.conv_relu_gemm(), tmp / "good.onnx")
    (tmp / "truncated.onnx").write_bytes(good.read_bytes()[:2000])
    ext = models.external_weights(tmp)
    (tmp / "weights.bin").unlink()
    return {
        "empty": tmp / "empty.onnx", "text": tmp / "text.onnx", "random": tmp / "random.onnx",
        "truncated": tmp / "truncated.onnx", "missing_external": ext,
        "missing": tmp / "nope.onnx",
    }


@pytest.mark.parametrize(
    "case", ["empty", "text", "random", "truncated", "missing_external", "missing"]
)
def test_bad_files_give_one_line_and_nonzero_exit(tmp_path: Path, case: str) -> None:
    path = _bad_files(tmp_path)[case]
    out = run_cli("inspect", str(path))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgestudio: error: ")


def test_opset_unknown_to_runtime_exits_nonzero_after_the_summary(tmp_path: Path) -> None:
    path = models.save(models.relu_only(opset=99), tmp_path / "future.onnx")
    out = run_cli("inspect", str(path), "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["default_opset"] == 99
    assert "opset 99" in out.stderr


def test_version_and_help() -> None:
    assert run_cli("--version").stdout.startswith("edgestudio ")
    assert "inspect" in run_cli("--help").stdout
