"""GUI fixtures: a main window with isolated settings that waits for its loads on teardown."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from edgestudio.gui.main_window import MainWindow


@pytest.fixture
def window(qtbot, isolated_settings) -> Iterator[MainWindow]:  # type: ignore[no-untyped-def]
    win = MainWindow(settings=isolated_settings)
    win.show()
    yield win
    # Closed here rather than by qtbot, whose teardown hook runs before fixture finalizers and
    # would meet the "jobs are still running, quit?" question.
    win.jobs.shutdown()
    win.loader.wait()
    for box in list(win.messages.dialogs):
        box.close()
    win.close()
    win.deleteLater()
    # Qt objects left in reference cycles go now, on the GUI thread: the cyclic collector runs
    # on whichever thread allocates, and a Qt object destroyed on a worker thread can deadlock.
    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


def open_and_wait(qtbot, window: MainWindow, path) -> None:  # type: ignore[no-untyped-def]
    """Open ``path`` and block until the load finished (opened or failed)."""
    with qtbot.waitSignal(window.loads_settled, timeout=30_000):
        window.open_model(path)
