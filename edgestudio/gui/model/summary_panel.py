"""The Summary panel: what a model is, at a glance."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QInputDialog,
    QLabel,
    QScrollArea,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.formatting import human_bytes, human_count
from edgestudio.core.model.summary import ModelSummary, TensorSpec
from edgestudio.gui.model.cost_box import CostBox
from edgestudio.gui.widgets.tables import filled_table

_MAX_BARS = 40  # beyond this the histogram lumps the rarest op types into "other"


def _tensor_rows(specs: list[TensorSpec]) -> list[list[str]]:
    return [[t.name, t.dtype, t.shape_text()] for t in specs]


def op_histogram(op_types: dict[str, int]) -> pg.PlotWidget:
    """Return a plot of horizontal bars: nodes per op type, most frequent on top.

    The bar values are kept on the widget as ``counts`` (name -> count) for tests.
    """
    widget = pg.PlotWidget(background=None)
    widget.setObjectName("op_histogram")
    items = list(op_types.items())
    if len(items) > _MAX_BARS:
        rest = sum(n for _, n in items[_MAX_BARS - 1 :])
        items = [*items[: _MAX_BARS - 1], (f"other ({len(items) - _MAX_BARS + 1} types)", rest)]
    widget.counts = dict(items)
    names = [name for name, _ in items]
    values = [n for _, n in items]
    ys = list(range(len(items)))
    plot = widget.getPlotItem()
    plot.addItem(
        pg.BarGraphItem(x0=0, y=ys, height=0.7, width=values, brush="#4f8fc0", pen=pg.mkPen(None))
    )
    for y, value in zip(ys, values, strict=True):
        label = pg.TextItem(str(value), anchor=(0, 0.5), color="#333")
        label.setPos(value, y)
        plot.addItem(label)
    left = plot.getAxis("left")
    left.setTicks([list(zip(ys, names, strict=True))])
    plot.hideAxis("bottom")  # every bar carries its count; fractional ticks only confuse
    plot.invertY(True)
    plot.setMouseEnabled(x=False, y=False)
    plot.hideButtons()
    plot.setMenuEnabled(False)
    plot.setXRange(0, max(values, default=1) * 1.15, padding=0)
    plot.setYRange(-0.6, len(items) - 0.4, padding=0)
    widget.setMinimumHeight(min(max(120, 22 * len(items) + 50), 900))
    return widget


class SummaryPanel(QScrollArea):
    """Shows a :class:`ModelSummary`: facts, inputs/outputs, op types, metadata, problems.
    Double-clicking an input's or output's name asks to rename it (``rename_requested``)."""

    rename_requested = Signal(str, str)  # old name, new name

    def __init__(self, summary: ModelSummary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("summary_panel")
        self.summary = summary
        self.setWidgetResizable(True)
        body = QWidget()
        grid = QGridLayout(body)
        grid.setContentsMargins(16, 12, 16, 12)
        grid.setHorizontalSpacing(16)
        grid.setVerticalSpacing(12)

        title = QLabel(summary.path.rsplit("/", 1)[-1])
        font = QFont(title.font())
        font.setPointSizeF(font.pointSizeF() * 1.5)
        font.setBold(True)
        title.setFont(font)
        path = QLabel(summary.path)
        path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        path.setStyleSheet("color: palette(placeholder-text);")
        grid.addWidget(title, 0, 0, 1, 2)
        grid.addWidget(path, 1, 0, 1, 2)

        self.problems_label = QLabel("\n".join(f"⚠ {p}" for p in summary.problems))
        self.problems_label.setObjectName("problems")
        self.problems_label.setWordWrap(True)
        self.problems_label.setStyleSheet(
            "background: #fdecea; color: #8a1c14; border: 1px solid #f5c2bd; border-radius: 4px;"
            " padding: 8px;"
        )
        self.problems_label.setVisible(bool(summary.problems))
        grid.addWidget(self.problems_label, 2, 0, 1, 2)

        facts = QWidget()
        facts_layout = QVBoxLayout(facts)
        facts_layout.setContentsMargins(0, 0, 0, 0)
        facts_layout.addWidget(self._facts_box())
        self.cost_box = CostBox()
        facts_layout.addWidget(self.cost_box)
        facts_layout.addStretch(1)
        grid.addWidget(facts, 3, 0)
        io = QWidget()
        io_layout = QVBoxLayout(io)
        io_layout.setContentsMargins(0, 0, 0, 0)
        for heading, specs, name in (
            (f"Inputs ({len(summary.inputs)})", summary.inputs, "inputs_table"),
            (f"Outputs ({len(summary.outputs)})", summary.outputs, "outputs_table"),
        ):
            box = self._table_box(heading, ["Name", "Type", "Shape"], _tensor_rows(specs), name)
            table = box.findChild(QTableWidget, name)
            assert table is not None
            table.setToolTip(
                "Double-click a name to rename it (writes a renamed copy of the "
                "model, checked: edgestudio edit --rename OLD=NEW)"
            )
            table.cellDoubleClicked.connect(
                lambda row, _col, t=table: self._ask_rename(t.item(row, 0).text())
            )
            io_layout.addWidget(box)
        io_layout.addStretch(1)
        grid.addWidget(io, 3, 1)

        # The histogram counts subgraph nodes too: so does its title.
        total = summary.nodes + summary.nodes_in_subgraphs
        inside = (
            f", {summary.nodes_in_subgraphs:,} of them in subgraphs"
            if summary.nodes_in_subgraphs
            else ""
        )
        ops = QGroupBox(f"Operators ({len(summary.op_types)} types, {total:,} nodes{inside})")
        ops_layout = QVBoxLayout(ops)
        self.histogram = op_histogram(summary.op_types)
        ops_layout.addWidget(self.histogram)
        grid.addWidget(ops, 4, 0)

        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(
            self._table_box(
                "Metadata",
                ["Key", "Value"],
                [[k, v] for k, v in summary.metadata.items()] or [["(none)", ""]],
                "metadata_table",
            )
        )
        side_layout.addWidget(
            self._table_box(
                "External data",
                ["File", "Size", "Tensors"],
                [
                    [e.location, human_bytes(e.size_bytes), str(e.tensor_count)]
                    for e in summary.external_data
                ]
                or [["(all weights are inside the model file)", "", ""]],
                "external_table",
            )
        )
        side_layout.addStretch(1)
        grid.addWidget(side, 4, 1)
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 1)
        grid.setRowStretch(5, 1)
        self.setWidget(body)

    def _ask_rename(self, old: str) -> None:
        new, ok = QInputDialog.getText(
            self,
            "Rename",
            f"New name for '{old}' (a renamed copy of the model is written beside it):",
            text=old,
        )
        if ok and new.strip() and new.strip() != old:
            self.rename_requested.emit(old, new.strip())

    def fact_rows(self) -> dict[str, str]:
        """Return the facts shown in the Model box (label -> text), for tests and reports."""
        s = self.summary
        opsets = ", ".join(f"{d} {v}" for d, v in s.opset_imports.items()) or "none"
        runtime = (
            f"≤ {s.max_runtime_opset} (onnxruntime {s.runtime_version})"
            if s.max_runtime_opset
            else "onnxruntime not found"
        )
        nodes = f"{s.nodes:,}"
        if s.nodes_in_subgraphs:
            nodes += f" (+{s.nodes_in_subgraphs:,} in subgraphs)"
        if s.constant_nodes:
            nodes += (
                f"; {s.constant_nodes:,} only compute constants (folded into their users "
                "in the graph)"
            )
        return {
            "File size": human_bytes(s.file_size),
            "IR version": str(s.ir_version),
            "Opset imports": opsets,
            "Producer": f"{s.producer_name} {s.producer_version}".strip() or "unknown",
            "Graph name": s.graph_name or "(unnamed)",
            "Nodes": nodes,
            "Parameters": f"{s.parameters:,} ({human_count(s.parameters)})",
            "Weight bytes": f"{human_bytes(s.parameter_bytes)} in {s.initializers:,} tensors",
            "Operators need opset": (
                f"≥ {s.min_opset_required}" if s.min_opset_required else "no standard operators"
            ),
            "Runtime supports opset": runtime,
        }

    def _facts_box(self) -> QGroupBox:
        box = QGroupBox("Model")
        form = QFormLayout(box)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.fact_labels: dict[str, QLabel] = {}
        for key, text in self.fact_rows().items():
            value = QLabel(text)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setObjectName(f"fact:{key}")
            self.fact_labels[key] = value
            form.addRow(f"{key}:", value)
        return box

    def _table_box(
        self, title: str, headers: list[str], rows: list[list[str]], name: str
    ) -> QGroupBox:
        box = QGroupBox(title)
        layout = QVBoxLayout(box)
        layout.addWidget(filled_table(headers, rows, name))
        return box
