"""Smoke test of the packaged app (``make package-test``; marked slow, so not in ``make test``).

Uses dist/EdgeStudio when it is newer than every source file, else builds it (about a minute and
a half here). Then, with no Python of ours on PATH: the frozen app starts offscreen on the sample
and draws it, runs its self-test (open → quantize → analyse through the window's background jobs,
i.e. its own ``--job-worker`` processes), runs a CLI quantize, and exits cleanly each time; and it runs on a real X server (Xvfb),
driven by key presses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "packaging"))
from build import APP_DIR, build, executable, folder_size  # noqa: E402

sys.path.pop(0)

SAMPLES = REPO / "resources" / "samples"
pytestmark = pytest.mark.slow


def _sources_mtime() -> float:
    files = [
        *REPO.joinpath("edgestudio").rglob("*.py"),
        *REPO.joinpath("resources").rglob("*"),
        *REPO.joinpath("packaging").rglob("*"),
    ]
    return max(p.stat().st_mtime for p in files if p.is_file())


@pytest.fixture(scope="module")
def app() -> Path:
    exe = executable()
    if not exe.exists() or exe.stat().st_mtime < _sources_mtime():
        build()
    print(f"\npackaged app: {folder_size(APP_DIR) / 2**20:.0f} MiB in {APP_DIR}")
    return exe


def _run(app: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "QT_QPA_PLATFORM": "offscreen",
    }  # no venv, no PYTHONPATH: only what the app carries
    return subprocess.run(
        [str(app), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_starts_offscreen_on_the_sample_and_draws_it(app: Path, tmp_path: Path) -> None:
    shot = tmp_path / "frozen.png"
    started = time.monotonic()
    out = _run(app, str(SAMPLES / "digits_cnn.onnx"), "--screenshot", str(shot), "--panel", "graph")
    elapsed = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    print(f"start, open the sample, lay out, draw and exit: {elapsed:.2f} s")
    pixels = np.asarray(Image.open(shot).convert("L"))
    assert pixels.shape[0] > 400 and pixels.std() > 10  # a drawn graph, not an empty window


def test_self_test_quantizes_through_the_frozen_worker(app: Path) -> None:
    out = _run(app, "--self-test")
    assert out.returncode == 0, out.stderr
    assert "self-test: passed" in out.stderr
    assert "agreement" in out.stderr


def test_cli_quantize_through_the_frozen_worker(app: Path, tmp_path: Path) -> None:
    model = SAMPLES / "digits_cnn.onnx"
    before = model.read_bytes()
    result = tmp_path / "q.onnx"
    out = _run(
        app,
        "quantize",
        str(model),
        "-o",
        str(result),
        "--per-channel",
        "--calib",
        str(SAMPLES / "digits_calib.npz"),
    )
    assert out.returncode == 0, out.stderr
    assert model.read_bytes() == before
    data = np.load(SAMPLES / "digits_eval.npz")
    x = data["image"][:64]
    ref = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(
        None, {"image": x}
    )[0]
    got = ort.InferenceSession(str(result), providers=["CPUExecutionProvider"]).run(
        None, {"image": x}
    )[0]
    assert (ref.argmax(1) == got.argmax(1)).mean() > 0.9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]  # no staging left behind


def test_version_and_help_run_without_qt(app: Path) -> None:
    out = _run(app, "--version")
    assert out.returncode == 0 and out.stdout.startswith("edgestudio ")


def test_runs_on_a_real_x_server(app: Path, tmp_path: Path) -> None:
    """The packaged app on Xvfb, driven by key presses: its window draws the sample, a dialog
    opens and closes by Escape, the graph's search takes Ctrl+F, Ctrl+Q ends it cleanly."""
    from tests.xserver.desktop import Desktop, missing_tools

    missing = missing_tools(window_manager=False)
    if missing:
        pytest.skip(reason=f"needs {', '.join(missing)} (make sysdeps installs them as root)")
    desktop = Desktop(tmp_path, window_manager=False)
    desktop.env["PATH"] = "/usr/bin:/bin"  # only what the app carries
    try:
        desktop.start(SAMPLES / "digits_cnn.onnx", program=[str(app)])
        desktop.wait_for(lambda s: "digits_cnn.onnx" in s["documents"], "the sample", 60)
        desktop.check("the packaged app opens the sample")
        desktop.key("ctrl+o")
        desktop.window_open("Open model")
        desktop.check("Ctrl+O")
        desktop.key("Escape")
        desktop.window_closed("Open model")
        desktop.check("Escape on the file dialog")
        x, y = desktop.wait_for(lambda s: "Graph" in s["panel_tabs"], "tabs")["panel_tabs"]["Graph"]
        desktop.xdotool("mousemove", str(x), str(y), "click", "1")
        desktop.key("ctrl+f")
        desktop.wait_for(lambda s: "Find" in s["focus"]["placeholder"], "Ctrl+F on the graph")
        desktop.check("Ctrl+F on the Graph tab")
        desktop.key("ctrl+q")
        assert desktop.app is not None
        assert desktop.app.wait(30) == 0, desktop.failure("Ctrl+Q did not end it cleanly")
    finally:
        desktop.close()
