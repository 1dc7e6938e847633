"""Jobs from the GUI: the convert form, the Jobs panel, cancel, and a responsive main loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QElapsedTimer, QTimer
from PySide6.QtGui import QGuiApplication

from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.gui import forms
from edgestudio.gui.forms.convert_form import ConvertDialog
from edgestudio.gui.main_window import MainWindow
from edgestudio.jobs.runner import JobState
from tests import models
from tests.gui.conftest import open_and_wait


def _wait_done(qtbot, window: MainWindow, job, timeout: int = 60_000) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: job.state.is_final, timeout=timeout)


@pytest.mark.e2e
def test_convert_form_runs_a_checked_conversion(qtbot, window: MainWindow, tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(opset=13), tmp_path / "m.onnx")
    open_and_wait(qtbot, window, src)
    dialog = window.show_convert_form()
    assert isinstance(dialog, ConvertDialog)
    assert not dialog.run_button.isEnabled()  # nothing to do yet
    dialog.opset_box.setChecked(True)
    dialog.opset.setValue(17)
    out = tmp_path / "m17.onnx"
    dialog.output.edit.setText(str(out))
    assert dialog.run_button.isEnabled()
    assert dialog.command.text() == f"edgestudio convert {src} -o {out} --opset 17"
    dialog.accept()
    job = window.jobs.jobs[-1]
    _wait_done(qtbot, window, job)
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.passed and out.exists()
    panel = window.jobs_panel
    qtbot.waitUntil(lambda: panel.table.item(0, 1).text() == "succeeded")
    panel.table.selectRow(0)
    assert "equivalent" in panel.details.toPlainText()
    assert panel.open_button.isEnabled()
    with qtbot.waitSignal(window.loads_settled, timeout=30_000):
        panel.open_button.click()
    assert [d.path.name for d in window.documents()] == ["m.onnx", "m17.onnx"]


@pytest.mark.e2e
def test_convert_form_blocks_impossible_downgrade(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    open_and_wait(qtbot, window, models.save(models.gelu_model(), tmp_path / "g.onnx"))
    dialog = window.show_convert_form()
    assert dialog is not None
    dialog.opset_box.setChecked(True)
    dialog.opset.setValue(17)
    assert not dialog.run_button.isEnabled()
    assert "Gelu (opset 20)" in dialog.findings.text()
    dialog.reject()


@pytest.mark.e2e
def test_convert_form_warns_about_baked_reshape(qtbot, window: MainWindow, tmp_path: Path) -> None:
    open_and_wait(qtbot, window, models.save(models.fixed_batch_reshape(), tmp_path / "r.onnx"))
    dialog = window.show_convert_form()
    assert dialog is not None
    dialog.set_new_dim("x", 0, "batch")
    assert dialog.run_button.isEnabled()
    assert "flatten_reshape" in dialog.findings.text()
    assert "--dynamic x:0=batch" in dialog.command.text()
    dialog.reject()


@pytest.mark.e2e
def test_cancel_from_the_panel_and_copy_command(qtbot, window: MainWindow) -> None:
    job = window.submit(DiagnosticRecipe(action="hang"))
    qtbot.waitUntil(lambda: job.state is JobState.RUNNING, timeout=10_000)
    panel = window.jobs_panel
    panel.table.selectRow(0)
    panel.copy_button.click()
    assert QGuiApplication.clipboard().text() == "edgestudio diagnostic hang --seconds 1.0"
    assert panel.cancel_button.isEnabled()
    panel.cancel_button.click()
    _wait_done(qtbot, window, job)
    assert job.state is JobState.CANCELLED
    qtbot.waitUntil(lambda: panel.table.item(0, 1).text() == "cancelled")


@pytest.mark.e2e
def test_crash_is_shown_and_the_app_lives_on(qtbot, window: MainWindow) -> None:
    job = window.submit(DiagnosticRecipe(action="crash"))
    _wait_done(qtbot, window, job)
    assert job.state is JobState.CRASHED
    window.jobs_panel.table.selectRow(0)
    text = window.jobs_panel.details.toPlainText()
    assert "SIGSEGV" in text and "Worker stderr" in text
    assert window.isVisible()


@pytest.mark.e2e
def test_out_of_memory_job_is_named_with_its_peak_memory(qtbot, window: MainWindow) -> None:
    job = window.submit(DiagnosticRecipe(action="hog", megabytes=200))
    _wait_done(qtbot, window, job)
    assert job.state is JobState.FAILED
    panel = window.jobs_panel
    panel.table.selectRow(0)
    assert "ran out of memory" in panel.table.item(0, 3).text()  # type: ignore[union-attr]
    assert panel.table.item(0, 5).text().endswith(" MB")  # type: ignore[union-attr]
    assert "ran out of memory" in panel.details.toPlainText()
    assert window.isVisible()


@pytest.mark.e2e
def test_main_loop_stays_responsive_while_a_cpu_heavy_job_runs(qtbot, window: MainWindow) -> None:
    gaps: list[int] = []
    clock = QElapsedTimer()
    clock.start()
    ticker = QTimer()
    ticker.setInterval(10)

    def tick() -> None:
        gaps.append(clock.restart())

    ticker.timeout.connect(tick)
    ticker.start()
    job = window.submit(DiagnosticRecipe(action="spin", seconds=3.0))
    _wait_done(qtbot, window, job)
    ticker.stop()
    assert job.state is JobState.SUCCEEDED
    assert len(gaps) > 50
    assert max(gaps[1:]) < 250, f"longest main-loop stall {max(gaps[1:])} ms"


def test_export_form_without_torch_says_how_to_install(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from edgestudio.gui.forms import export_form

    monkeypatch.setattr(export_form, "torch_available", lambda: False)
    dialog = export_form.ExportDialog()
    qtbot.addWidget(dialog)
    assert "pip install" in dialog.findChild(type(dialog.findings), "export_notice").text()
    assert not dialog.run_button.isEnabled()


def test_packaged_app_explains_that_pytorch_is_left_out(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys

    from edgestudio.core.convert.export_recipes import torch_missing_hint

    assert "not installed in this environment" in torch_missing_hint()
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert "packaged EdgeStudio leaves PyTorch out" in torch_missing_hint()


def test_export_form_builds_the_recipe(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from edgestudio.gui.forms.export_form import ExportDialog

    src = tmp_path / "net.pt2"
    src.write_bytes(b"placeholder: the form only checks the file exists")
    dialog = ExportDialog()
    qtbot.addWidget(dialog)
    dialog.source.edit.setText(str(src))
    dialog.set_inputs([("x", "2x1x6x6", "float32")])
    dialog.dynamic.setText("x:0=batch")
    dialog.option("output_names").setText("logits")
    assert dialog.output.path() == str(tmp_path / "net.onnx")
    if forms.export_form.torch_available():
        assert dialog.run_button.isEnabled(), dialog.findings.text()
    recipe = dialog.recipe()
    assert recipe.inputs[0].shape == (2, 1, 6, 6) and recipe.output_names == ("logits",)
    # ExportRecipe's declared options make the form's fields; each reaches the recipe
    from edgestudio.core.convert.export_recipes import ExportRecipe
    from edgestudio.core.job_api.options import declared_options

    assert set(dialog.options) == {f.name for f, _ in declared_options(ExportRecipe)}
    dialog.option("opset").setValue(17)
    dialog.option("exporter").setCurrentText("legacy")
    recipe = dialog.recipe()
    assert (recipe.opset, recipe.exporter) == (17, "legacy")
    assert "--exporter legacy" in recipe.command_line() and "--opset 17" in recipe.command_line()
    assert recipe.command_line().startswith(f"edgestudio export {src} -o {tmp_path / 'net.onnx'}")
    dialog.dynamic.setText("y:0=batch")
    assert not dialog.run_button.isEnabled()
    assert "not an input" in dialog.findings.text()


@pytest.mark.e2e
def test_queue_runs_jobs_one_after_another(qtbot, window: MainWindow) -> None:
    from dataclasses import replace

    assert window.jobs.max_parallel == window.prefs.parallel_jobs == 2
    window.set_preferences(replace(window.prefs, parallel_jobs=1))  # Jobs at once: 1
    assert window.jobs.max_parallel == 1
    first = window.submit(DiagnosticRecipe(action="spin", seconds=0.2))
    second = window.submit(DiagnosticRecipe(action="spin", seconds=0.2))
    assert second.state is JobState.QUEUED
    _wait_done(qtbot, window, second)
    assert first.state is second.state is JobState.SUCCEEDED
    assert first.finished_at is not None and second.started_at is not None
    assert second.started_at >= first.finished_at - 0.2
