"""The Jobs panel: every job of the session with progress, stage, time, log and actions."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.gui.job_controller import JobController
from edgestudio.jobs.runner import Job, JobState

_STATE_COLOURS = {
    JobState.SUCCEEDED: "#2e7d32",
    JobState.FAILED: "#c62828",
    JobState.CRASHED: "#c62828",
    JobState.TIMED_OUT: "#ef6c00",
    JobState.CANCELLED: "#757575",
    JobState.RUNNING: "#1565c0",
    JobState.QUEUED: "#757575",
}
# A succeeded job whose result check did not pass: red when it failed, amber when it could not
# run (the result is written, but nothing was compared).
_OUTCOMES = {"failed": ("not equivalent", "#c62828"), "unchecked": ("unchecked", "#ef6c00")}
COLUMNS = ["Job", "State", "Progress", "Stage", "Elapsed", "Memory"]


def describe_job(job: Job[Any]) -> str:
    """The full text shown for a job: command, outcome, check, warnings, log, stderr tail."""
    lines = [f"$ {job.recipe.command_line()}", ""]
    state = job.state.value
    if job.report is not None and job.report.check is not None and job.state is JobState.SUCCEEDED:
        state += f" — {job.report.check.verdict()}"
    lines.append(f"State: {state}  ({job.elapsed:.1f} s{_memory_text(job, ', peak ')})")
    if job.error:
        lines.append(f"Error: {job.error}")
    if job.report is not None:
        if job.report.output:
            lines.append(f"Output: {job.report.output}")
        if job.report.check is not None:
            lines += job.report.check.text_lines()
    if job.warnings:
        lines += ["", "Warnings:", *(f"  ⚠ {w}" for w in job.warnings)]
    lines += ["", "Log:", *job.log]
    if job.stderr_tail and job.state in (JobState.CRASHED, JobState.FAILED, JobState.TIMED_OUT):
        lines += ["", "Worker stderr (tail):", job.stderr_tail]
    return "\n".join(lines)


def _memory_text(job: Job[Any], prefix: str = "") -> str:
    """The worker's peak memory, e.g. ``312 MB`` (empty when unknown)."""
    if job.peak_memory_mb is None:
        return ""
    return f"{prefix}{job.peak_memory_mb:,.0f} MB"


