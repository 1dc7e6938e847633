"""``--screenshot`` reaches every view: each panel and tab inside one (a wrong name exits 2 with
the list), a group opened, a node selected, the Compare window, a form, a workspace built by the
command line's ``--workspace``; the Inputs view only after its search finished."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from PySide6.QtGui import QImage

from edgestudio.gui.main_window import MainWindow
from edgestudio.gui.panel_names import panel_names
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests.graph_builders import transformer_like
from tests.gui.conftest import open_and_wait


def _edgestudio(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgestudio", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env={
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        },
    )


def _drawn(path: Path, width: int = 1280) -> QImage:
    image = QImage(str(path))
    assert image.width() == width and image.height() > 300
    colours = {
        image.pixel(x, y) for x in range(0, image.width(), 17) for y in range(0, image.height(), 17)
    }
    assert len(colours) > 10  # not blank
    return image


@pytest.mark.e2e
def test_the_panel_table_is_the_window_s(qtbot, window: MainWindow, sample_model: Path) -> None:  # type: ignore[no-untyped-def]
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None and doc.panel_names() == panel_names()
    assert doc.show_panel("performance/edge-vs-cloud")
    assert doc.perf_panel.tabs.currentIndex() == 2 and doc.panels.currentWidget() is doc.perf_panel
    assert not doc.show_panel("performance/nope")


def test_wrong_names_exit_2_with_the_right_ones(tmp_path: Path) -> None:
    bad = _edgestudio(tmp_path, str(SAMPLE_MODEL), "--screenshot", "x.png", "--panel", "perf")
    assert bad.returncode == 2 and "performance/per-op-profile" in bad.stderr
    assert not (tmp_path / "x.png").exists()
    form = _edgestudio(tmp_path, str(SAMPLE_MODEL), "--screenshot", "x.png", "--dialog", "nope")
    assert form.returncode == 2 and "convert, quantize" in form.stderr
    alone = _edgestudio(tmp_path, str(SAMPLE_MODEL), "--open-group", "g")
    assert alone.returncode == 2 and "only go with --screenshot" in alone.stderr
    size = _edgestudio(tmp_path, str(SAMPLE_MODEL), "--screenshot", "x.png", "--size", "800")
    assert size.returncode == 2 and "--size: reads WIDTHxHEIGHT" in size.stderr
    assert not (tmp_path / "x.png").exists()


@pytest.mark.e2e
def test_groups_nodes_compare_and_forms(tmp_path: Path) -> None:
    model = tmp_path / "blocks.onnx"
    onnx.save(transformer_like(3000), str(model))
    wrong = _edgestudio(
        tmp_path, str(model), "--screenshot", "g.png", "--panel", "graph", "--open-group", "nope"
    )
    assert wrong.returncode == 2 and "no closed group 'nope'; groups: " in wrong.stderr
    group = wrong.stderr.split("groups: ")[1].split(",")[0].strip()
    opened = _edgestudio(
        tmp_path, str(model), "--screenshot", "g.png", "--panel", "graph", "--open-group", group
    )
    assert opened.returncode == 0, opened.stderr
    _drawn(tmp_path / "g.png")
    node = _edgestudio(
        tmp_path,
        str(SAMPLE_MODEL),
        "--screenshot",
        "n.png",
        "--select",
        "/features/features.3/Conv",
        "--size",
        "1000x700",
    )
    assert node.returncode == 0, node.stderr
    _drawn(tmp_path / "n.png", 1000)
    missing = _edgestudio(
        tmp_path, str(SAMPLE_MODEL), "--screenshot", "n.png", "--select", "no-such-node"
    )
    assert missing.returncode == 2 and "no node 'no-such-node'" in missing.stderr
    other = tmp_path / "twin.onnx"
    twin = onnx.load(str(SAMPLE_MODEL))
    twin.graph.node[1].op_type = "Sigmoid"  # one changed node
    onnx.save(twin, str(other))
    compared = _edgestudio(
        tmp_path, str(SAMPLE_MODEL), "--compare", str(other), "--screenshot", "c.png"
    )
    assert compared.returncode == 0, compared.stderr
    _drawn(tmp_path / "c.png")
    form = _edgestudio(tmp_path, str(SAMPLE_MODEL), "--dialog", "convert", "--screenshot", "f.png")
    assert form.returncode == 0, form.stderr
    assert QImage(str(tmp_path / "f.png")).width() > 400


@pytest.mark.e2e
@pytest.mark.parametrize("panel", ["quantization/weights", "performance/latency"])
def test_a_workspace_built_on_the_command_line(tmp_path: Path, panel: str) -> None:
    for f in (SAMPLE_MODEL, SAMPLE_CALIBRATION, SAMPLE_EVALUATION):
        shutil.copy(f, tmp_path / f.name)
    w = "w.edgestudio.json"
    steps = [
        ["quantize", SAMPLE_MODEL.name, "-o", "q.onnx", "--calib", SAMPLE_CALIBRATION.name],
        ["analyze", SAMPLE_MODEL.name, "q.onnx", "--data", SAMPLE_EVALUATION.name],
        ["bench", SAMPLE_MODEL.name, "q.onnx", "--runs", "30"],
    ]
    if panel.startswith("quantization"):
        steps = steps[:2]
    for step in steps:
        done = _edgestudio(tmp_path, *step, "--workspace", w)
        assert done.returncode == 0, done.stderr
        assert "added to the workspace" in done.stderr
    shot = _edgestudio(tmp_path, "--workspace", w, "--screenshot", "w.png", "--panel", panel)
    assert shot.returncode == 0, shot.stderr
    _drawn(tmp_path / "w.png")
