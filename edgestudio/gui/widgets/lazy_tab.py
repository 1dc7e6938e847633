"""A tab whose content is built the first time it is shown or asked for.

A model opens on its Summary: the Quantization and Performance tabs' plots (a pyqtgraph
``PlotWidget`` each, tens of milliseconds apiece) were made before anyone looked at them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

W = TypeVar("W", bound=QWidget)


class LazyTab(QWidget, Generic[W]):
    """Holds the widget ``build`` makes, made on the first :meth:`content` or show."""

    def __init__(self, build: Callable[[], W], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._build = build
        self._content: W | None = None
        QVBoxLayout(self).setContentsMargins(0, 0, 0, 0)

    @property
    def built(self) -> bool:
        """True once the content exists."""
        return self._content is not None

    def content(self) -> W:
        """The content, built now if it was not yet."""
        if self._content is None:
            self._content = self._build()
            layout = self.layout()
            assert layout is not None
            layout.addWidget(self._content)
        return self._content

    def showEvent(self, event: QShowEvent) -> None:
        """Build the content as the tab first shows."""
        self.content()
        super().showEvent(event)
