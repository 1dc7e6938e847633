"""The Graph panel's search: find nodes by name, op type or tensor; Enter or F3 steps through
the matches (Shift+F3 back), each selected and centred in the view."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from edgestudio.gui.model.graph_view import GraphView


class GraphSearch(QWidget):
    """The search field, ▲/▼ and the match count, over the graph ``view`` shows."""

    def __init__(self, view: GraphView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self._hits: list[int] = []
        self._hit = -1
        self.search = QLineEdit()
        self.search.setObjectName("graph_search")
        self.search.setPlaceholderText("Find node, op type or tensor  (Ctrl+F, Enter: next)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._on_search)
        self.search.returnPressed.connect(self.next_hit)
        self.hit_label = QLabel("")
        self.hit_label.setMinimumWidth(90)
        prev_button, next_button = QToolButton(), QToolButton()
        prev_button.setText("▲")
        prev_button.setToolTip("Previous match (Shift+F3)")
        next_button.setText("▼")
        next_button.setToolTip("Next match (F3)")
        prev_button.clicked.connect(self.previous_hit)
        next_button.clicked.connect(self.next_hit)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.search, 1)
        row.addWidget(prev_button)
        row.addWidget(next_button)
        row.addWidget(self.hit_label)

    def focus(self) -> None:
        """Put the cursor in the search field, its text selected."""
        self.search.setFocus()
        self.search.selectAll()

    def _on_search(self, text: str) -> None:
        self._hits = self.view.ir.find(text) if self.view.ir is not None else []
        self._hit = -1
        if not text:
            self.hit_label.setText("")
        elif not self._hits:
            self.hit_label.setText("no match")
        else:
            self.next_hit()

    def next_hit(self) -> None:
        """Select and centre the next search match."""
        self._step(1)

    def previous_hit(self) -> None:
        """Select and centre the previous search match."""
        self._step(-1)

    def _step(self, delta: int) -> None:
        if not self._hits:
            return
        self._hit = (self._hit + delta) % len(self._hits)
        self.hit_label.setText(f"{self._hit + 1} of {len(self._hits)}")
        self.view.select_node(self._hits[self._hit], centre=True)
