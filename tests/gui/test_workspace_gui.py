"""Workspaces in the window: quantize + analyse + benchmark, save, reopen in a fresh window and a
fresh process, and every panel, overlay and table is as it was."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests.gui.conftest import open_and_wait

pytestmark = pytest.mark.e2e  # every test here starts a worker process


def _table(table) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return [
        [table.item(r, c).text() if table.item(r, c) else "" for c in range(table.columnCount())]
        for r in range(table.rowCount())
    ]


def _panels(doc) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """What a user sees of the document: tables, plot bars, the graph's legend and marks."""
    view = doc.graph_panel.view
    return {
        "history": _table(doc.quant_panel.history),
        "layers": _table(doc.quant_panel.activations.layers),
        "bench": _table(doc.perf_panel.latency.table),
        "marked": list(view.marked),
        "legend": (view.legend.label.text(), view.legend.ends.text()),
        "bars": len(doc.quant_panel.activations.bars),
    }


@pytest.mark.e2e
def test_saved_workspace_reopens_as_it_was(
    qtbot,
    window: MainWindow,
    isolated_settings,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    for f in (SAMPLE_MODEL, SAMPLE_CALIBRATION, SAMPLE_EVALUATION):
        shutil.copy(f, tmp_path / f.name)
    model = tmp_path / SAMPLE_MODEL.name
    open_and_wait(qtbot, window, model)
    doc = window.current_document()
    assert doc is not None
    doc.set_excluded({"/features/features.0/Conv"})
    run = window.quant.start_quantization(
        doc,
        QuantRecipe(
            model=str(model),
            output=str(tmp_path / "q.onnx"),
            calib=DataSource("npz", str(tmp_path / SAMPLE_CALIBRATION.name)),
        ),
        DataSource("npz", str(tmp_path / SAMPLE_EVALUATION.name), samples=40),
    )
    bench = window.workflow.submit(
        BenchRecipe(models=(str(model), str(tmp_path / "q.onnx")), runs=20, warmup=2)
    )
    qtbot.waitUntil(lambda: bench.state.is_final and run.state.is_final, timeout=180_000)
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    assert run.analysis is not None, run.error
    saved = window.workspaces.save(str(tmp_path / "digits.edgestudio.json"))
    assert saved is not None
    # File › Export report and `edgestudio report WORKSPACE` give the same file
    window.workspaces.export_report(str(tmp_path / "window.html"))
    done = subprocess.run(
        [sys.executable, "-m", "edgestudio", "report", saved, "-o", str(tmp_path / "cli.html")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "cli.html").read_text() == (tmp_path / "window.html").read_text()
    before = _panels(doc)
    window.close_document(window.tabs.currentIndex())

    # reopening the model offers its last workspace; Yes restores it
    open_and_wait(qtbot, window, model)
    offer = next(b for b in window.messages.dialogs if b.objectName() == "restore_workspace")
    with qtbot.waitSignal(window.workspace_restored, timeout=30_000):
        offer.button(QMessageBox.StandardButton.Yes).click()
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    assert _panels(doc) == before
    doc.show_panel("quantization")
    doc.grab().save(str(tmp_path / "restored_quantization.png"))
    doc.show_panel("graph")
    doc.grab().save(str(tmp_path / "restored_graph.png"))

    # a fresh process opens the workspace file itself (as a double-click would)
    shot = tmp_path / "fresh.png"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgestudio",
            saved,
            "--screenshot",
            str(shot),
            "--panel",
            "quantization",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert shot.stat().st_size > 20_000


def test_a_changed_model_is_reported(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / SAMPLE_MODEL.name
    shutil.copy(SAMPLE_MODEL, model)
    open_and_wait(qtbot, window, model)
    saved = window.workspaces.save(str(tmp_path / "w.edgestudio.json"))
    assert saved is not None
    window.close_document(window.tabs.currentIndex())
    import onnx

    changed = onnx.load(model)
    changed.producer_name = "someone else"
    onnx.save(changed, model)
    with qtbot.waitSignal(window.workspace_restored, timeout=30_000):
        window.open_file(saved)
    assert any(
        "changed on disk" in b.informativeText() or "changed on disk" in b.text()
        for b in window.messages.dialogs
    )
