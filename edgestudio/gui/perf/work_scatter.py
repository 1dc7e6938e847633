"""The Performance tab's "time vs work" scatter: one dot per profiled kernel, its measured time
against the MACs it does (log–log), the kernels slow for their work in red and named."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from edgestudio.core.model.cost_recipe import ModelCost
from edgestudio.core.perf.perf_results import Profile
from edgestudio.core.perf.time_vs_work import SLOW_FACTOR, KernelWork, kernel_work
from edgestudio.gui.widgets.plots import show_empty, show_values

SLOW_LISTED = 5


class WorkScatter(QWidget):
    """Time against work for a profile, when the model's cost is counted."""

    node_chosen = Signal(str)  # a slow kernel clicked: show it on the graph

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget(background=None)
        self.plot.setObjectName("time_vs_work")
        self.plot.setMinimumHeight(220)
        self.note = QLabel()
        self.note.setObjectName("slow_kernels")
        self.note.setWordWrap(True)
        self.note.linkActivated.connect(self.node_chosen)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        self.rows: list[KernelWork] = []
        self.show_profile(None, None)

    def show_profile(self, profile: Profile | None, cost: ModelCost | None) -> None:
        """Plot ``profile``'s kernels against ``cost``'s work (a hint when either is missing)."""
        self.rows = kernel_work(profile, cost) if profile and cost else []
        if not self.rows:
            show_empty(
                self.plot,
                "Time vs MACs: needs a profile (above) and the model's cost "
                "(Summary › Count MACs and memory).",
            )
            self.note.setText("")
            return
        show_values(self.plot)
        item = self.plot.getPlotItem()
        item.setLogMode(x=True, y=True)
        item.setLabel("bottom", "work (MACs; FLOPs/2 for ops without MACs)")
        item.setLabel("left", "time per run (µs)")
        for axis in ("left", "bottom"):
            item.getAxis(axis).enableAutoSIPrefix(False)  # decades read as they are
        for is_slow, colour in ((False, "#4f8fc0"), (True, "#c62828")):
            rows = [r for r in self.rows if r.slow is is_slow]
            if rows:  # plot() (not a bare ScatterPlotItem): it follows the log axes
                item.plot(
                    np.array([r.work for r in rows]),
                    np.array([r.time_us for r in rows]),
                    pen=None,
                    symbol="o",
                    symbolSize=8,
                    symbolPen=None,
                    symbolBrush=pg.mkBrush(colour),
                )
        item.enableAutoRange()
        slow = sorted((r for r in self.rows if r.slow), key=lambda r: -r.time_us)
        if slow:
            listed = ", ".join(
                f"<a href='{html.escape(r.node)}'>{html.escape(r.node)}</a> "
                f"({r.op_type}, {r.time_us:.0f} µs)"
                for r in slow[:SLOW_LISTED]
            )
            self.note.setText(
                f"<b style='color:#c62828'>{len(slow)} kernel(s) slow for their "
                f"work</b> (over {SLOW_FACTOR:g}× the median time per MAC): "
                f"{listed}"
            )
        else:
            self.note.setText(f"No kernel takes over {SLOW_FACTOR:g}× the median time per MAC.")
