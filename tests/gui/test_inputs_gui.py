"""The Inputs panel: derived inputs found in a job, edits remembered and used by every job."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgestudio.core.inputs import input_memory
from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.gui.main_window import MainWindow
from tests import models
from tests.gui.conftest import open_and_wait

pytestmark = pytest.mark.e2e  # every test here starts a worker process


def test_inputs_panel_finds_edits_and_remembers(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = models.save(models.embedding_encoder(rows=50), tmp_path / "encoder.onnx")
    open_and_wait(qtbot, window, path)
    doc = window.current_document()
    assert doc is not None
    panel = doc.inputs_panel
    assert panel.state == "unknown"
    doc.show_panel("inputs")  # the first look starts the job
    qtbot.waitUntil(lambda: panel.state in ("verified", "failed"), timeout=60_000)
    assert panel.state == "verified", panel.status.text()
    ids = next(r for r in range(panel.table.rowCount()) if panel.table.item(r, 0).text() == "ids")
    assert panel.table.item(ids, 4).text() == "0:50"  # below the embedding's 50 rows
    assert "50 rows" in panel.table.item(ids, 5).text()
    window.resize(1100, 520)
    panel.grab().save(str(tmp_path / "inputs_panel.png"))

    panel.table.item(ids, 3).setText("1xseven")  # checked where typed, by the CLI's grammar
    assert panel.state == "failed" and not panel.overrides.shapes
    assert "Shape used of ids: a shape is written DIMxDIM" in panel.status.text()
    assert "--" not in panel.status.text()
    panel.table.item(ids, 3).setText("1x7")  # the user's own sequence length
    assert panel.state == "edited"
    assert panel.overrides.shapes == ("ids=1x7",)
    assert input_memory.recall(path).shapes == ("ids=1x7",)
    job = window.submit(BenchRecipe(models=(str(path),), warmup=1, runs=3))
    assert job.recipe.shapes == ("ids=1x7",)  # type: ignore[attr-defined]
    qtbot.waitUntil(
        lambda: job.state.value != "running" and job.state.value != "queued", timeout=60_000
    )
    assert job.report is not None
    assert job.report.result.rows[0].inputs["ids"] == [1, 7]

    panel.request_find()
    qtbot.waitUntil(lambda: panel.state in ("verified", "failed"), timeout=60_000)
    assert panel.state == "verified" and "ids 1x7" in panel.status.text()
    panel.table.item(ids, 3).setText("1x2x3")  # wrong rank: the job says why, in red
    panel.request_find()
    qtbot.waitUntil(lambda: panel.state in ("verified", "failed"), timeout=60_000)
    assert panel.state == "failed" and "does not fit the declared shape" in panel.status.text()
    panel.reset()
    assert not input_memory.recall(path)
    qtbot.waitUntil(lambda: panel.state in ("verified", "failed"), timeout=60_000)


def test_a_check_that_could_not_run_is_amber_unchecked(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    from edgestudio.core.convert.convert_recipes import ConvertRecipe

    src = models.save(models.odd_length(37), tmp_path / "odd.onnx")
    job = window.submit(ConvertRecipe(model=str(src), output=str(tmp_path / "o.onnx"), opset=18))
    qtbot.waitUntil(lambda: job.state.is_final, timeout=60_000)
    row = window.jobs_panel._rows[job.id]
    state = window.jobs_panel.table.item(row, 1)
    assert state.text() == "unchecked"
    assert state.foreground().color().name() == "#ef6c00"
    assert (
        "could not" in window.jobs_panel.table.item(row, 3).text()
        or "did not run" in window.jobs_panel.table.item(row, 3).text()
    )
