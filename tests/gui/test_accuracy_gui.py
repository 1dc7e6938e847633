"""The window never shows a verdict or a verdict colour on synthetic data, names the data beside
every verdict, plot and overlay, and lets the user choose the task metric."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtGui import QColor

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.verdicts import NEUTRAL_SQNR_SCALE, VERDICT_COLOURS
from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests.gui.conftest import open_and_wait

pytestmark = pytest.mark.e2e  # every test here starts a worker process

NEUTRAL = {QColor(c).name() for _, _, c in NEUTRAL_SQNR_SCALE}
VERDICT = {QColor(c).name() for c in VERDICT_COLOURS.values()}


def _open(qtbot, window: MainWindow, tmp: Path):  # type: ignore[no-untyped-def]
    for f in (SAMPLE_MODEL, SAMPLE_CALIBRATION, SAMPLE_EVALUATION):
        shutil.copy(f, tmp / f.name)
    open_and_wait(qtbot, window, tmp / SAMPLE_MODEL.name)
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    return doc


def _bar_colours(panel) -> set[str]:  # type: ignore[no-untyped-def]
    from pyqtgraph import BarGraphItem

    bars = [i for i in panel.activations.plot.getPlotItem().items if isinstance(i, BarGraphItem)]
    return {b.color().name() for b in bars[0].opts["brushes"]}


@pytest.mark.e2e
def test_synthetic_data_gives_a_pipeline_check_and_real_data_a_named_verdict(  # type: ignore[no-untyped-def]
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    doc = _open(qtbot, window, tmp_path)
    model = tmp_path / SAMPLE_MODEL.name
    calib = DataSource("npz", str(tmp_path / SAMPLE_CALIBRATION.name))
    recipe = QuantRecipe(model=str(model), output=str(tmp_path / "q.onnx"), mode="qdq", calib=calib)
    run = window.quant.start_quantization(doc, recipe, DataSource("synthetic", samples=8))
    qtbot.waitUntil(lambda: run.analysis is not None or run.error is not None, timeout=120_000)
    assert run.analysis is not None and run.analysis.verdict is not None, run.error
    panel = doc.quant_panel
    assert run.analysis.verdict.level is None
    text = panel.verdict.text()
    assert "Pipeline check" in text and "No verdict" in text and "synthetic" in text
    for level in ("Good", "Acceptable", "Poor"):
        assert f">{level}<" not in text
    assert (
        "pipeline check" in panel.activations.legend.text()
        and "good" not in panel.activations.legend.text()
    )
    assert _bar_colours(panel) <= NEUTRAL  # no colour that reads as a verdict
    assert panel.history.item(0, 3).text() == "pipeline check"
    note = doc.graph_panel.view.legend.note.text()
    assert "Pipeline check" in note and "synthetic" in note
    node_colours = {
        doc.graph_panel.view.node_colour(i).name() for i in range(doc.graph_panel.ir.node_count)
    }
    assert not node_colours & VERDICT
    compare = window.compare_run(doc, run)
    assert compare is not None
    qtbot.waitUntil(lambda: compare.is_ready, timeout=30_000)
    assert compare.right is not None
    assert "Pipeline check" in compare.right.view.legend.note.text()
    assert "synthetic" in compare.summary.text()
    right = compare.right
    assert not {right.view.node_colour(i).name() for i in range(right.ir.node_count)} & VERDICT
    compare.close()

    real = window.quant.start_quantization(
        doc,
        QuantRecipe(model=str(model), output=str(tmp_path / "q2.onnx"), mode="qdq", calib=calib),
        DataSource("npz", str(tmp_path / SAMPLE_EVALUATION.name)),
        metric="classification",
    )
    qtbot.waitUntil(lambda: real.analysis is not None or real.error is not None, timeout=120_000)
    assert real.analysis is not None and real.analysis.verdict is not None, real.error
    assert real.analysis.verdict.level == "good"
    assert real.analysis.task is not None and real.analysis.task.chosen_by == "you"
    panel.history.selectRow(1)
    text = panel.verdict.text()
    assert ">Good<" in text and "360 samples from digits_eval.npz" in text
    assert "top-1 agreement" in text and "Diagnostic" in text
    assert "on 360 samples from digits_eval.npz" in panel.activations.legend.text()
    assert _bar_colours(panel) <= VERDICT


def test_the_form_says_what_the_evaluation_data_can_prove(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    _open(qtbot, window, tmp_path)
    dialog = window.quant.show_quantize_form()
    assert dialog is not None
    assert "Verdict on npz" in dialog.eval_note.text()
    dialog.eval_path.edit.setText("synthetic:8")
    assert "pipeline check" in dialog.eval_note.text() and "no verdict" in dialog.eval_note.text()
    assert "Verdict" not in dialog.eval_note.text()
    dialog.metric_box.setCurrentText("ctc")
    assert dialog.analyze_metric() == "ctc"
    dialog.analyze.setChecked(False)
    assert not dialog.metric_box.isEnabled()
    dialog.reject()
