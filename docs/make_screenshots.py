"""Regenerate the README screenshots (``make screenshots``), offscreen.

Every view is reached the way a user can reach it from a shell: the runs are made by the
command line with ``--workspace`` (quantize, analyze, bench, profile), and each picture is
``edgestudio W --screenshot PNG --panel …`` (``--select``, ``--open-group``, ``--compare``,
``--dialog``). Only the pictures of work in progress — an auto-tune as it finishes, the Jobs panel
with a crashed and a hung job — drive the window in this process, because no saved state holds
them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "screenshots"
SAMPLES = REPO / "resources" / "samples"
MINILM = REPO / ".realmodels" / "minilm_l6_v2.onnx"
sys.path.insert(0, str(REPO))


def edgestudio(folder: Path, *args: str) -> None:
    """Run one command in ``folder``; stop on failure (a broken screenshot is a broken view)."""
    done = subprocess.run(
        [sys.executable, "-m", "edgestudio", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "XDG_CONFIG_HOME": str(folder / "config")},
    )
    if done.returncode != 0:
        raise SystemExit(
            f"edgestudio {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}"
        )


def shoot(folder: Path, name: str, *args: str) -> None:
    """``edgestudio ARGS --screenshot docs/screenshots/NAME``."""
    edgestudio(folder, *args, "--screenshot", str(OUT / name))
    print(f"  {name}")


def from_the_command_line(folder: Path) -> None:
    """Every view a saved workspace can show."""
    for f in SAMPLES.glob("digits_*"):
        shutil.copy(f, folder / f.name)
    model, w = "digits_cnn.onnx", "digits.edgestudio.json"
    synthetic = "digits_check.edgestudio.json"
    # A run analysed on synthetic data: a pipeline check, no verdict, neutral shades.
    edgestudio(
        folder,
        "quantize",
        model,
        "-o",
        "digits_check.onnx",
        "--calib",
        "digits_calib.npz",
        "--workspace",
        synthetic,
    )
    edgestudio(
        folder,
        "analyze",
        model,
        "digits_check.onnx",
        "--data",
        "synthetic:8",
        "--workspace",
        synthetic,
    )
    shoot(folder, "quantization_synthetic.png", "--workspace", synthetic, "--panel", "quantization")
    # The same model judged on held-out digits, benchmarked and profiled.
    edgestudio(
        folder,
        "quantize",
        model,
        "-o",
        "digits_qdq.onnx",
        "--calib",
        "digits_calib.npz",
        "--per-channel",
        "--workspace",
        w,
    )
    edgestudio(
        folder, "analyze", model, "digits_qdq.onnx", "--data", "digits_eval.npz", "--workspace", w
    )
    edgestudio(
        folder,
        "bench",
        model,
        "digits_qdq.onnx",
        "--threads",
        "1,2",
        "--runs",
        "200",
        "--workspace",
        w,
    )
    edgestudio(folder, "profile", model, "--runs", "20", "--workspace", w)
    shoot(folder, "summary.png", "--workspace", w)
    shoot(folder, "graph.png", model, "--panel", "graph", "--select", "/features/features.3/Conv")
    shoot(folder, "netron.png", model, "--panel", "netron")
    shoot(folder, "convert.png", model, "--dialog", "convert")
    shoot(folder, "quantization.png", "--workspace", w, "--panel", "quantization")
    shoot(folder, "weights.png", "--workspace", w, "--panel", "quantization/weights")
    shoot(folder, "graph_sqnr.png", "--workspace", w, "--panel", "graph")
    shoot(folder, "compare.png", model, "--compare", "digits_qdq.onnx")
    shoot(folder, "performance.png", "--workspace", w, "--panel", "performance/latency")
    shoot(folder, "profile.png", "--workspace", w, "--panel", "performance/per-op-profile")
    shoot(folder, "edge_cloud.png", "--workspace", w, "--panel", "performance/edge-vs-cloud")
    if (REPO / ".openvino-venv").exists():  # OpenVINO's own onnxruntime (make openvino-env)
        openvino = "digits_openvino.edgestudio.json"
        edgestudio(
            folder,
            "bench",
            model,
            "digits_qdq.onnx",
            "--device",
            "local,openvino",
            "--ep",
            "cpu,openvino",
            "--runs",
            "200",
            "--workspace",
            openvino,
        )
        shoot(
            folder,
            "performance_openvino.png",
            "--workspace",
            openvino,
            "--panel",
            "performance/latency",
        )
    if MINILM.exists():  # a real transformer (make realmodels): its inputs and its blocks
        shoot(folder, "inputs.png", str(MINILM), "--panel", "inputs")
        shoot(folder, "graph_groups.png", str(MINILM), "--panel", "graph")
        shoot(
            folder,
            "graph_group_open.png",
            str(MINILM),
            "--panel",
            "graph",
            "--open-group",
            "layer.3",
        )
    else:
        shoot(folder, "inputs.png", model, "--panel", "inputs")


def work_in_progress(folder: Path) -> None:
    """An auto-tune as it finishes and the Jobs panel with failures: driven in this process."""
    from PySide6.QtCore import QSettings

    from edgestudio.core.convert.convert_recipes import ConvertRecipe
    from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
    from edgestudio.gui.app import create_application, release_window
    from edgestudio.gui.main_window import MainWindow

    app = create_application()
    window = MainWindow(QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1280, 820)
    window.show()

    def spin(seconds: float, until=lambda: False) -> None:  # type: ignore[no-untyped-def]
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            app.processEvents()
            time.sleep(0.02)

    model = folder / "digits_cnn.onnx"
    for path, goal, budget, data, name in (
        (model, "sqnr>=40", 5, None, "tune.png"),
        (MINILM, "sqnr>=20", 7, "synthetic:16", "tune_minilm.png"),
    ):
        if not path.exists():
            continue
        window.open_model(path)
        spin(
            60, lambda: window.current_document() is not None and window.current_document().is_ready
        )
        tune = window.quant.show_tune()
        assert tune is not None
        tune.resize(1200, 760)
        if data:
            tune.data.edit.setText(data)
        tune.goal.setText(goal)
        tune.budget.setValue(budget)
        tune.start()
        spin(600, lambda t=tune: t.tuner is not None and t.tuner.finished)  # type: ignore[misc]
        spin(0.5)
        tune.grab().save(str(OUT / name))
        print(f"  {name}")
        tune.close()

    jobs = [
        window.submit(ConvertRecipe(model=str(model), output=str(folder / "d18.onnx"), opset=18)),
        window.submit(DiagnosticRecipe(action="crash")),
        window.submit(DiagnosticRecipe(action="hang")),
    ]
    spin(
        30,
        lambda: (
            jobs[0].state.is_final and jobs[1].state.is_final and jobs[2].state.value == "running"
        ),
    )
    spin(0.5)
    window.jobs_panel.table.selectRow(0)
    spin(0.2)
    window.grab().save(str(OUT / "jobs.png"))
    print("  jobs.png")
    window.jobs.shutdown()
    window.close()
    release_window(window)


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="edgestudio-screenshots-"))
    print(f"screenshots into {OUT}:")
    from_the_command_line(folder)
    work_in_progress(folder)
    print(f"screenshots written to {OUT}")


if __name__ == "__main__":
    main()
