"""The Quantization tab's Sensitivity view: layers ranked by what keeping each alone in 16-bit
gives back on the task (``core/quant/sensitivity.py``), and the button that starts a ranking."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.quant.sensitivity import Sensitivity
from edgestudio.gui.widgets.tables import NumericItem, results_table

COLUMNS = ["#", "Layer", "Op", "SQNR (dB)", "Task figure", "Gain", "Second figure's gain", "Note"]


class SensitivityView(QWidget):
    """The last ranking of the document, and a button to rank the current run's layers."""

    rank_requested = Signal(int)  # how many of the worst layers to try
    node_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sensitivity_view")
        self.count = QSpinBox()
        self.count.setRange(1, 200)
        self.count.setValue(10)
        self.count.setMaximumWidth(80)
        self.rank_button = QPushButton("Rank by the task")
        self.rank_button.setObjectName("rank_layers")
        self.rank_button.setToolTip(
            "Quantize as this run did with each layer alone in 16-bit, "
            "analyse each on the run's data, rank by the task figure "
            "given back (one quantization and analysis per layer)"
        )
        self.rank_button.clicked.connect(lambda: self.rank_requested.emit(self.count.value()))
        self.note = QLabel(
            "Rank the worst layers of a run by what keeping each alone in 16-bit "
            "gives back on its task: per-layer SQNR ranks what a tensor loses, "
            "not what the task loses."
        )
        self.note.setObjectName("sensitivity_note")
        self.note.setWordWrap(True)
        self.table = results_table(COLUMNS, "sensitivity_table")
        self.table.itemSelectionChanged.connect(self._selected)
        top = QHBoxLayout()
        top.addWidget(QLabel("Try the"))
        top.addWidget(self.count)
        top.addWidget(QLabel("worst layers:"))
        top.addWidget(self.rank_button)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.note)
        layout.addWidget(self.table, 1)
        self.result: Sensitivity | None = None

    def show_result(self, result: Sensitivity | None) -> None:
        """Tabulate ``result`` (best gain first)."""
        self.result = result
        rows = result.ranked() if result is not None else []
        self.table.setRowCount(len(rows))
        for k, r in enumerate(rows):
            cells = [
                NumericItem(float(k + 1), ".0f"),
                QTableWidgetItem(r.node),
                QTableWidgetItem(r.op_type),
                NumericItem(r.sqnr_db, ".2f"),
                NumericItem(r.value, ".4g"),
                NumericItem(r.gain, "+.4g"),
                NumericItem(r.second_gain, "+.4g"),
                QTableWidgetItem(r.error),
            ]
            for c, cell in enumerate(cells):
                self.table.setItem(k, c, cell)
        if result is not None:
            unit = f" {result.unit}" if result.unit in ("points", "dB") else ""
            base = "n/a" if result.base_value is None else f"{result.base_value:.4g}{unit}"
            self.note.setText(
                f"Each layer alone in {html.escape(result.way)}: {html.escape(result.metric)} "
                f"given back against the run's {base}"
                + (
                    f" ({html.escape(result.second_metric)} breaks ties)"
                    if result.second_metric
                    else ""
                )
                + f", on {html.escape(result.data)}. The "
                "graph is coloured by the gain (Quantization › Colour the graph by SQNR "
                "returns to SQNR). " + html.escape(result.stability_text())
            )

    def _selected(self) -> None:
        rows = {i.row() for i in self.table.selectedItems()}
        if len(rows) == 1 and self.result is not None:
            self.node_chosen.emit(self.result.ranked()[rows.pop()].node)
