"""A window's non-modal message boxes, kept alive while they are open."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


class MessageBoxes:
    """Message boxes over ``parent`` that never block it; ``dialogs`` holds the open ones."""

    def __init__(self, parent: QWidget) -> None:
        self.parent = parent
        self.dialogs: list[QMessageBox] = []

    def show(
        self,
        icon: QMessageBox.Icon,
        title: str,
        text: str,
        detail: str,
        buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok,
        escape: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok,
    ) -> QMessageBox:
        """Open a message box with ``buttons`` (Escape answers ``escape``) and return it.

        Non-modal, so that loading other files (and tests) carry on while it is shown. The
        buttons are final before the box opens: QMessageBox picks its Escape button when
        shown, and buttons replaced afterwards left it pointing at a deleted one (Escape then
        crashed the whole app under X11)."""
        box = QMessageBox(icon, title, text, buttons, self.parent)
        box.setInformativeText(detail)
        box.setEscapeButton(escape)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.dialogs.append(box)
        # The handler holds a number, not the box: it runs while the box is being closed.
        ref = id(box)
        box.finished.connect(lambda _=0: self._forget(ref))
        box.open()
        return box

    def _forget(self, ref: int) -> None:
        self.dialogs[:] = [d for d in self.dialogs if id(d) != ref]
