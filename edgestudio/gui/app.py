"""Starting the Qt application: ``edgestudio [MODEL ...] [--screenshot PNG [--panel …]]``."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QTimer, Signal
from PySide6.QtGui import QFileOpenEvent, QIcon
from PySide6.QtWidgets import QApplication, QWidget

from edgestudio import __version__
from edgestudio.gui import platform_libs, ui_state
from edgestudio.gui.document_view import DocumentView
from edgestudio.gui.file_handoff import InstanceServer, send_to_running_instance
from edgestudio.gui.main_window import MainWindow
from edgestudio.gui.screenshot_plan import ScreenshotPlan

SCREENSHOT_SETTLE_MS = 200  # let layouts and plots paint once more before grabbing
NETRON_SETTLE_MS = 1000  # Netron's SVG paints a moment after its page turns 'default' (drawn)


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
        from edgestudio.gui.model.netron_view import prepare_web_engine

        prepare_web_engine()  # QtWebEngine's URL scheme must be registered before the app
        app = EdgeStudioApplication(list(argv or [sys.argv[0]]))
    assert isinstance(app, QApplication)
    from edgestudio.resources import ICON_SVG

    app.setWindowIcon(QIcon(str(ICON_SVG)))
    return app


SCREENSHOT_TIMEOUT_S = 300  # background work that never settles: say so instead of hanging


def take_screenshot_when_ready(window: MainWindow, plan: ScreenshotPlan) -> None:
    """Save a PNG as ``plan`` says once every model is loaded, laid out and its background work
    (shapes, the inputs search, Netron's drawing) has finished, then quit: 0 when saved, 2 when
    a name in the plan is not there (the right names are listed), 1 when it could not be
    written or the work did not settle in time."""
    started = time.monotonic()
    target: list[QWidget] = [window]  # what is grabbed: the window, or a window it opened

    def finish(code: int, message: str) -> None:
        print(message, file=sys.stderr)
        QApplication.exit(code)

    def grab() -> None:
        ok = target[0].grab().save(plan.path)
        finish(
            0 if ok else 1,
            f"screenshot saved to {plan.path}" if ok else f"could not write {plan.path}",
        )

    def later(check: Callable[[], bool], then: Callable[[], None], what: str) -> None:
        """Run ``then`` once ``check()`` holds, polling; give up after the timeout."""

        def poll() -> None:
            if check():
                then()
            elif time.monotonic() - started > SCREENSHOT_TIMEOUT_S:
                finish(1, f"edgestudio: gave up waiting for {what}")
            else:
                QTimer.singleShot(50, poll)

        poll()

    def settled() -> bool:
        docs = [doc for doc in window.documents() if doc.is_loaded]
        netron = [doc.netron_view for doc in docs if doc.netron_view is not None]
        # Shapes label the graph's edges: waited for where the graph is what is shown.
        shapes = [
            doc.graph_panel
            for doc in docs
            if doc.graph_panel.shapes_note.endswith("…")
            and doc.panels.currentWidget() is doc.graph_panel
        ]
        inputs = [
            doc
            for doc in docs
            if doc.panels.currentWidget() is doc.inputs_panel
            and doc.inputs_panel.state in ("unknown", "running")
        ]
        # The graph's layout (seconds on a big model, in the background) is waited for only
        # where the graph is what is shown: a summary shows without it, as it does to a user.
        return (
            all(doc.is_ready for doc in docs if doc.panels.currentWidget() is doc.graph_panel)
            and all(v.is_settled() for v in netron)
            and not shapes
            and not inputs
        )

    def when_drawn() -> None:
        web = any(
            doc.netron_view is not None
            and doc.netron_view.web is not None
            and doc.panels.currentWidget() is doc.netron_holder
            for doc in window.documents()
        )
        later(
            settled,
            lambda: QTimer.singleShot(NETRON_SETTLE_MS if web else SCREENSHOT_SETTLE_MS, grab),
            "the models' background work",
        )

    def compare(doc: DocumentView) -> None:
        assert plan.compare is not None
        view = window.compare(doc.path, Path(plan.compare))
        view.resize(*plan.size)
        target[0] = view

        def ready() -> None:
            view.step(1)  # on the first difference, selected on both sides
            QTimer.singleShot(SCREENSHOT_SETTLE_MS, grab)

        later(
            lambda: view.is_ready or (view.result is None and "Cannot" in view.summary.text()),
            ready,
            "the comparison",
        )

    def dialog() -> None:
        forms: dict[str, Callable[[], QWidget | None]] = {
            "convert": window.show_convert_form,
            "quantize": window.quant.show_quantize_form,
            "export": window.show_export_form,
            "preferences": window.show_preferences,
            "tune": window.quant.show_tune,
        }
        shown = forms[str(plan.dialog)]()
        if shown is None:
            finish(2, f"edgestudio: the {plan.dialog} form needs a model open")
            return
        target[0] = shown
        QTimer.singleShot(SCREENSHOT_SETTLE_MS, grab)

    def open_group(doc: DocumentView) -> None:
        graph = doc.graph_panel
        tree, ir = graph.tree, graph.ir
        assert tree is not None and ir is not None
        wanted = str(plan.open_group)
        # a group's path, or its label as drawn, with or without its node count ("layer.3 (72)")
        path = (
            wanted
            if wanted in tree.groups
            else next(
                (
                    ir.names[i]
                    for i, label in ir.group_labels.items()
                    if wanted in (label, label.rsplit(" (", 1)[0])
                ),
                None,
            )
        )
        if path is None:
            closed = sorted(label.rsplit(" (", 1)[0] for label in ir.group_labels.values())
            finish(2, f"no closed group '{wanted}'; groups: {', '.join(closed) or '(none)'}")
            return
        graph.open_group(path)
        later(
            lambda: graph.is_ready and path in (graph.opened or ()),
            after_graph,
            "the group to open",
        )

    def after_graph() -> None:
        doc = window.current_document()
        assert doc is not None
        if plan.select and not doc.graph_panel.select_by_name(plan.select):
            finish(2, f"no node '{plan.select}' in {doc.path.name}")
            return
        when_drawn()

    def loaded() -> None:
        doc = window.current_document()
        if doc is None or not doc.is_loaded:
            if plan.dialog == "preferences":
                dialog()
            else:
                finish(1, "edgestudio: no model could be opened")
            return
        if plan.dialog:
            dialog()
            return
        if plan.compare:
            compare(doc)
            return
        doc.show_panel(plan.panel)  # the command line checked the name
        if plan.open_group or plan.select:
            later(
                lambda: doc.graph_panel.is_ready,
                lambda: open_group(doc) if plan.open_group else after_graph(),
                "the graph",
            )
            return
        when_drawn()

    window.resize(*plan.size)
    if window.loading:
        window.loads_settled.connect(loaded)
    else:
        loaded()


def run_app(
    models: Sequence[str],
    screenshot: ScreenshotPlan | None = None,
    new_window: bool = False,
    self_test: bool = False,
) -> int:
    """Open the main window with ``models``; return the exit code when it closes.

    Unless ``new_window`` (or a screenshot run or ``self_test``), a running EdgeStudio of this
    user gets the files instead and this process exits at once (single instance).
    ``self_test`` runs :mod:`edgestudio.gui.self_test` and exits with its verdict.
    """
    headless = not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")
    if (screenshot or self_test) and headless:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if platform_libs.xcb_will_be_used():
        missing = platform_libs.missing_libraries()
        if missing:  # Qt would abort naming none of them
            print(platform_libs.explain(missing), file=sys.stderr)
            return 1
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
    ui_state.watch(window)  # for whoever drives the window from outside (tests/xserver)
    if server is not None:
        server.files_received.connect(window.receive_files)
    if isinstance(app, EdgeStudioApplication):
        app.files_opened.connect(window.receive_files)
    window.show()
    if not screenshot:
        window.jobs.scheduler.launcher.prepare()  # loaded while the user looks at the model
    else:  # a run of seconds: a fork server would load beside it and never serve a job
        window.jobs.scheduler.launcher.close()
    for path in models:
        window.open_file(Path(path))
    if self_test:
        from edgestudio.gui.self_test import start_self_test

        start_self_test(window)
    elif screenshot:
        take_screenshot_when_ready(window, screenshot)
    code = int(app.exec())
    window.jobs.scheduler.launcher.close()
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
