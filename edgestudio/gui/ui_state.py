"""What the window shows, written to a file for whoever drives the app from outside.

Set ``EDGESTUDIO_UI_STATE=PATH`` and the running app keeps PATH up to date (atomically, at
most five times a second, only when something changed) with its visible top-level windows,
the focused widget, the open documents and the shown panel: what a test driving the real
window with X11 input events (``tests/xserver``) cannot otherwise see, since Qt's widgets are
not X windows. Nothing is written when the variable is unset.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QTabWidget,
    QWidget,
)

from edgestudio.core.paths import write_atomically

ENV = "EDGESTUDIO_UI_STATE"
# Widgets a driving test clicks or reads by name (Qt's widgets are not X windows: their place
# on screen and their text are published here). A tab widget gives where each tab is.
WATCHED = (
    "compile_on",
    "compile_for_target",
    "target_compiled",
    "judge_on",
    "device_status",
    "performance_views",
)


def _text(widget: QWidget) -> str:
    """What ``widget`` shows as text (a combo box: its current choice)."""
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QLineEdit | QLabel | QAbstractButton):
        return widget.text()
    return ""


def _tab_centres(tabs: QTabWidget) -> dict[str, list[int]]:
    """Where to click each of ``tabs``' tabs, on screen."""
    bar = tabs.tabBar()
    centres = (bar.mapToGlobal(bar.tabRect(i).center()) for i in range(tabs.count()))
    return {tabs.tabText(i): [c.x(), c.y()] for i, c in enumerate(centres)}


def _watched() -> dict[str, dict[str, Any]]:
    """Where each visible watched widget is on screen (its centre), whether it is enabled,
    and its text; for a tab widget, where each of its tabs is."""
    found: dict[str, dict[str, Any]] = {}
    for top in QApplication.topLevelWidgets():
        if not top.isVisible():
            continue
        for name in WATCHED:
            for widget in top.findChildren(QWidget, name):
                if not widget.isVisible() or widget.visibleRegion().isEmpty():
                    continue  # hidden, or scrolled out of its view: nothing to click
                centre = widget.mapToGlobal(widget.rect().center())
                entry: dict[str, Any] = {
                    "at": [centre.x(), centre.y()],
                    "enabled": widget.isEnabled(),
                    "text": _text(widget),
                }
                if isinstance(widget, QTabWidget):
                    entry["tabs"] = _tab_centres(widget)
                found[name] = entry
    return found


def snapshot(window: QWidget) -> dict[str, Any]:
    """The state of ``window`` and the application's other visible windows."""
    focus = QApplication.focusWidget()
    tabs = getattr(window, "tabs", None)
    documents: list[str] = []
    panel = ""
    panel_tabs: dict[str, list[int]] = {}
    overlay = ""  # what colours the current model's graph (sqnr, target, …)
    if isinstance(tabs, QTabWidget):
        documents = [tabs.tabText(i) for i in range(tabs.count())]
        current = tabs.currentWidget()
        kind = getattr(getattr(getattr(current, "document", None), "overlay", None), "kind", None)
        overlay = str(getattr(kind, "value", ""))
        panels = getattr(current, "panels", None)
        if isinstance(panels, QTabWidget) and panels.count():
            panel = panels.tabText(panels.currentIndex())
            panel_tabs = _tab_centres(panels)
    active = QApplication.activeWindow()
    return {
        "pid": os.getpid(),
        "windows": sorted(
            w.windowTitle()
            for w in QApplication.topLevelWidgets()
            if w.isVisible() and w.windowTitle()
        ),
        "active": active.windowTitle() if active is not None else "",
        "focus": {
            "class": type(focus).__name__ if focus else "",
            "name": focus.objectName() if focus else "",
            "placeholder": focus.placeholderText() if isinstance(focus, QLineEdit) else "",
            "text": _text(focus) if focus else "",
        },
        "widgets": _watched(),
        "documents": documents,
        "current": tabs.tabText(tabs.currentIndex())
        if isinstance(tabs, QTabWidget) and tabs.count()
        else "",
        "panel": panel,
        "panel_tabs": panel_tabs,
        "overlay": overlay,
        "maximized": window.isMaximized(),
        "size": [window.width(), window.height()],
    }


class UiStateWriter(QObject):
    """Writes :func:`snapshot` of ``window`` to ``path`` whenever it changes."""

    def __init__(self, window: QWidget, path: Path) -> None:
        super().__init__(window)
        self.window, self.path, self._last = window, path, ""
        self.timer = QTimer(self)
        self.timer.setInterval(200)
        self.timer.timeout.connect(self.write)
        self.timer.start()

    def write(self) -> None:
        """Write the state if it changed (never raises: it only serves observers)."""
        text = json.dumps(snapshot(self.window), sort_keys=True)
        if text != self._last:
            try:
                write_atomically(self.path, text)
                self._last = text
            except OSError:
                pass


def watch(window: QWidget) -> UiStateWriter | None:
    """Start writing ``window``'s state where ``EDGESTUDIO_UI_STATE`` says, if it is set."""
    target = os.environ.get(ENV)
    return UiStateWriter(window, Path(target)) if target else None
