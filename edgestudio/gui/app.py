"""Starting the Qt application: ``edgestudio [MODEL ...] [--screenshot PNG]``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QTimer, Signal
from PySide6.QtGui import QFileOpenEvent, QIcon
from PySide6.QtWidgets import QApplication

from edgestudio import __version__
from edgestudio.gui.file_handoff import InstanceServer, send_to_running_instance
from edgestudio.gui.main_window import MainWindow
from edgestudio.jobs import warm

SCREENSHOT_SETTLE_MS = 400  # let layouts and plots paint once more before grabbing
NETRON_SETTLE_MS = 2500  # Netron lays out and draws its SVG after the page has loaded


class EdgeStudioApplication(QApplication):
    """The QApplication, plus ``files_opened`` for files the OS hands over.

    macOS delivers a Finder double-click or a drop on the Dock icon as a QFileOpenEvent sent to
    the application object, not on the command line. Overriding ``event`` here sees only events
    for the application itself (an app-wide event filter would see every event of every object,
    and one written in Python crashed beside QtWebEngine).
    """

    files_opened = Signal(list)

    def event(self, event: QEvent) -> bool:
        """Turn FileOpen events into ``files_opened``."""
        if event.type() == QEvent.Type.FileOpen and isinstance(event, QFileOpenEvent):
            self.files_opened.emit([event.file()])
            return True
        return super().event(event)


def create_application(argv: Sequence[str] | None = None) -> QApplication:
    """Return the QApplication, creating it with EdgeStudio's names and icon if needed."""
    QCoreApplication.setOrganizationName("EdgeStudio")
    QCoreApplication.setApplicationName("EdgeStudio")
    QCoreApplication.setApplicationVersion(__version__)
    app = QApplication.instance()
    if app is None:
        from edgestudio.gui.netron_view import prepare_web_engine

        prepare_web_engine()  # QtWebEngine's URL scheme must be registered before the app
        app = EdgeStudioApplication(list(argv or [sys.argv[0]]))
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
        # Wait until every document's graph is laid out (and a Netron page has loaded), then let
        # it paint once more; Netron draws its graph a while after its page has loaded.
        docs = [doc for doc in window.documents() if doc.is_loaded]
        netron = [doc.netron_view for doc in docs if doc.netron_view is not None]
        if not all(doc.is_ready for doc in docs) or not all(v.is_settled() for v in netron):
            QTimer.singleShot(50, when_drawn)
            return
        web = any(v.web is not None for v in netron)
        QTimer.singleShot(NETRON_SETTLE_MS if web else SCREENSHOT_SETTLE_MS, grab)

    def settled() -> None:
        doc = window.current_document()
        if doc is not None and doc.is_loaded and not doc.show_panel(panel):
            print(f"no panel '{panel}'; panels: {', '.join(doc.panel_names())}", file=sys.stderr)
        when_drawn()

    if window.loading:
        window.loads_settled.connect(settled)
    else:
        settled()


def run_app(models: Sequence[str], screenshot: str | None = None, panel: str = "summary",
            new_window: bool = False, self_test: bool = False) -> int:
    """Open the main window with ``models``; return the exit code when it closes.

    Unless ``new_window`` (or a screenshot run or ``self_test``), a running EdgeStudio of this
    user gets the files instead and this process exits at once (single instance).
    ``self_test`` runs :mod:`edgestudio.gui.self_test` and exits with its verdict.
    """
    headless = not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")
    if (screenshot or self_test) and headless:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = create_application()
    server: InstanceServer | None = None
    if not (new_window or screenshot or self_test):
        if send_to_running_instance(models):
            print("edgestudio: handed over to the running EdgeStudio window", file=sys.stderr)
            return 0
        server = InstanceServer(parent=app)
        if not server.listen():
            server = None  # a live instance too busy to answer: this window stands alone
    window = MainWindow()
    if server is not None:
        server.files_received.connect(window.receive_files)
    if isinstance(app, EdgeStudioApplication):
        app.files_opened.connect(window.receive_files)
    window.show()
    if not screenshot:
        warm.keep_warm()  # the next job's worker, loaded while the user looks at the model
    for path in models:
        window.open_file(Path(path))
    if self_test:
        from edgestudio.gui.self_test import start_self_test

        start_self_test(window)
    elif screenshot:
        take_screenshot_when_ready(window, screenshot, panel)
    code = int(app.exec())
    warm.stop_warm()
    if server is not None:
        server.close()
    release_window(window)
    return code


def release_window(window: MainWindow) -> None:
    """Delete the window and what hangs off it while Qt is still whole.

    Left to interpreter exit, QtWebEngine pages and profiles (the Netron tab) are freed in
    arbitrary order after the QApplication and the process segfaults on its way out.
    """
    window.deleteLater()
    for _ in range(3):  # the window, then the pages it owned, then their profiles
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QCoreApplication.processEvents()
