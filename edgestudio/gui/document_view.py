"""One open model: its panels (Summary, and later Graph, Netron, …) in a tab widget."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout, QWidget

from edgestudio.gui.model_loader import LoadedModel
from edgestudio.gui.summary_panel import SummaryPanel


class DocumentView(QWidget):
    """A model document: a "loading…" placeholder until :meth:`set_loaded` fills the panels."""

    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self.loaded: LoadedModel | None = None
        self.panels = QTabWidget()
        self.panels.setObjectName("panels")
        self.panels.setDocumentMode(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self._placeholder = QLabel(f"Loading {path.name}…")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self._placeholder)
        layout.addWidget(self.panels)
        self.panels.hide()

    @property
    def is_loaded(self) -> bool:
        """True once the model has been parsed and its panels built."""
        return self.loaded is not None

    def set_loaded(self, loaded: LoadedModel) -> None:
        """Build the panels for a parsed model."""
        self.loaded = loaded
        self.summary_panel = SummaryPanel(loaded.summary)
        self.panels.addTab(self.summary_panel, "Summary")
        self._placeholder.hide()
        self.panels.show()

    def panel_names(self) -> list[str]:
        """Return the panel names in lower case (what ``--panel`` accepts)."""
        return [self.panels.tabText(i).lower() for i in range(self.panels.count())]

    def show_panel(self, name: str) -> bool:
        """Bring the panel called ``name`` (case-insensitive) to the front; False if none."""
        names = self.panel_names()
        if name.lower() not in names:
            return False
        self.panels.setCurrentIndex(names.index(name.lower()))
        return True
