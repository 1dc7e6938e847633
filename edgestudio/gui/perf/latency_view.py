"""The Performance tab's Latency: each benchmarked model × provider × threads as a box of its
runs and a median bar, a sortable table of every figure, the verdicts on quantized models, and
export as plots, CSV or JSON."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.paths import atomic_target, write_atomically
from edgestudio.core.perf.perf_results import LatencyRow
from edgestudio.core.perf.providers import provider_colour, short_name
from edgestudio.core.serialise import to_json
from edgestudio.gui.widgets.exporting import PLOT_FILTER, export_widget, save_path
from edgestudio.gui.widgets.plots import set_category_axis, show_empty, show_values
from edgestudio.gui.widgets.tables import NumericItem, results_table

RESULT_COLUMNS = [
    "Model",
    "Where",
    "EP",
    "Threads",
    "Median (ms)",
    "p90 (ms)",
    "p99 (ms)",
    "Min (ms)",
    "Mean (ms)",
    "Std (ms)",
    "Runs/s",
    "CPU (ms)",
    "Timed runs",
    "Note",
]


class LatencyView(QWidget):
    """The last benchmark's rows as plots and a table."""

    measured = Signal(float, str)  # the edge's median (ms) and where it was measured

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.results: list[LatencyRow] = []
        self.table = results_table(RESULT_COLUMNS, "bench_table")
        self.table.setSortingEnabled(True)
        self.dist_plot = pg.PlotWidget(background="w")
        self.dist_plot.setObjectName("latency_distribution")
        self.dist_plot.getPlotItem().setLabel("left", "latency (ms)")
        self.dist_plot.setToolTip("Box: p25–p75, line: median, whiskers: min–p99, dots: runs")
        self.dist_plot.getPlotItem().setTitle("Latency distribution")
        self.median_plot = pg.PlotWidget(background="w")
        self.median_plot.setObjectName("latency_medians")
        self.median_plot.getPlotItem().setLabel("left", "median (ms), whisker to p90")
        self.median_plot.getPlotItem().setTitle("Medians")
        for plot in (self.dist_plot, self.median_plot):
            plot.getPlotItem().getAxis("left").enableAutoSIPrefix(False)
        export_row = QHBoxLayout()
        self.export_buttons: list[QPushButton] = []
        for label, fn in (
            ("Export plots…", self.export_plots),
            ("Export CSV…", self.export_csv),
            ("Export JSON…", self.export_json),
        ):
            button = QPushButton(label)
            button.clicked.connect(lambda _=False, f=fn: f())
            button.setEnabled(False)  # until there is something to export
            button.setToolTip("Run a benchmark first")
            export_row.addWidget(button)
            self.export_buttons.append(button)
        export_row.addStretch(1)
        for plot in (self.dist_plot, self.median_plot):
            show_empty(
                plot,
                "Run a benchmark (left): the latency of each model on each provider appears here.",
            )
            plot.getPlotItem().setLabel("bottom", "model, provider × threads")
        rl = QVBoxLayout(self)
        rl.setContentsMargins(0, 0, 0, 0)
        plots = QSplitter(Qt.Orientation.Horizontal)
        plots.addWidget(self.dist_plot)
        plots.addWidget(self.median_plot)
        plots.setSizes([500, 500])
        self.verdicts = QLabel()
        self.verdicts.setObjectName("bench_verdicts")
        self.verdicts.setWordWrap(True)
        self.verdicts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdicts.hide()
        rl.addWidget(plots, 2)
        rl.addWidget(self.table, 1)
        rl.addWidget(self.verdicts)
        rl.addLayout(export_row)

    def show_results(
        self,
        results: list[LatencyRow],
        verdicts: list[str] | None = None,
        failures: list[str] | None = None,
    ) -> None:
        """Fill the table and both plots; ``verdicts`` say how quantized models compare,
        ``failures`` which devices' links failed part-way."""
        self.results = results
        lines = [
            f'<b style="color:#c62828">⚠ {html.escape(f)} (the rows measured before are kept)</b>'
            for f in failures or []
        ]
        lines += [
            (f'<b style="color:#c62828">{html.escape(v)}</b>' if "SLOWER" in v else html.escape(v))
            for v in verdicts or []
        ]
        self.verdicts.setVisible(bool(lines))
        self.verdicts.setText("<br>".join(lines))
        ok = [r for r in results if r.ok]
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(results))
        for row, r in enumerate(results):
            where = QTableWidgetItem(r.where + (f" · ort {r.runtime}" if r.runtime else ""))
            where.setToolTip(f"measured on {r.where} with onnxruntime {r.runtime or '?'}")
            cells: list[QTableWidgetItem] = [
                QTableWidgetItem(Path(r.model).name),
                where,
                QTableWidgetItem(short_name(r.ep)),
                NumericItem(r.threads, "d"),
            ]
            if not r.ok:
                cells.append(QTableWidgetItem(r.error or "not measured"))
            else:
                cells += [
                    NumericItem(v, ".3f")
                    for v in (r.median_ms, r.p90_ms, r.p99_ms, r.min_ms, r.mean_ms, r.std_ms)
                ]
                cells += [
                    NumericItem(r.throughput_per_s, ".0f"),
                    NumericItem(r.cpu_median_ms, ".3f"),
                    # what it was made with, also when restored from a workspace
                    NumericItem(r.runs, "d"),
                    QTableWidgetItem("contended machine" if r.contended else ""),
                ]
            for col, cell in enumerate(cells):
                self.table.setItem(row, col, cell)
        self.table.setSortingEnabled(True)
        remote = any(r.device for r in ok)  # then every label says where, on a line of its own
        labels = [
            f"{Path(r.model).stem}\n{r.device or 'here'}\n{short_name(r.ep)}×{r.threads}"
            if remote
            else f"{Path(r.model).stem} {short_name(r.ep)}×{r.threads}"
            for r in ok
        ]
        names = "".join(
            f"<br>{i + 1}: {Path(r.model).name} on {r.ep}, {r.threads} thread(s), {r.where}"
            for i, r in enumerate(ok)
        )
        for button in self.export_buttons:
            button.setEnabled(bool(results))
            button.setToolTip("")
        if not ok:
            for plot in (self.dist_plot, self.median_plot):
                show_empty(plot, "No configuration could be measured: the table says why.")
            return
        for plot in (self.dist_plot, self.median_plot):
            show_values(plot)
        self.dist_plot.setToolTip(
            "Box: p25–p75, line: median, whiskers: min–p99, dots: runs "
            "(slow outliers above the p99 whiskers are off the scale)" + names
        )
        self.median_plot.setToolTip("Median latency, whisker to p90" + names)
        dist = self.dist_plot.getPlotItem()
        med = self.median_plot.getPlotItem()
        rng = np.random.default_rng(0)
        for i, r in enumerate(ok):
            samples = np.asarray(r.samples_ms)
            q1, q3 = np.percentile(samples, [25, 75])
            colour = provider_colour(r.ep)
            # measured rows (``ok``) have every figure
            median, p90, p99, low = (
                r.median_ms or 0.0,
                r.p90_ms or 0.0,
                r.p99_ms or 0.0,
                r.min_ms or 0.0,
            )
            dist.addItem(
                pg.BarGraphItem(
                    x=[i],
                    y0=[q1],
                    height=[q3 - q1],
                    width=0.5,
                    brush=pg.mkBrush(colour + "80"),
                    pen=pg.mkPen(colour),
                )
            )
            dist.addItem(
                pg.PlotDataItem([i - 0.25, i + 0.25], [median] * 2, pen=pg.mkPen("k", width=2))
            )
            dist.addItem(
                pg.ErrorBarItem(
                    x=np.array([i]),
                    y=np.array([median]),
                    top=np.array([p99 - median]),
                    bottom=np.array([median - low]),
                    beam=0.2,
                    pen=pg.mkPen(colour),
                )
            )
            jitter = i + rng.uniform(-0.18, 0.18, len(samples))
            dist.addItem(
                pg.ScatterPlotItem(
                    jitter, samples, size=3, pen=None, brush=pg.mkBrush(60, 60, 60, 90)
                )
            )
            med.addItem(pg.BarGraphItem(x=[i], height=[median], width=0.6, brush=colour))
            med.addItem(
                pg.ErrorBarItem(
                    x=np.array([i]),
                    y=np.array([median]),
                    top=np.array([p90 - median]),
                    bottom=np.array([0.0]),
                    beam=0.25,
                )
            )
        for plot in (self.dist_plot, self.median_plot):
            set_category_axis(plot, labels)
            plot.getPlotItem().setXRange(-0.6, len(ok) - 0.4, padding=0)
        # Scale to the whiskers: a few slow runs (a context switch) would squash every box.
        top = max((r.p99_ms or 0.0) for r in ok)
        dist.setYRange(0, top * 1.15 if top > 0 else 1, padding=0)
        med.enableAutoRange(axis="y")
        # A device's latency is the edge's when one was measured; this machine's otherwise.
        on_device = [r for r in ok if r.device] or ok
        best = min(on_device, key=lambda r: r.median_ms or 0.0)
        self.measured.emit(best.median_ms or 0.0, best.where)

    def export_plots(self, path: str | None = None) -> str | None:
        """Save the latency plots (PNG or SVG; ``_medians`` is added for the second plot)."""
        path = save_path(self, path, "Export plots", "latency.png", PLOT_FILTER)
        if not path:
            return None
        p = Path(path)
        export_widget(self.dist_plot, path)
        export_widget(self.median_plot, str(p.with_name(f"{p.stem}_medians{p.suffix}")))
        return path

    def export_csv(self, path: str | None = None) -> str | None:
        """Save the results table as CSV."""
        import csv

        path = save_path(self, path, "Export CSV", "latency.csv", "CSV (*.csv)")
        if not path:
            return None
        keys = [
            "model",
            "device",
            "runtime",
            "ep",
            "threads",
            "median_ms",
            "p90_ms",
            "p99_ms",
            "min_ms",
            "mean_ms",
            "std_ms",
            "throughput_per_s",
            "cpu_median_ms",
            "contended",
            "runs",
            "error",
        ]
        with atomic_target(path) as tmp, open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(to_json(r) for r in self.results)
        return path

    def export_json(self, path: str | None = None) -> str | None:
        """Save the raw results (timings included) as JSON."""
        path = save_path(self, path, "Export JSON", "latency.json", "JSON (*.json)")
        if not path:
            return None
        write_atomically(path, json.dumps({"results": to_json(self.results)}, indent=2))
        return path
