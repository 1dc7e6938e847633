"""Starting the Qt application: ``edgestudio [MODEL ...] [--screenshot PNG]``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from edgestudio import __version__
from edgestudio.gui.main_window import MainWindow

SCREENSHOT_SETTLE_MS = 400  # let layouts and plots paint once more before grabbing


def create_application(argv: Sequence[str] | None = None) -> QApplication:
    """Return the QApplication, creating it with EdgeStudio's names and icon if needed."""
    QCoreApplication.setOrganizationName("EdgeStudio")
    QCoreApplication.setApplicationName("EdgeStudio")
    QCoreApplication.setApplicationVersion(__version__)
    app = QApplication.instance()
    if app is None:
        from edgestudio.gui.netron_view import prepare_web_engine

        prepare_web_engine()  # QtWebEngine's URL scheme must be registered before the app
        app = QApplication(list(argv or [sys.argv[0]]))
    assert isinstance(app, QApplication)
    from edgestudio.resources import ICON_SVG

    app.setWindowIcon(QIcon(str(ICON_SVG)))
    return app


def take_screenshot_when_ready(window: MainWindow, out: str, panel: str) -> None:
    """Save a PNG of ``window`` once every pending model is loaded and drawn, then quit."""

    def grab() -> None:
        ok = window.grab().save(out)
        print(f"screenshot saved to {out}" if ok else f"could not write {out}", file=sys.stderr)
        QApplication.exit(0 if ok else 1)

    def when_drawn() -> None:
        # Wait until every document's graph is laid out, then let it paint once more.
        if not all(doc.is_ready for doc in window.documents() if doc.is_loaded):
            QTimer.singleShot(50, when_drawn)
            return
        QTimer.singleShot(SCREENSHOT_SETTLE_MS, grab)

    def settled() -> None:
        doc = window.current_document()
        if doc is not None and doc.is_loaded and not doc.show_panel(panel):
            print(f"no panel '{panel}'; panels: {', '.join(doc.panel_names())}", file=sys.stderr)
        when_drawn()

    if window.loading:
        window.loads_settled.connect(settled)
    else:
        settled()


def run_app(models: Sequence[str], screenshot: str | None = None, panel: str = "summary") -> int:
    """Open the main window with ``models``; return the exit code when it closes."""
    if screenshot and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = create_application()
    window = MainWindow()
    window.show()
    for path in models:
        window.open_model(Path(path))
    if screenshot:
        take_screenshot_when_ready(window, screenshot, panel)
    return int(app.exec())
