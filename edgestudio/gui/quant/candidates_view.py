"""The candidates of one auto-tune as they finish: accuracy against latency (or size) on a
plot, the float model's as a reference line, the goal's threshold dashed, each candidate a row
of the table (click a point to find its row, and its per-layer SQNR on the graph)."""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QSplitter, QTableWidgetItem, QWidget

from edgestudio.core.quant.tune import (
    Candidate,
    TuneSettings,
    no_positives_text,
    slower_than_float_text,
    speed_vs_float,
)
from edgestudio.core.quant.tune_goal import Goal, show_value
from edgestudio.core.quant.winner_check import fold_text
from edgestudio.gui.widgets.plots import show_empty, show_values
from edgestudio.gui.widgets.tables import results_table
from edgestudio.jobs.tuner import Tuner

COLUMNS = [
    "#",
    "Recipe",
    "Excluded",
    "Goal figure",
    "Meets",
    "Median (ms)",
    "vs float",
    "Size (KiB)",
    "Note",
]
MET, NOT_MET, WINNER = "#2e7d32", "#9e9e9e", "#ff6d00"
UNCONFIRMED = "#f9a825"  # met the goal as judged, not on the swapped split or at 2× error


class CandidatesView(QSplitter):
    """The plot beside the table; :meth:`follow` a tuner, then :meth:`show_candidate` as each
    one changes."""

    candidate_chosen = Signal(object)  # Candidate: show its per-layer SQNR on the graph

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.tuner: Tuner | None = None
        self.plot = pg.PlotWidget(background="w")
        self.plot.setObjectName("pareto_plot")
        self.plot.getPlotItem().setMenuEnabled(False)
        for side in ("left", "bottom"):  # plain milliseconds and dB, no "x0.001"
            self.plot.getPlotItem().getAxis(side).enableAutoSIPrefix(False)
        show_empty(
            self.plot,
            "Each candidate appears here as it finishes: accuracy against "
            "latency, the point's size the model's.",
        )
        self.scatter = pg.ScatterPlotItem()
        self.scatter.sigClicked.connect(self._point_clicked)
        # The float model as the plot's reference: a vertical line at its latency (or size); its
        # accuracy is what the candidates are measured against, so it has no height.
        self.float_line = pg.InfiniteLine(
            angle=90,
            movable=False,
            pen=pg.mkPen("#616161", width=1.5, style=Qt.PenStyle.DotLine),
            label="",
            labelOpts={"position": 0.92, "color": "#424242", "anchors": [(0, 0.5), (0, 0.5)]},
        )
        self.table = results_table(COLUMNS, "candidates_table")
        # A recipe's title can be long (its placement, 16-bit layers…): elided, in full in its
        # tooltip, so the figures and "vs float" stay in view at 1280 px.
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(1, 210)

        self.addWidget(self.plot)
        self.addWidget(self.table)
        self.setSizes([520, 680])

    def follow(self, tuner: Tuner, settings: TuneSettings) -> None:
        """Start over for ``tuner``: an empty table, the plot's axes named for its goal and
        objective."""
        self.tuner = tuner
        self.table.setRowCount(0)
        show_values(self.plot)
        item = self.plot.getPlotItem()
        item.addItem(self.scatter)
        item.addItem(self.float_line)
        self.float_line.hide()
        self.goal_line = pg.InfiniteLine(
            pos=settings.goal.threshold,
            angle=0,
            pen=pg.mkPen(MET, width=1, style=Qt.PenStyle.DashLine),
        )
        item.addItem(self.goal_line)
        self._name_goal(settings.goal)
        item.setLabel(
            "bottom",
            "median latency (ms)" if settings.objective == "latency" else "model size (KiB)",
        )

    def _name_goal(self, goal: Goal) -> None:
        """The goal's threshold line and the vertical axis's name (``auto`` is named once the
        first analysis has found the task's figure)."""
        self.goal_line.setPos(goal.threshold)
        self.goal_line.setVisible(not goal.is_auto)
        self.plot.getPlotItem().setLabel(
            "left",
            {
                "sqnr": "output SQNR (dB)",
                "top1_drop": "top-1 drop (points)",
                "max_abs": "max abs output error",
                "auto": "the task's figure",
            }.get(goal.metric, goal.metric.replace("_", " ")),
        )

    def show_candidate(self, candidate: Candidate) -> None:
        """Fill ``candidate``'s row and redraw the plot."""
        row = candidate.number - 1
        if self.table.rowCount() <= row:
            self.table.setRowCount(row + 1)

        def fig(value: float | None, spec: str) -> str:
            return "—" if value is None else format(value, spec)

        goal = self.tuner.settings.goal if self.tuner is not None else Goal()
        float_ms = self.tuner.float_latency_ms if self.tuner is not None else None
        cells = [
            str(candidate.number),
            candidate.recipe.title().removeprefix("Quantize: "),
            str(len(candidate.recipe.exclude)),
            "—" if candidate.goal_value is None else show_value(goal, candidate.goal_value),
            self.tuner.meets_word(candidate) if self.tuner is not None else "",
            fig(candidate.latency_ms, ".3f"),
            speed_vs_float(candidate.latency_ms, float_ms) or "—",
            fig(None if candidate.quant_bytes is None else candidate.quant_bytes / 1024, ".1f"),
            candidate.error
            or (candidate.why if candidate.state != "running" else f"running: {candidate.why}"),
        ]
        tips = {1: candidate.recipe.command_line(), 4: self._meets_tip(candidate)}
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(tips.get(col, text))
            self.table.setItem(row, col, item)
        self.draw()

    def draw(self) -> None:
        """Every finished candidate as a point; the ones meeting the goal green, the best
        ringed."""
        if self.tuner is None:
            return
        self._name_goal(self.tuner.settings.goal)
        for candidate in self.tuner.candidates:  # goal figures change once "auto" is fixed
            self._refresh_figure(candidate)
        done = [
            c
            for c in self.tuner.candidates
            if c.state == "done"
            and c.goal_value is not None
            and c.objective(self.tuner.settings.objective) is not None
        ]
        winner = self.tuner.winner
        latency = self.tuner.settings.objective == "latency"
        xs = [(c.latency_ms if latency else (c.quant_bytes or 0) / 1024) or 0.0 for c in done]
        sizes = np.array([c.quant_bytes or 0 for c in done], dtype=float)
        scale = 8 + 16 * (sizes / sizes.max()) if len(sizes) and sizes.max() > 0 else sizes
        self.scatter.setData(
            x=xs,
            y=[c.goal_value for c in done],
            size=list(scale),
            data=[c.number for c in done],
            brush=[
                pg.mkBrush(
                    MET if self.tuner.meets_word(c) == "yes" else UNCONFIRMED if c.met else NOT_MET
                )
                for c in done
            ],
            pen=[pg.mkPen(WINNER, width=3) if c is winner else pg.mkPen("#424242") for c in done],
        )
        reference = self.tuner.float_latency_ms if latency else self.tuner.float_bytes / 1024
        if reference is not None:
            self.float_line.setPos(reference)
            self.float_line.label.setText(
                f"float32: {reference:.3g} ms" if latency else f"float32: {reference:,.0f} KiB"
            )
        self.float_line.setVisible(reference is not None)

    def _refresh_figure(self, candidate: Candidate) -> None:
        """Rewrite the goal, meets and vs-float cells of ``candidate``'s row."""
        row = candidate.number - 1
        if self.tuner is None or row >= self.table.rowCount() or self.table.item(row, 0) is None:
            return
        goal, tuner = self.tuner.settings.goal, self.tuner
        cells = {
            3: "—" if candidate.goal_value is None else show_value(goal, candidate.goal_value),
            4: tuner.meets_word(candidate),
            6: speed_vs_float(candidate.latency_ms, tuner.float_latency_ms) or "—",
        }
        for col, text in cells.items():
            item = self.table.item(row, col)
            if item is not None and item.text() != text:
                item.setText(text)
                item.setToolTip(self._meets_tip(candidate) if col == 4 else text)

    def _meets_tip(self, candidate: Candidate) -> str:
        """The *meets* cell's tooltip: the word, and the figure with the error doubled."""
        if self.tuner is None:
            return ""
        word = self.tuner.meets_word(candidate) or "not met"
        if candidate.doubled_value is None:
            return word
        doubled = show_value(self.tuner.settings.goal, candidate.doubled_value)
        return f"{word} — with its output error doubled: {doubled}"

    def _point_clicked(self, _item: object, points: list[object]) -> None:
        if points and self.tuner is not None:
            number = int(points[0].data())  # type: ignore[attr-defined]
            self.table.selectRow(number - 1)
            candidate = self.tuner.candidates[number - 1]
            if candidate.analysis is not None:  # where it loses accuracy, on the graph
                self.candidate_chosen.emit(candidate)


