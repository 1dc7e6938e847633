"""Windows of their own (Compare, Auto-tune) kept alive by the main window until closed."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

W = TypeVar("W", bound=QWidget)


def show_kept(window: W, kept: list[W]) -> W:
    """Show a window of its own, kept in ``kept`` (alive) until it is closed and deleted.

    Such windows are the main window's children (top-level all the same): Qt deletes them on
    the GUI thread. A parentless one was Python's to delete, and the cyclic collector, run by
    whichever thread allocates, once destroyed one on a worker thread while the GUI thread
    waited on the same Qt lock: a deadlock."""

    def forget(_: object = None) -> None:
        if window in kept:
            kept.remove(window)

    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    window.destroyed.connect(forget)
    kept.append(window)
    window.show()
    return window
