"""The GUI's one way to run in-process work off the UI thread (parsing a model, laying out a graph).

Work that may crash or run long with native libraries goes to worker processes through the job
queue (:class:`~edgestudio.gui.job_controller.JobController`); work that only needs our own
Python and must share its result objects with the window runs here: a function on a pool thread,
its progress, result or error delivered on the UI thread through queued signals, and a cancel
flag it checks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

#: The work: called with a progress callback (0..1) and a "was I cancelled?" check.
Work = Callable[[Callable[[float], None], Callable[[], bool]], Any]


class _Signals(QObject):
    progressed = Signal(float)
    finished = Signal(object)
    failed = Signal(object)  # the exception


class _Task(QRunnable):
    def __init__(self, work: Work, signals: _Signals, cancel: threading.Event) -> None:
        super().__init__()
        self._work = work
        self._signals = signals
        self._cancel = cancel

    def run(self) -> None:
        try:
            result = self._work(self._signals.progressed.emit, self._cancel.is_set)
        except Exception as exc:  # reported on the UI thread: a bug here must not end the app
            self._signals.failed.emit(exc)
        else:
            self._signals.finished.emit(result)


class BackgroundTask(QObject):
    """One piece of work started by :meth:`Background.run`; keep it to cancel it."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.cancelled = threading.Event()
        self.signals = _Signals(self)

    def cancel(self) -> None:
        """Ask the work to stop at its next check."""
        self.cancelled.set()


class Background(QObject):
    """A pool of threads for in-process work, with results delivered on the UI thread."""

    def __init__(self, parent: QObject | None = None, threads: int = 1) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(threads)

    def run(self, work: Work, on_done: Callable[[Any], None],
            on_error: Callable[[Exception], None],
            on_progress: Callable[[float], None] | None = None) -> BackgroundTask:
        """Start ``work``; ``on_done(result)`` or ``on_error(exception)`` follows on this thread."""
        task = BackgroundTask(self)
        task.signals.finished.connect(on_done)
        task.signals.failed.connect(on_error)
        if on_progress is not None:
            task.signals.progressed.connect(on_progress)
        self._pool.start(_Task(work, task.signals, task.cancelled))
        return task

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until every started task has finished (shutdown and tests)."""
        return bool(self._pool.waitForDone(msecs))
