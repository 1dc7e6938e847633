"""The Quantization panel: the run history with each run's verdict, the exclusion loop and the
side-by-side comparison of runs; the chosen run's per-layer SQNR (:mod:`sqnr_view`), weights
(:mod:`weights_view`) and sensitivity (:mod:`sensitivity_view`) in its tabs."""

from __future__ import annotations

from typing import TypeVar

import onnx
from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.quant.quant_results import sqnr_text
from edgestudio.core.quant.quant_runs import QuantRun, compare
from edgestudio.core.quant.verdicts import (
    VERDICT_COLOURS,
    Verdict,
    verdict_html,
)
from edgestudio.core.workspace.document import ModelDocument, Overlay, OverlayKind
from edgestudio.gui.quant.sensitivity_view import SensitivityView
from edgestudio.gui.quant.sqnr_view import SqnrView
from edgestudio.gui.quant.weights_view import WeightsView
from edgestudio.gui.widgets.lazy_tab import LazyTab
from edgestudio.gui.widgets.tables import _num, results_table

STATE_CHARS = 48  # a failed run's State cell: the start of its message


def short_error(error: str) -> str:
    """The first line of ``error``, cut to :data:`STATE_CHARS` with an ellipsis."""
    first = error.strip().splitlines()[0] if error.strip() else error
    return first if len(first) <= STATE_CHARS else first[: STATE_CHARS - 1].rstrip() + "…"


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


V = TypeVar("V", SqnrView, WeightsView)


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
        self.current: QuantRun | None = None

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

        self.verdict = QLabel()
        self.verdict.setObjectName("verdict_label")
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict.hide()
        # The three views are built when first shown or needed (their plots cost startup).
        self._activations = LazyTab(self._build_activations)
        self._weights = LazyTab(lambda: self._with_current(WeightsView(model, document.path)))
        self._sensitivity = LazyTab(self._build_sensitivity)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._activations, "Activations")
        self.tabs.addTab(self._weights, "Weights")
        self.tabs.addTab(self._sensitivity, "Sensitivity")
        self.tabs.currentChanged.connect(self._tab_shown)

        self.worst_n = QSpinBox()
        self.worst_n.setRange(1, 1000)
        self.worst_n.setValue(3)
        self.requantize_button = QPushButton("Re-quantize without the worst")
        self.requantize_button.setObjectName("requantize")
        self.requantize_button.clicked.connect(self._requantize)
        export_plot = self.export_plot_button = QPushButton("Export plot…")
        export_plot.clicked.connect(lambda: self.activations.export_plot())
        export_table = self.export_table_button = QPushButton("Export table (CSV)…")
        export_table.clicked.connect(lambda: self.activations.export_table())
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

    @property
    def activations(self) -> SqnrView:
        """The Activations tab (per-layer SQNR), built on first use."""
        return self._activations.content()

    @property
    def weights(self) -> WeightsView:
        """The Weights tab, built on first use."""
        return self._weights.content()

    @property
    def sensitivity(self) -> SensitivityView:
        """The Sensitivity tab, built on first use."""
        return self._sensitivity.content()

    def _build_activations(self) -> SqnrView:
        view = SqnrView()
        view.node_chosen.connect(self.node_chosen.emit)
        return self._with_current(view)

    def _with_current(self, view: V) -> V:
        """``view``, showing the current run (a view built after the run was chosen)."""
        if self.current is not None:
            view.show_run(self.current)
        return view

    def _build_sensitivity(self) -> SensitivityView:
        view = SensitivityView()
        view.rank_requested.connect(self._rank)
        view.node_chosen.connect(self.node_chosen.emit)
        view.show_result(self.document.sensitivity)
        self.document.events.sensitivity.connect(view.show_result)
        view.rank_button.setEnabled(self._can_rank())
        return view

    def _rank(self, n: int) -> None:
        if self.current is not None:
            self.rank_requested.emit(self.current, n)

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
        # A failure's message can be a paragraph: the cell keeps its start, the tooltip all of
        # it, so one failed run does not push the State and Verdict columns of the others off.
        state = short_error(run.error) if run.error else run.state.value
        quantization = run.quantization
        if quantization is not None and quantization.calibration == "reused":
            state += " · calibration reused"
        if quantization is not None and quantization.undecidable:
            state += " · ⚠ never decides 'yes'"  # the tooltip says why and what to do
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
        notes = (
            "\n".join([*(f"⚠ {w}" for w in quantization.calibration_warnings), *quantization.notes])
            if quantization is not None
            else ""
        )
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            # the state's tooltip says what the job did on the way (calibration reused, ...)
            full = run.error or text if col == 2 else text
            item.setToolTip(f"{full}\n{notes}" if col == 2 and notes else full)
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
        if self._sensitivity.built:
            self.sensitivity.rank_button.setEnabled(self._can_rank())

    def _can_rank(self) -> bool:
        """Layers can be ranked by the task from the current run: a QDQ 8-bit run analysed
        on data."""
        run = self.current
        return (
            run is not None
            and run.analysis is not None
            and run.analyze_on is not None
            and run.recipe.mode == "qdq"
            and run.recipe.activation_type in ("uint8", "int8")
        )

    # ----- one run's analysis ------------------------------------------------------------------
    def show_run(self, run: QuantRun) -> None:
        """Show ``run``'s verdict, per-layer SQNR and weights."""
        self.current = run
        self._show_verdict(run.analysis.verdict if run.analysis else None)
        for tab in (self._activations, self._weights):  # one not built yet shows it when built
            if tab.built:
                tab.content().show_run(run)
        self._refresh_buttons()

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
        if self.tabs.widget(index) is self._weights:
            self.weights.open_worst()

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
