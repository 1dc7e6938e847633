"""The Summary's cost box: MACs, FLOPs, parameters and peak activation memory at the input
sizes, and the buttons that colour the graph by them."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QWidget

from edgestudio.core.formatting import human_bytes, human_count
from edgestudio.core.model.cost_recipe import ModelCost
from edgestudio.core.workspace.document import OverlayKind


class CostBox(QGroupBox):
    """Totals of a :class:`ModelCost` (or how to get one) and the overlay buttons."""

    count_requested = Signal()
    overlay_requested = Signal(object)  # OverlayKind

    ROWS = ("MACs", "FLOPs", "Parameters", "Peak activation memory", "Counted at")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Cost", parent)
        self.setObjectName("cost_box")
        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.labels: dict[str, QLabel] = {}
        for key in self.ROWS:
            label = QLabel("—")
            label.setObjectName(f"cost:{key}")
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.labels[key] = label
            form.addRow(f"{key}:", label)
        self.note = QLabel(
            "Not counted yet: counting needs the input sizes (found by the "
            "Inputs tab, or set there)."
        )
        self.note.setObjectName("cost_note")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: palette(placeholder-text);")
        form.addRow(self.note)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(0, 0, 0, 0)
        self.count_button = QPushButton("Count MACs and memory")
        self.count_button.setObjectName("count_cost")
        self.count_button.setToolTip(
            "Count every node's multiply-accumulates, parameters and "
            "output memory at the Inputs tab's sizes (in the "
            "background; also `edgestudio inspect MODEL --cost`)"
        )
        self.count_button.clicked.connect(self._count)
        self.macs_button = QPushButton("Colour graph by MACs")
        self.macs_button.setObjectName("overlay_macs")
        self.macs_button.clicked.connect(lambda: self.overlay_requested.emit(OverlayKind.MACS))
        self.memory_button = QPushButton("by memory")
        self.memory_button.setObjectName("overlay_memory")
        self.memory_button.setToolTip("Colour the graph by each node's output bytes")
        self.memory_button.clicked.connect(lambda: self.overlay_requested.emit(OverlayKind.MEMORY))
        for button in (self.count_button, self.macs_button, self.memory_button):
            row.addWidget(button)
        row.addStretch(1)
        form.addRow(buttons)
        self.show_cost(None)

    def _count(self) -> None:
        self.count_button.setEnabled(False)
        self.note.setText("Counting…")
        self.note.show()
        self.count_requested.emit()

    def count_failed(self, why: str) -> None:
        """The count did not finish."""
        self.count_button.setEnabled(True)
        self.note.setText(f"Could not count: {why}")
        self.note.show()

    def show_cost(self, cost: ModelCost | None) -> None:
        """Show ``cost``'s totals (None: not counted yet)."""
        self.count_button.setEnabled(True)
        self.macs_button.setEnabled(cost is not None)
        self.memory_button.setEnabled(cost is not None)
        if cost is None:
            for label in self.labels.values():
                label.setText("—")
            return
        t = cost.total
        self.labels["MACs"].setText(f"{t.macs:,} ({human_count(t.macs)})")
        self.labels["FLOPs"].setText(f"{t.flops:,} ({human_count(t.flops)})")
        self.labels["Parameters"].setText(f"{t.params:,} ({human_bytes(t.param_bytes)})")
        self.labels["Peak activation memory"].setText(human_bytes(t.peak_activation_bytes))
        self.labels["Counted at"].setText(cost.inputs_text())
        unknown = cost.unknown
        self.note.setText(
            f"{len(unknown)} node(s) of unknown shape counted as 0 (e.g. {', '.join(unknown[:2])})."
            if unknown
            else ""
        )
        self.note.setVisible(bool(unknown))
