"""Tools › Auto-tune…: the goal, the objective, the search space and a budget; candidates appear
on a live accuracy-vs-latency plot as they finish, and the best one can be kept as an ordinary
quantization run (with its analysis, so the graph shows where it loses accuracy)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.inputs.data_source import DataSource, parse_data_source
from edgestudio.core.job_api.options import declared_options
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.tune import Candidate, SearchSpace, TuneSettings
from edgestudio.core.quant.tune_goal import Goal, GoalError, synthetic_goal_warning
from edgestudio.gui.background import Background, BackgroundTask
from edgestudio.gui.forms.common import PathPicker
from edgestudio.gui.forms.option_widgets import option_widget, widget_value
from edgestudio.gui.quant.candidates_view import CandidatesView, winner_text
from edgestudio.jobs.scheduler import JobSubmitter
from edgestudio.jobs.tuner import Tuner


class TuneWindow(QWidget):
    """One model's auto-tune (a window of its own)."""

    keep_requested = Signal(object, object)  # Candidate, Tuner
    candidate_chosen = Signal(object)  # Candidate: show its per-layer SQNR on the graph

    def __init__(
        self,
        model: Path,
        providers: list[str],
        data_guess: str = "",
        parent: QWidget | None = None,
        ray_address: str = "",
        base: QuantRecipe | None = None,
        earlier: dict[str, Any] | None = None,
        jobs: JobSubmitter | None = None,
    ) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("tune_window")
        self.setWindowTitle(f"Auto-tune {model.name}")
        self.resize(1200, 780)
        self.model = model
        self.tuner: Tuner | None = None
        self.jobs = jobs  # the window's job queue: candidates are listed in its Jobs panel
        self._background = Background(self)
        self._preparing: BackgroundTask | None = None
        self._cancel_when_built = False
        self.timer = QTimer(self)
        self.timer.setInterval(100)
        self.timer.timeout.connect(self._tick)

        self.goal = QLineEdit("auto")
        self.goal.setToolTip(
            "auto: the task's own figure (text read, tags identical, top-1 kept…) at the "
            "bound its verdict calls good; or "
            "sqnr>=DB (output SQNR), top1_drop<=POINTS (labelled data), task "
            "figures such as text_agreement>=0.99, cer<=0.01, f1>=0.98 (a VAD's yes "
            "decisions), region_f1>=0.98 (a text detector's regions) or "
            "frame_agreement>=0.99, or "
            "max_abs<=ERROR"
        )
        self.provider = QComboBox()
        self.provider.addItems(providers or ["CPUExecutionProvider"])
        # TuneSettings' declared options (the tune command's --objective, --budget, …)
        defaults = TuneSettings(model="", data=None)
        self.options = {
            f.name: (f, opt, option_widget(f, opt, getattr(defaults, f.name)))
            for f, opt in declared_options(TuneSettings)
        }
        self.objective = self.options["objective"][2]
        self.threads = self.options["threads"][2]
        self.budget = self.options["budget"][2]
        self.minutes = self.options["minutes"][2]
        self.minutes.setMaximumWidth(110)  # a number beside its word, like the spin boxes
        self.workers = self.options["workers"][2]
        self.bench_runs = self.options["bench_runs"][2]
        self.workers.setToolTip(
            self.workers.toolTip() + ": at most Preferences › Jobs at once "
            "of them run, listed in the Jobs panel"
        )
        self.data = PathPicker(data_guess, "Data (*.npz);;All files (*)", save=False)
        self.samples = QSpinBox()
        self.samples.setRange(0, 1_000_000)
        self.samples.setValue(64)
        self.samples.setSpecialValueText("all")
        self.samples.setToolTip(
            "At most this many samples of the data for calibration and "
            "evaluation ('all': every one)"
        )
        self.samples_note = QLabel("")
        self.samples_note.setObjectName("samples_note")
        self.samples_note.setStyleSheet("color: #666")
        self.data.edit.textChanged.connect(self._data_changed)
        # Calibration data of its own; without it the data is split in two halves that never
        # share a sample (a candidate judged on its own calibration samples looks better).
        self.calib = PathPicker("", "Data (*.npz);;All files (*)", save=False)
        self.calib.setObjectName("tune_calib")
        self.calib.edit.setPlaceholderText(
            "optional: without it, the even-numbered samples of "
            "the data calibrate and the odd-numbered ones judge"
        )
        self.precision = QComboBox()
        self.precision.setObjectName("tune_precision")
        self.precision.addItems(["16-bit allowed", "8-bit everywhere"])
        self.precision.setToolTip(
            "16-bit allowed: A16W8 candidates, and the worst layers moved "
            "to 16-bit when nothing meets the goal"
        )
        self.integer_only = self.options["integer_only"][2]
        self.integer_only.setObjectName("tune_integer_only")
        self.target = self.options["target"][2]
        self.target.setObjectName("tune_target")
        self.modes = {
            m: QCheckBox(label) for m, label in (("qdq", "static QDQ"), ("dynamic", "dynamic"))
        }
        for box in self.modes.values():
            box.setChecked(True)
        self.exclusions = QCheckBox("exclude the worst layers when nothing meets the goal")
        self.exclusions.setChecked(True)
        if isinstance(self.integer_only, QCheckBox):  # no float fallback: nothing excluded
            self.integer_only.toggled.connect(lambda on: self.exclusions.setEnabled(not on))
        self.ray = QLineEdit(ray_address)
        self.ray.setPlaceholderText("optional: a Ray cluster address, or 'local'")
        self.base = base  # a run to start from (its types, exclusions…)
        self.earlier = earlier  # the document's last tune, to resume
        measured = sum(1 for c in (earlier or {}).get("candidates", []) if c.get("state") == "done")
        self.resume = QCheckBox(
            f"take the {measured} candidate(s) the last tune measured (not counted in the budget)"
        )
        self.resume.setObjectName("resume_tune")
        self.resume.setChecked(bool(measured))
        self.resume.setVisible(bool(measured))
        form = QFormLayout()
        form.addRow("Goal:", self.goal)
        form.addRow("Minimise:", self.objective)
        form.addRow("Latency on:", self._row(self.provider, QLabel("threads"), self.threads))
        form.addRow("Data:", self.data)
        form.addRow("Samples:", self._row(self.samples, self.samples_note))
        form.addRow("Calibration:", self.calib)
        self._data_changed(self.data.path())
        form.addRow("Try:", self._row(*self.modes.values(), self.exclusions))
        form.addRow("Precision:", self._row(self.precision, self.integer_only))
        form.addRow(
            "For target:", self._row(self.target, QLabel("(qnn-htp: judged on the emulated NPU)"))
        )
        form.addRow(
            "Budget:",
            self._row(
                self.budget,
                QLabel("candidates, at most"),
                self.minutes,
                QLabel("minutes"),
                self.bench_runs,
                QLabel("timed runs each"),
            ),
        )
        form.addRow("In parallel:", self._row(self.workers, QLabel("workers"), self.ray))
        self.check_winner = self.options["check_winner"][2]
        self.check_winner.setObjectName("tune_check_winner")
        form.addRow("Then:", self.check_winner)
        if measured:
            form.addRow("Resume:", self.resume)
        self.start_button = QPushButton("Start")
        self.start_button.setObjectName("start_tune")
        self.start_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.keep_button = QPushButton("Keep the best as a quantization run")
        self.keep_button.setEnabled(False)
        self.keep_button.clicked.connect(self._keep)
        self.status = QLabel("Set a goal and start: candidates appear on the plot as they finish.")
        self.status.setObjectName("tune_status")
        self.status.setWordWrap(True)
        buttons = QHBoxLayout()
        for b in (self.start_button, self.cancel_button, self.keep_button):
            buttons.addWidget(b)
        buttons.addStretch(1)

        self.candidates = CandidatesView()
        self.candidates.candidate_chosen.connect(self.candidate_chosen.emit)
        self.table = self.candidates.table
        self.table.itemSelectionChanged.connect(self._row_selected)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        layout.addWidget(self.candidates, 1)

    def prepare_recovery(self, goal: str, data: str, calib: str = "", samples: int = 0) -> None:
        """Set the form to recover a poor run's accuracy: its task goal, the data it was judged
        on and the data that calibrated it (``samples`` of each, 0: all), integer only (no
        float fallback)."""
        self.setWindowTitle(f"Recover accuracy: {self.model.name}")
        if goal:
            self.goal.setText(goal)
        if data:
            self.data.edit.setText(data)
            self.samples.setValue(samples)
        if calib:
            self.calib.edit.setText(calib)
        if isinstance(self.integer_only, QCheckBox):
            self.integer_only.setChecked(True)
        self.status.setText(
            "Recover accuracy without leaving integer: recipes by expected "
            "gain (per-channel, 16-bit activations, quantizers on compute "
            "operators), then the worst layers in 16-bit. Start when ready."
        )

    def _data_changed(self, text: str) -> None:
        """``synthetic:N`` carries its own count, which is what is used: say so, and take the
        Samples box out of play instead of showing a number that does nothing."""
        own = text.strip().split(":")
        counted = own[0] == "synthetic" and len(own) > 1 and own[1].strip().isdigit()
        self.samples.setEnabled(not counted)
        self.samples_note.setText(
            f"{int(own[1])} synthetic samples, as the data says" if counted else ""
        )

    @staticmethod
    def _row(*widgets: QWidget) -> QWidget:
        row = QWidget()
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        for w in widgets:
            if isinstance(w, (QSpinBox, QDoubleSpinBox)):
                w.setMaximumWidth(110)  # numbers stay beside their words
            line.addWidget(w)
        line.addStretch(1)
        return row

    # ----- running -----------------------------------------------------------------------------
    def settings(self) -> TuneSettings:
        """The tune as the form stands (raises ValueError on a bad goal or missing data)."""
        try:
            goal = Goal.parse(self.goal.text())
        except GoalError as exc:
            raise ValueError(str(exc)) from exc
        if not self.data.path():
            raise ValueError(
                "Choose calibration and evaluation data (an .npz, a folder, or images)."
            )
        data: DataSource = parse_data_source(self.data.path(), self.samples.value())
        calib = (
            parse_data_source(self.calib.path(), self.samples.value())
            if self.calib.path()
            else None
        )
        wide = self.precision.currentIndex() == 0
        modes = tuple(m for m, box in self.modes.items() if box.isChecked())
        if not modes:
            raise ValueError("Tick at least one mode to try.")
        return TuneSettings(
            base=self.base,
            model=str(self.model),
            data=data,
            goal=goal,
            calib=calib,
            provider=self.provider.currentText(),
            **{name: widget_value(f, widget) for name, (f, _, widget) in self.options.items()},
            space=SearchSpace(
                modes=modes,
                exclusions=self.exclusions.isChecked(),
                activation_types=("uint8", "uint16") if wide else ("uint8",),
            ),
            ray_address=self.ray.text().strip() or None,
            resume=self.earlier if self.resume.isChecked() else None,
        )

    def start(self) -> bool:
        """Start the tune in the background (False, with the reason shown, if its settings are
        wrong). The tuner is built off the UI thread: it reads the model, and connecting to a
        Ray cluster takes seconds."""
        try:
            settings = self.settings()
        except ValueError as exc:
            self._say_error(exc)
            return False
        self.tuner = None
        self._cancel_when_built = False
        self.start_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.status.setText(
            "Preparing the tune"
            + (f" (connecting to Ray at {settings.ray_address})…" if settings.ray_address else "…")
        )
        self._preparing = self._background.run(
            lambda progress, cancelled: Tuner(
                settings, on_change=self.candidates.show_candidate, jobs=self.jobs
            ),
            on_done=lambda tuner: self._begin(tuner, settings),
            on_error=self._not_started,
        )
        return True

    def _say_error(self, exc: Exception) -> None:
        self.status.setText(f"<span style='color:#c62828'>{html.escape(str(exc))}</span>")

    def _not_started(self, exc: Exception) -> None:
        self._preparing = None
        self._say_error(exc)
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    def _begin(self, tuner: Tuner, settings: TuneSettings) -> None:
        """The tuner is built: draw its axes and start driving it (unless cancelled meanwhile)."""
        self._preparing = None
        self.tuner = tuner
        if self._cancel_when_built:
            self.cancel()
            return
        self.candidates.follow(tuner, settings)
        self.timer.start()
        warning = synthetic_goal_warning(settings.data, settings.goal)
        resumed = self.tuner.resume_note if self.tuner is not None else ""
        self.status.setText(
            f"Tuning: goal {settings.goal.text()}, minimising "
            f"{settings.objective}…<br>"
            f"<span style='color:#666'>Data: {html.escape(tuner.data_note)}"
            "</span>"
            + (f"<br>{html.escape(resumed)}" if resumed else "")
            + (
                f"<br><span style='color:#8a5300'>⚠ {html.escape(warning)}</span>"
                if warning
                else ""
            )
        )

    def _tick(self) -> None:
        if self.tuner is None:
            return
        if self.tuner.rejudging and not self.status.text().startswith("Re-judging"):
            self.status.setText(
                "Re-judging the best candidate: on the data split the other way round, "
                "and calibrated on ¼ and ½ of its samples…"
            )
        if not self.tuner.poll():
            self.timer.stop()
            self._finished()

    def cancel(self) -> None:
        """Stop every candidate (nothing is left behind); a tune still being prepared is
        cancelled as soon as it is built."""
        if self._preparing is not None:
            self._cancel_when_built = True
            self.status.setText("Cancelling…")
            return
        if self.tuner is not None:
            self.tuner.cancel()
        self.timer.stop()
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.status.setText("Cancelled.")

    def _finished(self) -> None:
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        winner = self.tuner.winner if self.tuner is not None else None
        self.keep_button.setEnabled(winner is not None)
        self.candidates.draw()
        if winner is None:
            self.status.setText("No candidate could be analysed: the table says why.")
            return
        self.status.setText(winner_text(self.tuner, winner, self.model))
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

    # ----- choosing ----------------------------------------------------------------------------
    def _row_selected(self) -> None:
        rows = {i.row() for i in self.table.selectedItems()}
        self.keep_button.setEnabled(
            self.tuner is not None and len(rows) == 1 and self.tuner.finished
        )

    def chosen(self) -> Candidate | None:
        """The candidate selected in the table, else the best one."""
        if self.tuner is None:
            return None
        rows = {i.row() for i in self.table.selectedItems()}
        if len(rows) == 1 and (row := rows.pop()) < len(self.tuner.candidates):
            picked = self.tuner.candidates[row]
            return picked if picked.state == "done" else None
        return self.tuner.winner

    def _keep(self) -> None:
        candidate = self.chosen()
        if candidate is not None and self.tuner is not None:
            self.keep_requested.emit(candidate, self.tuner)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Qt: a tune still running is cancelled; its files go."""
        if self._preparing is not None:  # let the tuner be built, then stop it
            self._cancel_when_built = True
            self._background.wait()
            self._background.deliver()
        if self.tuner is not None:
            if not self.tuner.finished:
                self.tuner.cancel()
            self.tuner.cleanup()
        self.timer.stop()
        super().closeEvent(event)
