"""Small helpers that make pyqtgraph plots read well: an empty state that says what to do, and
category labels that never overlap."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics


def show_empty(plot: pg.PlotWidget, text: str) -> None:
    """Clear ``plot`` and say, in its middle, what fills it — instead of made-up 0–1 axes."""
    item = plot.getPlotItem()
    item.clear()
    fit = getattr(plot, "_category_fit", None)
    if fit is not None:  # category labels of earlier data: gone with it
        item.getViewBox().sigResized.disconnect(fit)
        plot._category_fit = None
    for side in ("left", "bottom"):
        item.getAxis(side).setStyle(showValues=False)
        item.getAxis(side).setTicks(None)
    _forget_empty_fit(plot)
    label = pg.TextItem(text, color="#757575", anchor=(0.5, 0.5))
    font = QFont()
    font.setPointSizeF(10)
    label.setFont(font)
    view = item.getViewBox()

    def wrap(*_: object) -> None:
        # The text wraps to the plot's width as it is laid out and resized (the widget's
        # width when this is called is often its default, not what it gets: text was clipped).
        label.setTextWidth(max(120.0, view.width() * 0.9))

    wrap()
    view.sigResized.connect(wrap)
    plot._empty_fit = wrap
    item.addItem(label)
    label.setPos(0.5, 0.5)
    item.setXRange(0, 1, padding=0)
    item.setYRange(0, 1, padding=0)


def _forget_empty_fit(plot: pg.PlotWidget) -> None:
    fit = getattr(plot, "_empty_fit", None)
    if fit is not None:
        plot.getPlotItem().getViewBox().sigResized.disconnect(fit)
        plot._empty_fit = None


def show_values(plot: pg.PlotWidget) -> None:
    """Undo :func:`show_empty`: axes with their values again (call before adding data)."""
    item = plot.getPlotItem()
    item.clear()
    _forget_empty_fit(plot)
    for side in ("left", "bottom"):
        item.getAxis(side).setStyle(showValues=True)
    item.enableAutoRange()


def category_ticks(labels: list[str], width_px: float) -> list[tuple[int, str]]:
    """Ticks for ``labels`` at 0, 1, 2…, shortened so that neighbours never overlap.

    A label is ``"name detail"`` split on its last space into two lines (or its own lines when
    it has some), each line elided in the middle to the room one category has; below ~36 px a
    category shows its number only (the full names are in the table and the tooltips).
    """
    if not labels:
        return []
    metrics = QFontMetrics(QFont())
    room = int(width_px / len(labels)) - 6
    if room < 36:
        return [(i, str(i + 1)) for i in range(len(labels))]
    ticks = []
    for i, label in enumerate(labels):
        head, _, tail = label.rpartition(" ")
        lines = label.split("\n") if "\n" in label else [head, tail] if head else [tail]
        short = [
            metrics.elidedText(line, pg.QtCore.Qt.TextElideMode.ElideMiddle, room) for line in lines
        ]
        ticks.append((i, "\n".join(short)))
    return ticks


def set_category_axis(plot: pg.PlotWidget, labels: list[str]) -> None:
    """Label the bottom axis with ``labels`` at 0, 1, 2…, refitted whenever the plot resizes."""
    item = plot.getPlotItem()
    view = item.getViewBox()
    # Categories are names, not magnitudes: one model's narrow range read "(x0.001)" otherwise.
    item.getAxis("bottom").enableAutoSIPrefix(False)

    def fit() -> None:
        width = view.width() if view.width() > 50 else max(plot.width() - 60, 50)
        item.getAxis("bottom").setTicks([category_ticks(labels, width)])

    previous = getattr(plot, "_category_fit", None)
    if previous is not None:
        view.sigResized.disconnect(previous)
    plot._category_fit = fit
    view.sigResized.connect(fit)
    fit()


def add_histogram(item: pg.PlotItem, counts: np.ndarray, edges: np.ndarray) -> None:
    """Draw a histogram (``counts`` between ``edges``) as filled steps: how a weight's values
    are spread, in the Properties and in the Quantization tab's Weights alike."""
    item.addItem(
        pg.PlotDataItem(
            edges,
            counts,
            stepMode="center",
            fillLevel=0,
            brush="#4f8fc0",
            pen=pg.mkPen("#2f5f80"),
        )
    )
