"""Tools › Auto-tune: the live plot fills, the best is kept as a run with its analysis, and the
tune goes into the workspace and the report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgestudio.core.workspace import workspace
from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_EVALUATION, SAMPLE_MODEL
from tests.gui.conftest import open_and_wait

pytestmark = pytest.mark.e2e  # every test here starts a worker process


@pytest.mark.e2e
def test_tune_window_finds_keeps_and_reports(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for f in (SAMPLE_MODEL, SAMPLE_EVALUATION):
        shutil.copy(f, tmp_path / f.name)
    model = tmp_path / SAMPLE_MODEL.name
    open_and_wait(qtbot, window, model)
    tune = window.quant.show_tune()
    assert tune is not None and tune.data.path().endswith("digits_eval.npz")
    # a window of its own, but Qt's child: deleted on the GUI thread, never by the collector
    assert tune.parent() is window and tune.isWindow()
    # a synthetic count in the data says how many samples: the Samples box is out of play
    tune.data.edit.setText("synthetic:16")
    assert not tune.samples.isEnabled() and "16 synthetic samples" in tune.samples_note.text()
    tune.data.edit.setText(str(tmp_path / SAMPLE_EVALUATION.name))
    assert tune.samples.isEnabled() and not tune.samples_note.text()
    tune.goal.setText("sqnr>=99 dB")
    assert not tune.start() and "goal reads" in tune.status.text()
    tune.goal.setText("sqnr>=30")
    tune.budget.setValue(3)
    tune.modes["dynamic"].setChecked(False)
    assert tune.start()
    qtbot.waitUntil(lambda: tune.tuner is not None and tune.tuner.finished, timeout=240_000)
    assert tune.table.rowCount() == 3 and len(tune.candidates.scatter.data) == 3
    # the candidates' jobs went through the window's one queue (listed in the Jobs panel, at
    # most Jobs-at-once of them side by side), the benchmark alone
    kinds = [j.recipe.kind for j in window.jobs.jobs]
    assert kinds.count("quantize") >= 3 and kinds.count("analyze") >= 3 and "bench" in kinds
    benches = [j for j in window.jobs.jobs if j.recipe.kind == "bench"]
    for bench in benches:  # nothing ran beside a benchmark
        assert bench.started_at is not None and bench.finished_at is not None
        beside = [
            j
            for j in window.jobs.jobs
            if j is not bench
            and j.started_at is not None
            and j.started_at < bench.finished_at
            and (j.finished_at is None or j.finished_at > bench.started_at)
        ]
        assert beside == []
    shown = [j for j in window.jobs.jobs if j.id not in window.jobs.background]
    assert window.jobs_panel.table.rowCount() == len(shown) >= 7
    # the float model's latency is drawn as the reference line, labelled
    assert tune.candidates.float_line.isVisible() and tune.tuner.float_latency_ms is not None
    assert tune.candidates.float_line.value() == tune.tuner.float_latency_ms
    assert tune.candidates.float_line.label.toPlainText().startswith("float32: ")
    assert "Best: #" in tune.status.text() and tune.keep_button.isEnabled()
    tune.resize(1200, 760)
    tune.grab().save(str(tmp_path / "tune.png"))
    best = tune.tuner.winner
    tune.keep_button.click()
    doc = window.current_document()
    assert doc is not None
    run = doc.document.runs[-1]
    assert run.analysis is best.analysis and Path(run.output or "").exists()
    assert doc.quant_panel.history.rowCount() == 1 and doc.document.tunes
    compare = window.compare_views[-1]  # Compare opened on the kept winner
    assert compare.b == Path(run.output or "")
    compare.close()
    # a candidate measured by an earlier tune has no file: kept as a background run (the
    # window is not blocked), quantized and analysed again
    import dataclasses

    earlier = dataclasses.replace(
        best,
        resumed=True,
        recipe=dataclasses.replace(best.recipe, output=str(tmp_path / "gone.onnx")),
    )
    again_run = window.quant.keep_tuned(doc, earlier, tune.tuner)
    assert not again_run.state.is_final  # returned at once, the job runs in the background
    qtbot.waitUntil(lambda: again_run.state.is_final, timeout=120_000)
    assert again_run.analysis is not None and Path(again_run.output or "").exists()
    saved = workspace.save(doc.document, tmp_path / "w.edgestudio.json")
    assert workspace.load(saved).document.tunes[0]["winner"] == best.number
    html = Path(window.workspaces.export_report(str(tmp_path / "r.html")) or "").read_text()
    assert "Auto-tune: goal sqnr&gt;=30" in html
    # a chosen point shows that candidate's per-layer SQNR on the graph
    tune.candidate_chosen.emit(best)
    assert f"candidate #{best.number}" in doc.graph_panel.view.legend.label.text()
    tune.close()
    # a run's context menu starts a tune from it
    doc.quant_panel.tune_requested.emit(run)
    again = window.tune_windows[-1]
    assert again.base is run.recipe and again.settings().base is run.recipe
    # the document's last tune is offered for resuming (its measured candidates taken)
    assert again.resume.isVisibleTo(again) and again.resume.isChecked()
    assert "3 candidate(s)" in again.resume.text()
    assert again.settings().resume is doc.document.tunes[-1]
    again.resume.setChecked(False)
    assert again.settings().resume is None
    again.close()


def test_the_tuner_is_built_off_the_ui_thread_and_cancel_waits_for_it(
    qtbot, window: MainWindow, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Connecting to Ray takes seconds: the window stays responsive meanwhile, and a Cancel
    pressed before the tuner exists stops it as soon as it is built."""
    import threading

    from edgestudio.gui.quant import tune_window
    from edgestudio.jobs.tuner import Tuner

    built_on: list[threading.Thread] = []
    release = threading.Event()

    class SlowTuner(Tuner):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            built_on.append(threading.current_thread())
            release.wait(30)  # as long as a cluster takes to answer
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tune_window, "Tuner", SlowTuner)
    for f in (SAMPLE_MODEL, SAMPLE_EVALUATION):
        shutil.copy(f, tmp_path / f.name)
    open_and_wait(qtbot, window, tmp_path / SAMPLE_MODEL.name)
    tune = window.quant.show_tune()
    assert tune is not None
    assert tune.start()
    assert tune.tuner is None and "Preparing" in tune.status.text()
    qtbot.wait(200)  # the UI thread is free: events are processed
    tune.cancel()
    assert "Cancelling" in tune.status.text()
    release.set()
    qtbot.waitUntil(lambda: tune.tuner is not None and tune.tuner.finished, timeout=30_000)
    assert built_on and built_on[0] is not threading.main_thread()
    assert tune.tuner.cancelled and tune.start_button.isEnabled()
    assert not tune.tuner.folder.exists()