class JobsPanel(QWidget):
    """Lists the controller's jobs; Cancel, Copy equivalent command, Open result, Clear."""

    open_result_requested = Signal(str)  # path of a finished job's output

    def __init__(self, controller: JobController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("jobs_panel")
        self.controller = controller
        self._rows: dict[str, int] = {}
        self._jobs: list[Job[Any]] = []

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("jobs_table")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        memory = self.table.horizontalHeaderItem(COLUMNS.index("Memory"))
        if memory is not None:
            memory.setToolTip("The worker's peak resident memory, sampled while it ran")
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 2, 4, 5):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._selection_changed)

        self.details = QPlainTextEdit()
        self.details.setObjectName("job_details")
        self.details.setReadOnly(True)
        self.details.setPlaceholderText("Select a job to see its log and result.")

        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self._cancel_selected)
        self.copy_button = QPushButton("Copy equivalent command")
        self.copy_button.clicked.connect(self._copy_command)
        self.open_button = QPushButton("Open result")
        self.open_button.clicked.connect(self._open_result)
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.clicked.connect(self.clear_finished)
        buttons = QHBoxLayout()
        for b in (self.cancel_button, self.copy_button, self.open_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.clear_button)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.table)
        splitter.addWidget(self.details)
        splitter.setSizes([600, 400])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(buttons)
        layout.addWidget(splitter)

        controller.job_added.connect(self._add)
        controller.job_updated.connect(self._update)
        controller.job_finished.connect(self._update)
        self._refresh_buttons()

    # ----- rows ------------------------------------------------------------------------------
    def _add(self, job: Job[Any]) -> None:
        if job.id in self.controller.background:
            return  # the app's own probes are not the user's jobs
        row = self.table.rowCount()
        self.table.insertRow(row)
        self._rows[job.id] = row
        self._jobs.append(job)
        self.table.setItem(row, 0, QTableWidgetItem(job.recipe.title()))
        self._item(row, 0).setToolTip(job.recipe.command_line())
        for col in (1, 3, 4, 5):
            self.table.setItem(row, col, QTableWidgetItem(""))
        bar = QProgressBar()
        bar.setRange(0, 1000)
        bar.setTextVisible(True)
        self.table.setCellWidget(row, 2, bar)
        self._update(job)
        self.table.selectRow(row)

    def _item(self, row: int, column: int) -> QTableWidgetItem:
        item = self.table.item(row, column)
        assert item is not None  # every cell gets an item in _add
        return item

    def _update(self, job: Job[Any]) -> None:
        row = self._rows.get(job.id)
        if row is None:
            return
        state = job.state.value
        colour = _STATE_COLOURS[job.state]
        if job.state is JobState.SUCCEEDED and job.report is not None:
            outcome = job.report.outcome
            if outcome in _OUTCOMES:
                state, colour = _OUTCOMES[outcome]
        state_item = self._item(row, 1)
        state_item.setText(state)
        state_item.setForeground(QColor(colour))
        stage = job.stage
        if job.state.is_final:
            check = job.report.check if job.report else None
            stage = job.error or (
                check.verdict()
                + (f": {check.unchecked_reason()}" if check.unchecked_reason() else "")
                if check
                else job.state.value
            )
        self._item(row, 3).setText(stage)
        self._item(row, 3).setToolTip(job.error or job.stage)
        self._item(row, 4).setText(f"{job.elapsed:.1f} s")
        self._item(row, 5).setText(_memory_text(job))
        self._item(row, 5).setToolTip("The worker process's peak resident memory")
        bar = self.table.cellWidget(row, 2)
        assert isinstance(bar, QProgressBar)
        if job.state is JobState.SUCCEEDED:
            bar.setValue(1000)
        elif job.state is JobState.RUNNING and job.fraction is None:
            bar.setRange(0, 0)  # busy indicator until the first fraction arrives
        else:
            bar.setRange(0, 1000)
            bar.setValue(int((job.fraction or 0.0) * 1000))
        if job is self.selected_job():
            self._refresh_details()
        self._refresh_buttons()

    def clear_finished(self) -> None:
        """Remove finished jobs from the list."""
        keep = [j for j in self._jobs if not j.state.is_final]
        self.table.setRowCount(0)
        self._rows.clear()
        self._jobs = []
        for job in keep:
            self._add(job)
        self.details.clear()
        self._refresh_buttons()

    # ----- selection and actions -------------------------------------------------------------
    def selected_job(self) -> Job[Any] | None:
        """The job of the selected row."""
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows:
            return None
        row = rows[0].row()
        return next((j for j in self._jobs if self._rows.get(j.id) == row), None)

    def _selection_changed(self) -> None:
        self._refresh_details()
        self.details.verticalScrollBar().setValue(0)  # a newly selected job reads from the top

    def _refresh_details(self) -> None:
        job = self.selected_job()
        if job is None:
            self.details.clear()
        else:
            scroll = self.details.verticalScrollBar()
            at_end = scroll.value() >= scroll.maximum() - 4
            self.details.setPlainText(describe_job(job))
            if at_end:
                scroll.setValue(scroll.maximum())
        self._refresh_buttons()

    def _refresh_buttons(self) -> None:
        job = self.selected_job()
        self.cancel_button.setEnabled(job is not None and not job.state.is_final)
        self.copy_button.setEnabled(job is not None)
        self.open_button.setEnabled(
            job is not None
            and job.state is JobState.SUCCEEDED
            and job.report is not None
            and bool(job.report.output)
            and str(job.report.output).endswith(".onnx")
        )
        self.clear_button.setEnabled(any(j.state.is_final for j in self._jobs))

    def _cancel_selected(self) -> None:
        job = self.selected_job()
        if job is not None:
            self.controller.cancel(job)

    def _copy_command(self) -> None:
        job = self.selected_job()
        if job is not None:
            QGuiApplication.clipboard().setText(job.recipe.command_line())

    def _open_result(self) -> None:
        job = self.selected_job()
        if job is not None and job.report is not None and job.report.output:
            self.open_result_requested.emit(job.report.output)
