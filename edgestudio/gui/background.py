"""The GUI's one way to run in-process work off the UI thread (parsing a model, laying out a graph).

Work that may crash or run long with native libraries goes to worker processes through the job
queue (:class:`~edgestudio.gui.job_controller.JobController`); work that only needs our own
Python and must share its result objects with the window runs here: a function on a pool thread,
its progress, result or error handed to the UI thread, and a cancel flag it checks.

The pool thread never touches Qt: it only stores its progress and result, and a timer on the UI
thread picks them up. (Emitting queued signals from a Python thread can deadlock PySide against
the UI thread building widgets: each waits for the lock the other holds — the GIL and a Qt
mutex. Seen here once in a few hundred runs while a layout reported progress.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer

#: The work: called with a progress callback (0..1) and a "was I cancelled?" check.
Work = Callable[[Callable[[float], None], Callable[[], bool]], Any]

POLL_MS = 15


class BackgroundTask:
    """One piece of work started by :meth:`Background.run`; keep it to cancel it."""

    def __init__(
        self,
        on_done: Callable[[Any], None],
        on_error: Callable[[Exception], None],
        on_progress: Callable[[float], None] | None,
    ) -> None:
        self.cancelled = threading.Event()
        self.on_done, self.on_error, self.on_progress = on_done, on_error, on_progress
        self.fraction: float | None = None  # written by the pool thread, read by the UI's
        self.shown_fraction: float | None = None
        self.finished = threading.Event()
        self.result: Any = None
        self.error: Exception | None = None

    def cancel(self) -> None:
        """Ask the work to stop at its next check."""
        self.cancelled.set()


class _Task(QRunnable):
    def __init__(self, work: Work, task: BackgroundTask) -> None:
        super().__init__()
        self._work = work
        self._task = task

    def run(self) -> None:
        task = self._task

        def progress(fraction: float) -> None:
            task.fraction = fraction

        try:
            task.result = self._work(progress, task.cancelled.is_set)
        except Exception as exc:  # handed to the UI thread: a bug here must not end the app
            task.error = exc
        task.finished.set()


class Background(QObject):
    """A pool of threads for in-process work, with results delivered on the UI thread."""

    def __init__(self, parent: QObject | None = None, threads: int = 1) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(threads)
        self._tasks: list[BackgroundTask] = []
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.deliver)

    def run(
        self,
        work: Work,
        on_done: Callable[[Any], None],
        on_error: Callable[[Exception], None],
        on_progress: Callable[[float], None] | None = None,
    ) -> BackgroundTask:
        """Start ``work``; ``on_done(result)`` or ``on_error(exception)`` follows on this thread."""
        task = BackgroundTask(on_done, on_error, on_progress)
        self._tasks.append(task)
        self._pool.start(_Task(work, task))
        self._timer.start()
        return task

    def deliver(self) -> None:
        """Hand progress and finished results to their callbacks (the timer calls this)."""
        for task in list(self._tasks):
            fraction = task.fraction
            if (
                task.on_progress is not None
                and fraction != task.shown_fraction
                and fraction is not None
            ):
                task.shown_fraction = fraction
                task.on_progress(fraction)
            if task.finished.is_set():
                self._tasks.remove(task)
                if task.error is not None:
                    task.on_error(task.error)
                else:
                    task.on_done(task.result)
        if not self._tasks:
            self._timer.stop()

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until every started task has finished (shutdown and tests)."""
        return bool(self._pool.waitForDone(msecs))
