"""Two models side by side: the differences coloured on each graph, a list to step through, and
selection that follows from one side to the other (File › Compare with…, or a quantization
run's "Compare with float")."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import onnx
from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.model.diff import Change, ModelDiff, diff_models
from edgestudio.core.model.model_io import load_model
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.gui.background import Background
from edgestudio.gui.model.graph_panel import GraphPanel

CHANGE_COLOURS = {
    Change.INSERTED: "#2e7d32",
    Change.REMOVED: "#c62828",
    Change.FUSED: "#ef6c00",
    Change.CHANGED: "#f9a825",
}
Loaded = tuple[ModelDiff, onnx.ModelProto, onnx.ModelProto]


def _load(a: Path, b: Path) -> Callable[[Callable[[float], None], Callable[[], bool]], Loaded]:
    def work(progress: Callable[[float], None], cancelled: Callable[[], bool]) -> Loaded:
        model_a, model_b = load_model(a), load_model(b)  # parsed once, for both uses
        return diff_models(a, b, (model_a, model_b)), model_a, model_b

    return work


def _where(panel: GraphPanel, name: str) -> str:
    """How the node called ``name`` is drawn on ``panel``: itself, or folded into its reader."""
    flat = panel.flat
    if flat is not None and name in flat.folded_names:
        reader = flat.index_of(name)
        if reader is not None:
            return (
                f"folded into {flat.op_types[reader]} {flat.names[reader]} (its C badge), selected"
            )
    return "selected"


class CompareView(QWidget):
    """Model A (left) and model B (right) with their differences.

    ``sqnr`` (node -> dB, from a quantization run's analysis) colours B by per-layer SQNR
    instead of by difference, on the absolute scale; ``analysis`` says what it was measured on
    (without it, neutral shades: no verdict colours for figures of unknown provenance).
    """

    def __init__(
        self,
        a: Path,
        b: Path,
        sqnr: dict[str, float] | None = None,
        parent: QWidget | None = None,
        analysis: Analysis | None = None,
    ) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("compare_view")
        self.setWindowTitle(f"Compare {a.name} ↔ {b.name}")
        self.resize(1400, 860)
        self.a, self.b, self.sqnr, self.analysis = a, b, sqnr, analysis
        self.result: ModelDiff | None = None
        self.left: GraphPanel | None = None
        self.right: GraphPanel | None = None
        self._syncing = False
        self.summary = QLabel(f"Comparing {a.name} with {b.name}…")
        self.summary.setObjectName("compare_summary")
        self.summary.setWordWrap(True)
        self.graphs = QSplitter(Qt.Orientation.Horizontal)
        self.list = QListWidget()
        self.list.setObjectName("differences")
        self.list.currentRowChanged.connect(self._difference_chosen)
        self.detail = QLabel("")  # where the chosen difference is shown
        self.detail.setObjectName("difference_detail")
        self.detail.setWordWrap(True)
        below = QWidget()
        below_layout = QVBoxLayout(below)
        below_layout.setContentsMargins(0, 0, 0, 0)
        below_layout.addWidget(self.detail)
        below_layout.addWidget(self.list, 1)
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(self.graphs)
        body.addWidget(below)
        body.setSizes([560, 180])
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(body, 1)
        for keys, step in (("N", 1), ("P", -1)):  # step through the differences
            QShortcut(QKeySequence(keys), self, lambda s=step: self.step(s))
        self._background = Background(self)
        self._background.run(_load(a, b), self._on_loaded, self._on_failed)

    @property
    def is_ready(self) -> bool:
        """Both graphs are laid out."""
        return (
            self.left is not None
            and self.right is not None
            and self.left.is_ready
            and self.right.is_ready
        )

    def _on_failed(self, exc: Exception) -> None:
        self.summary.setText(f"Cannot compare: {exc}")

    def _on_loaded(self, loaded: Loaded) -> None:
        self.result, model_a, model_b = loaded
        self.left = GraphPanel(model_a.graph, self.a, compact=True)
        self.right = GraphPanel(model_b.graph, self.b, compact=True)
        for panel in (self.left, self.right):
            panel.ready.connect(self._colour)
            panel.properties.hide()  # two graphs need the width; the list says what differs
            self.graphs.addWidget(panel)
        self.left.node_selected.connect(lambda i: self._follow(self.left, self.right, i))
        self.right.node_selected.connect(lambda i: self._follow(self.right, self.left, i))
        text = (
            f"<b>{self.a.name}</b> (left) ↔ <b>{self.b.name}</b> (right): "
            f"{self.result.summary()}. Colours: "
        )
        text += ", ".join(
            f'<span style="color:{c}">■</span> {k.value}' for k, c in CHANGE_COLOURS.items()
        )
        if self.sqnr is not None:
            text += "; the right side is coloured by per-layer SQNR" + (
                f" ({html.escape(self.analysis.data_note().rstrip('.'))})"
                if self.analysis is not None
                else ""
            )
        self.summary.setText(text + ". N / P step through the list.")
        for d in self.result.differences:
            item = QListWidgetItem(f"{d.change.value:9} {d.kind:9} {d.text}")
            item.setToolTip(d.text)
            self.list.addItem(item)

    def _colour(self) -> None:
        """Colour each laid-out side by how its nodes differ (or B by SQNR)."""
        if self.result is None:
            return
        for side, panel in (("a", self.left), ("b", self.right)):
            if panel is None or not panel.is_ready or panel.ir is None:
                continue
            if side == "b" and self.sqnr is not None:
                analysis = self.analysis
                panel.view.show_sqnr(
                    self.sqnr,
                    analysis is not None and analysis.representative,
                    "SQNR (dB)",
                    analysis.data_note() if analysis else "",
                )
                continue
            marks = {name: change.value for name, change in self.result.node_changes(side).items()}
            colours = {k.value: c for k, c in CHANGE_COLOURS.items()}
            panel.view.set_category_overlay(marks, colours, "Difference")

    def _follow(self, source: GraphPanel | None, target: GraphPanel | None, index: int) -> None:
        """Select on the other side the node matched with the one selected here."""
        if (
            self._syncing
            or source is None
            or target is None
            or source.ir is None
            or index < 0
            or self.result is None
        ):
            return
        name = source.ir.names[index]
        matched = (
            self.result.matched.get(name)
            if source is self.left
            else next((a for a, b in self.result.matched.items() if b == name), None)
        )
        if matched is not None:
            self._syncing = True
            try:
                target.select_by_name(matched)
            finally:
                self._syncing = False

    def _difference_chosen(self, row: int) -> None:
        if self.result is None or not 0 <= row < len(self.result.differences):
            return
        d = self.result.differences[row]
        self._syncing = True
        shown = []
        try:
            for name, panel, side in (
                (d.node_a, self.left, "left"),
                (d.node_b, self.right, "right"),
            ):
                if name and panel is not None:
                    found = panel.select_by_name(name)
                    shown.append(f"{side}: {_where(panel, name) if found else 'not drawn'}")
        finally:
            self._syncing = False
        self.detail.setText(
            html.escape(d.text)
            + (" — " + "; ".join(shown) if shown else " — not a node: nothing to select")
        )

    def step(self, delta: int) -> None:
        """Go to the next (or previous) difference."""
        count = self.list.count()
        if count:
            self.list.setCurrentRow((self.list.currentRow() + delta) % count)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Qt: stop background work before going."""
        for panel in (self.left, self.right):
            if panel is not None:
                panel.shutdown()
        self._background.wait(10_000)
        super().closeEvent(event)
