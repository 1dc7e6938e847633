"""The bar above a graph: search, Fit and Whole graph, and the switches of what is drawn."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QPushButton

from edgestudio.gui.model.graph_search import GraphSearch
from edgestudio.gui.model.graph_view import GraphView


def _toggle(
    text: str, name: str, checked: bool, tip: str, slot: Callable[[bool], object]
) -> QCheckBox:
    """A check box of the graph's bar."""
    box = QCheckBox(text)
    box.setObjectName(name)
    box.setChecked(checked)
    box.setToolTip(tip)
    box.toggled.connect(slot)
    return box


class GraphBar(QHBoxLayout):
    """Search, Fit, Whole graph, Groups, Constants as nodes and Minimap for ``view``; the
    status line beside them (in a ``compact`` panel, one of two side by side, the caller puts
    it on its own line, and the minimap box is left out: M still shows it)."""

    def __init__(
        self,
        view: GraphView,
        on_constants: Callable[[bool], object],
        on_groups: Callable[[bool], object],
        compact: bool,
    ) -> None:
        super().__init__()
        self.finder = GraphSearch(view)
        fit = QPushButton("Fit")
        fit.setToolTip("Readable overview (F or 0 in the graph)")
        fit.clicked.connect(view.fit)
        whole = QPushButton("Whole graph")
        whole.setToolTip("Zoom out until everything is in the window (A in the graph)")
        whole.clicked.connect(view.fit_all)
        self.constants_toggle = _toggle(
            "Constants as nodes",
            "show_constants",
            False,
            "Draw Constant nodes and the chains that only compute from weights (Cast, Reshape, "
            "weight dequantization, …) as nodes. Off: they are folded into the node that uses "
            "them, shown as a C badge, their values in the properties.",
            on_constants,
        )
        self.groups_toggle = _toggle(
            "Groups",
            "show_groups",
            True,
            "Big graphs open as boxes, one per name scope (a transformer block, an encoder…): "
            "double-click or Enter opens one, Backspace closes the group around the selection. "
            "Off: every node.",
            on_groups,
        )
        self.minimap_toggle = _toggle(
            "Minimap",
            "show_minimap",
            True,
            "A thumbnail of the whole graph beside it when "
            "part is out of sight; click or drag in it to move (M)",
            view.show_minimap,
        )
        view.minimap_toggled.connect(self.minimap_toggle.setChecked)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        for widget, stretch in ((self.finder, 1), (fit, 0), (whole, 0)):
            self.addWidget(widget, stretch)
        self.addWidget(self.groups_toggle)
        self.addWidget(self.constants_toggle)
        if compact:
            self.finder.search.setPlaceholderText("Find (Ctrl+F)")
            self.constants_toggle.setText("Constants")
            self.minimap_toggle.setChecked(False)
            self.minimap_toggle.hide()
        else:
            # A long status beside the box (a big model's counts) wraps rather than squeeze
            # the search box shut.
            self.finder.search.setMinimumWidth(180)
            self.addWidget(self.minimap_toggle)
            self.addWidget(self.status)
