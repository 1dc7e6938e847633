"""The Quantization panel: run history, per-layer SQNR as sorted bars and a table, weights with
their quantization grid, the exclusion loop and side-by-side comparison of runs."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pyqtgraph as pg
from PySide6.QtCore import QPoint, QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QCursor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidgetItem,
    QTabWidget,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.model.weights import read_weight, weight_histogram
from edgestudio.core.quant.quant_results import Analysis, LayerError, WeightError, sqnr_text
from edgestudio.core.quant.quant_runs import QuantRun, compare, write_layers_csv
from edgestudio.core.quant.verdicts import (
    VERDICT_COLOURS,
    Verdict,
    band_of,
    sqnr_bands,
    verdict_html,
)
from edgestudio.core.workspace.document import ModelDocument, Overlay, OverlayKind
from edgestudio.gui.quant.sensitivity_view import SensitivityView
from edgestudio.gui.widgets.exporting import export_widget
from edgestudio.gui.widgets.plots import show_empty, show_values
from edgestudio.gui.widgets.tables import NumericItem, _num, results_table

HISTORY_COLUMNS = [
    "Run",
    "Mode",
    "State",
    "Verdict",
    "Size",
    "Output SQNR (dB)",
    "Worst layer (dB)",
    "Top-1",
    "Agreement",
]
# The figures first, the (long) tensor name last: a narrow table still shows what matters.
LAYER_COLUMNS = ["SQNR (dB)", "Node", "Op", "MSE", "Max abs", "Cosine", "Clipped (%)", "Tensor"]
SQNR_COL, NODE_COL = 0, 1
WEIGHT_COLUMNS = [
    "Weight",
    "SQNR dB",
    "Max abs",
    "S/2 (model)",
    "S/2 per-tensor",
    "S/2 per-channel (mean)",
]
SQNR_AXIS_CAP_DB = 60.0  # bars above it are capped and hatched: as good as lossless


class QuantPanel(QWidget):
    """Everything about the quantization runs of one model."""

    node_chosen = Signal(str)  # a layer was clicked: select its node in the graph
    # (QuantRun, list[str]): open the Quantize form on that run with those nodes excluded too
    requantize_form_requested = Signal(object)
    compare_requested = Signal(object)  # QuantRun to show beside the float model
    tune_requested = Signal(object)  # QuantRun to start an auto-tune from
    recover_requested = Signal(object)  # QuantRun whose accuracy to recover (integer only)
    rank_requested = Signal(object, int)  # QuantRun whose layers to rank by the task, how many

    def __init__(
        self, document: ModelDocument, model: onnx.ModelProto, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("quant_panel")
        self.document = document
        self.model_path = document.path
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.current: QuantRun | None = None
        self._bars: list[LayerError] = []

        self.history = results_table(HISTORY_COLUMNS, "history_table")
        self.history.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.history.itemSelectionChanged.connect(self._history_selected)
        self.history.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.history.customContextMenuRequested.connect(self._history_menu)
        self.compare_button = QPushButton("Compare selected runs")
        self.compare_button.clicked.connect(self.show_comparison)
        self.compare_float_button = QPushButton("Compare with float")
        self.compare_float_button.setObjectName("compare_with_float")
        self.compare_float_button.setToolTip(
            "The quantized model beside the float one: inserted "
            "Q/DQ, fused and changed nodes, SQNR per layer"
        )
        self.compare_float_button.clicked.connect(
            lambda: self.current is not None and self.compare_requested.emit(self.current)
        )
        self.overlay_button = QPushButton("Colour the graph by SQNR")
        self.overlay_button.clicked.connect(self._request_overlay)
        self.hint = QLabel(
            "Quantize this model (Tools › Quantize…, Ctrl+Shift+Q): each run and "
            "its analysis appear here."
        )
        self.hint.setWordWrap(True)
        self.recover_button = QPushButton("Recover accuracy…")
        self.recover_button.setObjectName("recover_accuracy")
        self.recover_button.setToolTip(
            "Search for a recipe that meets the task's goal without "
            "leaving integer (16-bit where it pays, quantizer "
            "placement), judged on data held out from calibration"
        )
        self.recover_button.clicked.connect(
            lambda: self.current is not None and self.recover_requested.emit(self.current)
        )
        top_buttons = QHBoxLayout()
        top_buttons.addWidget(self.hint, 1)
        top_buttons.addWidget(self.recover_button)
        top_buttons.addWidget(self.overlay_button)
        top_buttons.addWidget(self.compare_float_button)
        top_buttons.addWidget(self.compare_button)

        self.plot = pg.PlotWidget(background="w")
        self.plot.setObjectName("sqnr_plot")
        item = self.plot.getPlotItem()
        item.setLabel("left", "SQNR (dB), higher is better")
        item.setLabel("bottom", "layers, worst first (click a bar to find it in the graph)")
        item.showGrid(y=True, alpha=0.3)
        item.setMenuEnabled(False)
        self.legend = QLabel(sqnr_legend_html())
        self.legend.setObjectName("sqnr_legend")
        self.verdict = QLabel()
        self.verdict.setObjectName("verdict_label")
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict.hide()
        self.plot.scene().sigMouseMoved.connect(self._hover)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.layers = results_table(LAYER_COLUMNS, "layers_table")
        self.layers.setSortingEnabled(True)
        self.layers.itemSelectionChanged.connect(self._layer_selected)

        self.weights = results_table(WEIGHT_COLUMNS, "weights_table")
        self.weights.itemSelectionChanged.connect(self._weight_selected)
        self.weight_plot = pg.PlotWidget(background="w")
        self.weight_plot.setObjectName("weight_plot")
        self.weight_plot.getPlotItem().setLabel("bottom", "weight value")
        self.weight_plot.getPlotItem().setLabel("left", "count")
        # Side by side, as the activations: the table keeps the tab's whole height for its rows
        # (stacked, a Jobs dock below left it two).
        weights_tab = QSplitter(Qt.Orientation.Horizontal)
        weights_tab.addWidget(self.weights)
        weights_tab.addWidget(self.weight_plot)
        weights_tab.setSizes([600, 500])

        plot_box = QWidget()
        pb = QVBoxLayout(plot_box)
        pb.setContentsMargins(0, 0, 0, 0)
        pb.addWidget(self.legend)
        pb.addWidget(self.plot, 1)
        activations = QSplitter(Qt.Orientation.Horizontal)
        activations.addWidget(plot_box)
        activations.addWidget(self.layers)
        activations.setSizes([600, 500])
        self.tabs = QTabWidget()
        self.tabs.addTab(activations, "Activations")
        self.tabs.addTab(weights_tab, "Weights")
        self.sensitivity = SensitivityView()
        self.sensitivity.rank_requested.connect(
            lambda n: self.current is not None and self.rank_requested.emit(self.current, n)
        )
        self.sensitivity.node_chosen.connect(self.node_chosen.emit)
        self.sensitivity.show_result(document.sensitivity)
        document.events.sensitivity.connect(self.sensitivity.show_result)
        self.tabs.addTab(self.sensitivity, "Sensitivity")
        self.tabs.currentChanged.connect(self._tab_shown)

        self.worst_n = QSpinBox()
        self.worst_n.setRange(1, 1000)
        self.worst_n.setValue(3)
        self.requantize_button = QPushButton("Re-quantize without the worst")
        self.requantize_button.setObjectName("requantize")
        self.requantize_button.clicked.connect(self._requantize)
        export_plot = self.export_plot_button = QPushButton("Export plot…")
        export_plot.clicked.connect(self.export_plot)
        export_table = self.export_table_button = QPushButton("Export table (CSV)…")
        export_table.clicked.connect(self.export_table)
        show_empty(
            self.plot,
            "Quantize this model (Tools › Quantize…, Ctrl+Shift+Q) with "
            "evaluation data: the SQNR of every layer appears here, worst "
            "first.",
        )
        show_empty(
            self.weight_plot, "Pick a weight in the table to see its values and quantization grid."
        )
        bottom = QHBoxLayout()
        bottom.addWidget(QLabel("Exclude the"))
        bottom.addWidget(self.worst_n)
        bottom.addWidget(QLabel("worst layers and"))
        bottom.addWidget(self.requantize_button)
        bottom.addStretch(1)
        bottom.addWidget(export_plot)
        bottom.addWidget(export_table)

        splitter = QSplitter(Qt.Orientation.Vertical)
        history_box = QWidget()
        hb = QVBoxLayout(history_box)
        hb.setContentsMargins(0, 0, 0, 0)
        hb.addLayout(top_buttons)
        # Three runs stay visible: the exclude → re-quantize loop is read across runs.
        self.history.setMinimumHeight(
            self.history.horizontalHeader().sizeHint().height()
            + 3 * self.history.verticalHeader().defaultSectionSize()
            + 4
        )
        hb.addWidget(self.history, 1)
        # The verdict names its data, metric and diagnostics: it scrolls rather than clips.
        self.verdict_area = QScrollArea()
        self.verdict_area.setObjectName("verdict_area")
        self.verdict_area.setWidgetResizable(True)
        self.verdict_area.setFrameShape(QFrame.Shape.NoFrame)
        self.verdict_area.setWidget(self.verdict)
        self.verdict_area.setMinimumHeight(96)
        self.verdict_area.hide()
        hb.addWidget(self.verdict_area, 1)
        splitter.addWidget(history_box)
        splitter.addWidget(self.tabs)
        splitter.setSizes([300, 440])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(splitter, 1)
        layout.addLayout(bottom)
        document.run_added.connect(self.refresh_run)
        document.run_changed.connect(self.refresh_run)
        document.restored.connect(self._show_all_runs)
        self._show_all_runs()

    # ----- runs --------------------------------------------------------------------------------
    @property
    def runs(self) -> list[QuantRun]:
        """The document's quantization runs, in the order they were started."""
        return self.document.runs

    def _show_all_runs(self) -> None:
        self.current = None
        self.history.setRowCount(0)
        for run in self.runs:
            self.refresh_run(run)
        self._refresh_buttons()

    def refresh_run(self, run: QuantRun) -> None:
        """Update a run's history row; show its analysis if it is the selected one."""
        row = self.runs.index(run)
        if self.history.rowCount() <= row:
            self.history.setRowCount(row + 1)
        s = run.summary()
        top1 = (
            f"{s.float_top1:.1%} → {s.quant_top1:.1%}"
            if s.quant_top1 is not None and s.float_top1 is not None
            else "—"
        )
        state = run.error or run.state.value
        quantization = run.quantization
        if quantization is not None and quantization.calibration == "reused":
            state += " · calibration reused"
        cells = [
            f"#{run.number}",
            s.mode,
            state,
            s.verdict or "—",
            f"{s.size_bytes / 1024:.1f} KiB" if s.size_bytes else "—",
            sqnr_text(s.output_sqnr_db, s.output_non_finite),
            (
                f"{sqnr_text(s.worst_layer_sqnr_db, s.worst_layer_non_finite, '.1f')}"
                f"{'' if s.worst_layer_non_finite else ' dB'} {s.worst_layer or ''}"
            ).strip(),
            top1,
            _num(s.top1_agreement, ".1%"),
        ]
        notes = "\n".join(quantization.notes) if quantization is not None else ""
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            # the state's tooltip says what the job did on the way (calibration reused, ...)
            item.setToolTip(f"{text}\n{notes}" if col == 2 and notes else text)
            if col == 3 and s.verdict in VERDICT_COLOURS:
                item.setForeground(QColor(VERDICT_COLOURS[s.verdict or ""]))
            self.history.setItem(row, col, item)
        if run.analysis is not None and (
            self.current is None or self.current is run or not self.history.selectedItems()
        ):
            self.history.selectRow(row)
            self.show_run(run)
        self.hint.setVisible(not self.runs)
        self._refresh_buttons()

    def _show_verdict(self, verdict: Verdict | None) -> None:
        if not verdict:
            self.verdict_area.hide()
            return
        self.verdict.setText(verdict_html(verdict))
        self.verdict.show()
        self.verdict_area.show()

    def _history_selected(self) -> None:
        rows = sorted({i.row() for i in self.history.selectedItems()})
        if len(rows) == 1 and self.runs[rows[0]].analysis is not None:
            self.show_run(self.runs[rows[0]])
        self._refresh_buttons()

    def _history_menu(self, pos: QPoint) -> None:
        from PySide6.QtWidgets import QMenu

        row = self.history.rowAt(pos.y())
        if not 0 <= row < len(self.runs):
            return
        run = self.runs[row]
        menu = QMenu(self)
        menu.addAction("Auto-tune from this run…", lambda: self.tune_requested.emit(run))
        recover = menu.addAction("Recover accuracy…", lambda: self.recover_requested.emit(run))
        recover.setEnabled(run.analysis is not None)
        compare = menu.addAction("Compare with float", lambda: self.compare_requested.emit(run))
        compare.setEnabled(bool(run.output))
        menu.popup(self.history.viewport().mapToGlobal(pos))
        self.menu = menu

    def select_runs(self, runs: list[QuantRun]) -> None:
        """Select ``runs`` in the history table (and nothing else)."""
        self.history.clearSelection()
        mode = self.history.selectionMode()
        self.history.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for run in runs:
            if run in self.runs:
                self.history.selectRow(self.runs.index(run))
        self.history.setSelectionMode(mode)

    def selected_runs(self) -> list[QuantRun]:
        """The runs selected in the history table."""
        return [self.runs[r] for r in sorted({i.row() for i in self.history.selectedItems()})]

    def _refresh_buttons(self) -> None:
        self.compare_button.setEnabled(len(self.selected_runs()) >= 2)
        has = self.current is not None and bool(self.current.analysis)
        self.export_plot_button.setEnabled(has)
        self.compare_float_button.setEnabled(self.current is not None and bool(self.current.output))
        self.export_table_button.setEnabled(has)
        self.overlay_button.setEnabled(has)
        self.requantize_button.setEnabled(has)
        # offered where a verdict on real data says the run is not good
        verdict = (
            self.current.analysis.verdict
            if self.current is not None and self.current.analysis is not None
            else None
        )
        self.recover_button.setVisible(
            verdict is not None and verdict.level in ("poor", "acceptable")
        )
        run = self.current
        self.sensitivity.rank_button.setEnabled(
            run is not None
            and run.analysis is not None
            and run.analyze_on is not None
            and run.recipe.mode == "qdq"
            and run.recipe.activation_type in ("uint8", "int8")
        )

    # ----- one run's analysis ------------------------------------------------------------------
    def show_run(self, run: QuantRun) -> None:
        """Plot and tabulate ``run``'s analysis."""
        self.current = run
        self._bars = [r for r in run.layers_worst_first() if r.sqnr_db is not None]
        item = self.plot.getPlotItem()
        if not self._bars:
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
            values = [r.sqnr_db or 0.0 for r in self._bars]
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
        self._show_verdict(run.analysis.verdict if run.analysis else None)
        broken = [r for r in run.layers_worst_first() if r.non_finite]
        self.legend.setText(
            sqnr_legend_html(run.analysis)
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
        self.layers.setSortingEnabled(True)
        self.layers.sortItems(SQNR_COL, Qt.SortOrder.AscendingOrder)  # worst SQNR first
        weights = run.analysis.weights if run.analysis else []
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
        self._refresh_buttons()

    def bar_at(self, scene_pos: QPointF) -> int | None:
        """The bar under a plot-scene position."""
        view = self.plot.getPlotItem().getViewBox()
        if not view.sceneBoundingRect().contains(scene_pos):
            return None
        x = view.mapSceneToView(scene_pos).x()
        index = round(x)
        return index if 0 <= index < len(self._bars) and abs(x - index) <= 0.4 else None

    def _hover(self, scene_pos: QPointF) -> None:
        index = self.bar_at(scene_pos)
        if index is None:
            QToolTip.hideText()
            return
        r = self._bars[index]
        QToolTip.showText(
            QCursor.pos(),
            f"{r.node}\n{r.tensor}\nSQNR {_num(r.sqnr_db, '.2f')} dB"
            f"  MSE {_num(r.mse, '.3g')}  cosine {_num(r.cosine, '.5f')}",
            self.plot,
        )

    def _clicked(self, event: Any) -> None:
        index = self.bar_at(event.scenePos())
        if index is not None:
            self.choose_bar(index)

    def choose_bar(self, index: int) -> None:
        """Select bar ``index``'s node in the graph and its row in the table."""
        node = self._bars[index].node
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

    def _request_overlay(self) -> None:
        if self.current is not None:
            self.document.overlay = Overlay(OverlayKind.SQNR, self.current.number)

    def worst_nodes(self, n: int) -> list[str]:
        """The nodes of the ``n`` worst layers of the current run that it quantized."""
        if self.current is None or self.current.analysis is None:
            return []
        return self.current.analysis.worst_excludable(n)

    def _requantize(self) -> None:
        if self.current is not None:
            worst = self.worst_nodes(self.worst_n.value())
            self.requantize_form_requested.emit((self.current, worst))

    def _tab_shown(self, index: int) -> None:
        """The Weights tab opens on its worst weight (rows are worst first) when none is
        chosen, so its histogram says something at once."""
        if (
            self.tabs.widget(index) is not None
            and index == 1
            and self.weights.rowCount()
            and not self.weights.selectedItems()
        ):
            self.weights.selectRow(0)

    # ----- weights -----------------------------------------------------------------------------
    def _weight_selected(self) -> None:
        rows = {i.row() for i in self.weights.selectedItems()}
        if len(rows) != 1 or self.current is None or self.current.analysis is None:
            return
        row = rows.pop()
        name_item = self.weights.item(row, 0)
        if name_item is None:
            return
        info = next(w for w in self.current.analysis.weights if w.tensor == name_item.text())
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
        plot.addItem(
            pg.PlotDataItem(
                edges,
                counts,
                stepMode="center",
                fillLevel=0,
                brush="#4f8fc0",
                pen=pg.mkPen("#2f5f80"),
            )
        )
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

    # ----- comparison and export ---------------------------------------------------------------
    def show_comparison(self) -> QDialog:
        """A side-by-side table of the selected runs."""
        runs = self.selected_runs()
        dialog = QDialog(self)
        dialog.setWindowTitle("Compare runs")
        table = results_table(["Metric"] + [f"Run #{r.number}" for r in runs], "compare_table")
        rows = compare(runs)
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                table.setItem(r, c, QTableWidgetItem(text))
        QVBoxLayout(dialog).addWidget(table)
        dialog.resize(300 + 180 * len(runs), 420)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.comparison = table
        return dialog

    def export_plot(self, path: str | None = None) -> str | None:
        """Save the SQNR plot as PNG or SVG (asks for a file name when none is given)."""
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self, "Export plot", "sqnr.png", "PNG (*.png);;SVG (*.svg)"
            )
        if not path:
            return None
        return export_widget(self.plot, path)

    def export_table(self, path: str | None = None) -> str | None:
        """Save the per-layer table as CSV."""
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export table", "layers.csv", "CSV (*.csv)")
        if not path or self.current is None:
            return None
        write_layers_csv(Path(path), self.current.analysis.layers if self.current.analysis else [])
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