def winner_text(tuner: Tuner | None, winner: Candidate, model: Path) -> str:
    """What the tune found, as the window's status says it: the winner, whether it meets the
    goal (and what it ties with), its cost, the command that makes it, the data it was judged
    on and the recipes not tried."""
    verdict = (
        tuner.verdict_of(winner)
        if tuner is not None
        else "meets the goal"
        if winner.met
        else "is the closest: no recipe in the search space meets the goal"
    )
    out = model.with_name(f"{model.stem}_tuned_{winner.number}.onnx")
    command = dataclasses.replace(winner.recipe, output=str(out)).command_line()
    analysis = winner.analysis
    data = ""
    if analysis is not None and analysis.data is not None:
        data = f"Goal judged on {analysis.data.text()}" + (
            ""
            if analysis.representative
            else ": which recipes run and how far they move, not which is accurate"
        )
    tied = [c.number for c in tuner.latency_ties() if c is not winner] if tuner is not None else []
    if tied:
        verdict += (
            ", tied on latency with "
            + ", ".join(f"#{n}" for n in tied)
            + " (no measurable difference: the smallest model wins)"
        )
    cost = [
        f"{winner.quant_bytes / 1024:.0f} KiB" if winner.quant_bytes else "",
        f"{len(winner.recipe.int16)} node(s) in 16-bit" if winner.recipe.int16 else "",
        f"{len(winner.recipe.exclude)} in float" if winner.recipe.exclude else "nothing in float",
        f"found in {winner.seconds:.0f} s",
    ]
    skipped = tuner.skipped if tuner is not None else []
    checks: list[str] = []
    if tuner is not None:
        goal = tuner.settings.goal
        checks = [
            fold_text(c, check, goal)
            for c in tuner.candidates
            for check in tuner.checks_of(c)
            if check.kind == "swapped" and c is not winner
        ]
        checks += [tuner.split_note(winner)] if tuner.split_note(winner) else []
        checks += [tuner.headroom_note(winner)] if tuner.headroom_note(winner) else []
        advice = tuner.calibration_advice(winner)
        checks += [f"Calibration curve: {advice}."] if advice else []
        positives = no_positives_text(tuner.candidates)
        checks += [f"⚠ Calibration: {positives}"] if positives else []
        evidence = tuner.evidence_note(winner)
        checks += [f"Judged on: {evidence}."] if evidence else []
        slower = slower_than_float_text(winner, tuner.float_latency_ms)
        checks += [f"⚠ {slower}"] if slower else []
        checks = ([tuner.goal_note] if tuner.goal_note else []) + checks
    return (
        f"Best: #{winner.number} {verdict} ({', '.join(c for c in cost if c)})"
        f" — <code>{html.escape(command)}</code>"
        + "".join(f"<br>{html.escape(line)}" for line in checks)
        + (f"<br><span style='color:#666'>{html.escape(data)}.</span>" if data else "")
        + "".join(
            f"<br><span style='color:#666'>Not tried: {html.escape(line)}</span>"
            for line in skipped
        )
    )
