"""The weights of one quantization run: each weight's SQNR and quantization step, and the
chosen weight's histogram with its quantization grid and clipping range."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import onnx
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QTableWidgetItem, QWidget

from edgestudio.core.model.weights import read_weight, weight_histogram
from edgestudio.core.quant.quant_results import WeightError
from edgestudio.core.quant.quant_runs import QuantRun
from edgestudio.gui.widgets.plots import add_histogram, show_empty, show_values
from edgestudio.gui.widgets.tables import NumericItem, results_table

WEIGHT_COLUMNS = [
    "Weight",
    "SQNR dB",
    "Max abs",
    "S/2 (model)",
    "S/2 per-tensor",
    "S/2 per-channel (mean)",
]


class WeightsView(QSplitter):
    """The Quantization tab's Weights: the table beside the chosen weight's histogram (side
    by side, as the activations: the table keeps the tab's whole height for its rows)."""

    def __init__(self, model: onnx.ModelProto, model_path: Path, parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.model_path = model_path
        self.run: QuantRun | None = None
        self.weights = results_table(WEIGHT_COLUMNS, "weights_table")
        self.weights.itemSelectionChanged.connect(self._weight_selected)
        self.weight_plot = pg.PlotWidget(background="w")
        self.weight_plot.setObjectName("weight_plot")
        self.weight_plot.getPlotItem().setLabel("bottom", "weight value")
        self.weight_plot.getPlotItem().setLabel("left", "count")
        show_empty(
            self.weight_plot, "Pick a weight in the table to see its values and quantization grid."
        )
        self.addWidget(self.weights)
        self.addWidget(self.weight_plot)
        self.setSizes([600, 500])

    def show_run(self, run: QuantRun) -> None:
        """Tabulate ``run``'s weights, worst first."""
        self.run = run
        weights = run.analysis.weights if run.analysis else []
        if run.analysis is not None and not weights:
            # Seen on PP-OCR's classifier: its weights are Constant nodes, and pre-processing
            # fuses them (a Conv with its BatchNormalization) under new names.
            show_empty(
                self.weight_plot,
                "No quantized weight of this run matches a weight of the float model by name "
                "(onnxruntime's pre-processing fuses and renames weights; this model may keep "
                "its weights in Constant nodes): per-weight figures are not available here.",
            )
        self.weights.setRowCount(len(weights))
        for r, w in enumerate(sorted(weights, key=lambda w: w.sqnr_db or 0.0)):
            cells = [
                QTableWidgetItem(w.tensor),
                NumericItem(w.sqnr_db, ".2f"),
                NumericItem(w.max_abs, ".3g"),
                NumericItem(w.scale_bound, ".3g"),
                NumericItem(w.per_tensor_bound, ".3g"),
                NumericItem(w.per_channel_bound_mean, ".3g"),
            ]
            for c, cell in enumerate(cells):
                self.weights.setItem(r, c, cell)

    def open_worst(self) -> None:
        """Choose the worst weight (rows are worst first) when none is chosen, so that the
        histogram says something as soon as the tab opens."""
        if self.weights.rowCount() and not self.weights.selectedItems():
            self.weights.selectRow(0)

    def _weight_selected(self) -> None:
        rows = {i.row() for i in self.weights.selectedItems()}
        if len(rows) != 1 or self.run is None or self.run.analysis is None:
            return
        row = rows.pop()
        name_item = self.weights.item(row, 0)
        if name_item is None:
            return
        info = next(w for w in self.run.analysis.weights if w.tensor == name_item.text())
        self.show_weight(info)

    def show_weight(self, info: WeightError) -> None:
        """Histogram of a float weight with its quantization grid and clipping range."""
        tensor = self.initializers.get(info.tensor)
        plot = self.weight_plot.getPlotItem()
        if tensor is None:
            show_empty(self.weight_plot, f"{info.tensor} is not a weight of the float model.")
            return
        show_values(self.weight_plot)
        values = read_weight(tensor, self.model_path.parent).astype(np.float64)
        counts, edges = weight_histogram(values, bins=128)
        add_histogram(plot, counts, edges)
        step = 2 * info.scale_bound  # S: one quantization step of the model's scale
        low, high = float(values.min()), float(values.max())
        if step > 0 and (high - low) / step <= 64:  # the grid, where it is readable
            for k in np.arange(np.floor(low / step), np.ceil(high / step) + 1):
                plot.addItem(pg.InfiniteLine(k * step, pen=pg.mkPen("#bbbbbb", width=1)))
        for x in (low, high):  # the clipping range a per-tensor MinMax scale covers
            plot.addItem(pg.InfiniteLine(x, pen=pg.mkPen("#d32f2f", width=2)))
        # Two lines: the plot sits beside the table, narrower than the tab.
        plot.setTitle(
            f"{html.escape(info.tensor)}<br>S/2 per-tensor "
            f"{info.per_tensor_bound:.3g}, per-channel mean "
            f"{info.per_channel_bound_mean:.3g}"
            f"{' (model is per-channel)' if info.per_channel else ''}",
            size="9pt",
        )
