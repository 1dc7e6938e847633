"""Per-layer SQNR of one quantization run: sorted bars coloured by the verdict scale, with
their legend and the data it was measured on, beside the per-layer table (click a bar or a
row to find the layer in the graph)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QCursor
from PySide6.QtWidgets import (
    QLabel,
    QSplitter,
    QTableWidgetItem,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.quant.quant_results import Analysis, LayerError
from edgestudio.core.quant.quant_runs import QuantRun, write_layers_csv
from edgestudio.core.quant.verdicts import band_of, sqnr_bands
from edgestudio.gui.widgets.exporting import PLOT_FILTER, export_widget, save_path
from edgestudio.gui.widgets.plots import show_empty, show_values
from edgestudio.gui.widgets.tables import NumericItem, _num, results_table

# The figures first, the (long) tensor name last: a narrow table still shows what matters.
LAYER_COLUMNS = [
    "SQNR (dB)",
    "On target (dB)",
    "Node",
    "Op",
    "MSE",
    "Max abs",
    "Cosine",
    "Clipped (%)",
    "Tensor",
]
SQNR_COL, TARGET_COL, NODE_COL = 0, 1, 2
SQNR_AXIS_CAP_DB = 60.0  # bars above it are capped and hatched: as good as lossless


class SqnrView(QSplitter):
    """The Quantization tab's Activations: bars worst first, legend, per-layer table."""

    node_chosen = Signal(str)  # a bar or a row was chosen: select its node in the graph

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.run: QuantRun | None = None
        self.bars: list[LayerError] = []
        self.plot = pg.PlotWidget(background="w")
        self.plot.setObjectName("sqnr_plot")
        item = self.plot.getPlotItem()
        item.setLabel("left", "SQNR (dB), higher is better")
        item.setLabel("bottom", "layers, worst first (click a bar to find it in the graph)")
        item.showGrid(y=True, alpha=0.3)
        item.setMenuEnabled(False)
        self.legend = QLabel(sqnr_legend_html())
        self.legend.setObjectName("sqnr_legend")
        self.legend.setWordWrap(True)  # a target's divergence line must not widen the window
        self.plot.scene().sigMouseMoved.connect(self._hover)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.layers = results_table(LAYER_COLUMNS, "layers_table")
        self.layers.setSortingEnabled(True)
        self.layers.itemSelectionChanged.connect(self._layer_selected)
        show_empty(
            self.plot,
            "Quantize this model (Tools › Quantize…, Ctrl+Shift+Q) with "
            "evaluation data: the SQNR of every layer appears here, worst "
            "first.",
        )
        plot_box = QWidget()
        box = QVBoxLayout(plot_box)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.legend)
        box.addWidget(self.plot, 1)
        self.addWidget(plot_box)
        self.addWidget(self.layers)
        self.setSizes([600, 500])

    def show_run(self, run: QuantRun) -> None:
        """Plot and tabulate ``run``'s analysis."""
        self.run = run
        self.bars = [r for r in run.layers_worst_first() if r.sqnr_db is not None]
        item = self.plot.getPlotItem()
        if not self.bars:
            show_empty(
                self.plot,
                "No layer has an SQNR to draw: every compared layer gives "
                "inf/NaN values (see the table)."
                if any(r.non_finite for r in run.layers_worst_first())
                else "No layer could be compared (every activation of the float model was "
                "zero on this data).",
            )
        else:
            show_values(self.plot)
            values = [r.sqnr_db or 0.0 for r in self.bars]
            # Above the cap a layer is as good as lossless: its bar stops at the cap, hatched,
            # so a 360 dB layer does not squash the range where the differences matter.
            shown = [min(v, SQNR_AXIS_CAP_DB) for v in values]
            low, high = min(shown), max(shown)
            bands = sqnr_bands(run.analysis is not None and run.analysis.representative)
            brushes = [
                pg.mkBrush(band_of(v, bands)[2])
                if v <= SQNR_AXIS_CAP_DB
                else QBrush(QColor(band_of(v, bands)[2]), Qt.BrushStyle.BDiagPattern)
                for v in values
            ]
            item.addItem(
                pg.BarGraphItem(
                    x=np.arange(len(values)),
                    height=shown,
                    width=0.8,
                    brushes=brushes,
                    pen=pg.mkPen(None),
                )
            )
            on_target = [
                (k, min(r.sqnr_db_target, SQNR_AXIS_CAP_DB))
                for k, r in enumerate(self.bars)
                if r.sqnr_db_target is not None
            ]
            if on_target:  # the same layer as the target computed it: a dot on its bar
                item.addItem(
                    pg.ScatterPlotItem(
                        x=[k for k, _ in on_target],
                        y=[v for _, v in on_target],
                        symbol="d",
                        size=9,
                        brush=pg.mkBrush("#d32f2f"),
                        pen=pg.mkPen("w"),
                    )
                )
            capped = sum(1 for v in values if v > SQNR_AXIS_CAP_DB)
            if capped:
                note = pg.TextItem(
                    f"hatched: {capped} layer(s) above {SQNR_AXIS_CAP_DB:g} dB "
                    "(as good as lossless), bars capped",
                    color="#555",
                    anchor=(1, 0),
                )
                note.setPos(len(values) - 0.5, SQNR_AXIS_CAP_DB * 1.13)
                item.addItem(note)
            for bound, _, colour in bands[:2]:  # the scale's thresholds as dashed lines
                item.addItem(
                    pg.InfiniteLine(
                        pos=bound,
                        angle=0,
                        pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine),
                    )
                )
            item.setXRange(-1, len(values), padding=0)
            item.setYRange(
                min(0.0, low), max(high, bands[0][0]) * (1.16 if capped else 1.05), padding=0
            )
        broken = [r for r in run.layers_worst_first() if r.non_finite]
        divergence = run.analysis.target_divergence() if run.analysis else ""
        self.legend.setText(
            sqnr_legend_html(run.analysis)
            + (
                f"<br><span style='color:#d32f2f'>◆</span> {html.escape(divergence)}"
                if divergence
                else ""
            )
            + (
                f"<br><span style='color:#b3261e'>✖ {len(broken)} layer(s) give inf/NaN values "
                f"where the float model's are finite — no bar can show that; they head the table "
                f"({html.escape(broken[0].node)} first).</span>"
                if broken
                else ""
            )
        )
        self.layers.setSortingEnabled(False)
        layers = run.layers_worst_first()
        self.layers.setRowCount(len(layers))
        for r, layer in enumerate(layers):
            cells: list[QTableWidgetItem] = [
                NumericItem(
                    float("-inf") if layer.non_finite else layer.sqnr_db, ".2f", layer.sqnr_text()
                ),
                NumericItem(layer.sqnr_db_target, ".2f"),
                QTableWidgetItem(layer.node),
                QTableWidgetItem(layer.op_type),
                NumericItem(layer.mse, ".3g"),
                NumericItem(layer.max_abs, ".3g"),
                NumericItem(layer.cosine, ".5f"),
                NumericItem(layer.clipped_fraction, ".2%"),
                QTableWidgetItem(layer.tensor),
            ]
            for c, cell in enumerate(cells):
                cell.setToolTip(f"{layer.node}\n{layer.tensor}")
                self.layers.setItem(r, c, cell)
        # the target's column only for an analysis on a target (the legend says where)
        self.layers.setColumnHidden(
            TARGET_COL, not any(r.sqnr_db_target is not None for r in layers)
        )
        self.layers.setSortingEnabled(True)
        self.layers.sortItems(SQNR_COL, Qt.SortOrder.AscendingOrder)  # worst SQNR first

    def bar_at(self, scene_pos: QPointF) -> int | None:
        """The bar under a plot-scene position."""
        view = self.plot.getPlotItem().getViewBox()
        if not view.sceneBoundingRect().contains(scene_pos):
            return None
        x = view.mapSceneToView(scene_pos).x()
        index = round(x)
        return index if 0 <= index < len(self.bars) and abs(x - index) <= 0.4 else None

    def _hover(self, scene_pos: QPointF) -> None:
        index = self.bar_at(scene_pos)
        if index is None:
            QToolTip.hideText()
            return
        r = self.bars[index]
        QToolTip.showText(
            QCursor.pos(),
            f"{r.node}\n{r.tensor}\nSQNR {_num(r.sqnr_db, '.2f')} dB"
            f"  MSE {_num(r.mse, '.3g')}  cosine {_num(r.cosine, '.5f')}"
            + (
                f"\non the target: {r.sqnr_db_target:.2f} dB"
                if r.sqnr_db_target is not None
                else ""
            ),
            self.plot,
        )

    def _clicked(self, event: Any) -> None:
        index = self.bar_at(event.scenePos())
        if index is not None:
            self.choose_bar(index)

    def choose_bar(self, index: int) -> None:
        """Select bar ``index``'s node in the graph and its row in the table."""
        node = self.bars[index].node
        for r in range(self.layers.rowCount()):
            cell = self.layers.item(r, NODE_COL)
            if cell is not None and cell.text() == node:
                self.layers.selectRow(r)
                break
        self.node_chosen.emit(node)

    def _layer_selected(self) -> None:
        rows = {i.row() for i in self.layers.selectedItems()}
        if len(rows) == 1:
            cell = self.layers.item(rows.pop(), NODE_COL)
            if cell is not None:
                self.node_chosen.emit(cell.text())

    def export_plot(self, path: str | None = None) -> str | None:
        """Save the SQNR plot as PNG or SVG (asks for a file name when none is given)."""
        path = save_path(self, path, "Export plot", "sqnr.png", PLOT_FILTER)
        return export_widget(self.plot, path) if path else None

    def export_table(self, path: str | None = None) -> str | None:
        """Save the per-layer table as CSV."""
        path = save_path(self, path, "Export table", "layers.csv", "CSV (*.csv)")
        if not path or self.run is None:
            return None
        write_layers_csv(Path(path), self.run.analysis.layers if self.run.analysis else [])
        return path


def sqnr_legend_html(analysis: Analysis | None = None) -> str:
    """The colour scale's legend — what each colour means, in dB — and the data it was
    measured on (neutral greys without verdict words on synthetic data)."""
    representative = analysis is not None and analysis.representative
    swatch = '<span style="color:{}">■</span> {}'
    scale = "&nbsp;&nbsp;".join(
        swatch.format(colour, html.escape(label))
        for _, label, colour in sqnr_bands(representative or analysis is None)
    )
    if analysis is None or analysis.data is None:
        return scale
    where = html.escape(analysis.data.text())
    if representative:
        return f"{scale}&nbsp;&nbsp;<span style='color:#666'>on {where}</span>"
    return (
        f"{scale}&nbsp;&nbsp;<span style='color:#666'>pipeline check on {where}: "
        "no verdict without your data</span>"
    )
