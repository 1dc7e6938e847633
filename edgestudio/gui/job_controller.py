"""The window's side of the one job queue: a poll timer on the UI thread, Qt signals per change.

Every job of the window — a form's, a panel's, auto-tune's candidates — goes through one
:class:`~edgestudio.jobs.scheduler.Scheduler`, which this controller drives. Polling a pipe
without blocking costs microseconds, so no extra thread is needed: the UI thread stays free,
and workers do the heavy lifting in their own processes.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from edgestudio.core.job_api.recipe import Recipe
from edgestudio.jobs.runner import Job
from edgestudio.jobs.scheduler import Listener, Scheduler

POLL_INTERVAL_MS = 50
UPDATE_INTERVAL_S = 0.1  # throttle: widgets hear about progress at most ~10 times a second


class JobController(QObject):
    """Owns every job of the session; runs at most ``max_parallel`` at a time."""

    job_added = Signal(object)  # Job
    job_updated = Signal(object)  # Job
    job_finished = Signal(object)  # Job

    def __init__(self, parent: QObject | None = None, max_parallel: int = 1) -> None:
        super().__init__(parent)
        self.scheduler = Scheduler(
            max_parallel,
            on_added=self.job_added.emit,
            on_updated=self._throttled,
            on_finished=self.job_finished.emit,
        )
        self._last_update: dict[str, float] = {}
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_INTERVAL_MS)
        self._timer.timeout.connect(self._tick)

    @property
    def jobs(self) -> list[Job[Any]]:
        """Every job of the session, in the order they were submitted."""
        return self.scheduler.jobs

    @property
    def background(self) -> set[str]:
        """Ids of the app's own jobs (cancelled without asking on quit)."""
        return self.scheduler.background

    @property
    def max_parallel(self) -> int:
        """How many jobs may run at once."""
        return self.scheduler.max_parallel

    @max_parallel.setter
    def max_parallel(self, value: int) -> None:
        self.scheduler.max_parallel = max(1, value)

    def submit(
        self,
        recipe: Recipe[Any],
        timeout: float | None = None,
        background: bool = False,
        threads: int | None = None,
    ) -> Job[Any]:
        """Queue ``recipe`` (see :meth:`Scheduler.submit`); it starts as soon as it may."""
        job = self.scheduler.submit(recipe, timeout=timeout, background=background, threads=threads)
        self._timer.start()
        return job

    def follow(self, listener: Listener) -> None:
        """Have ``listener`` hear of every job as it ends (see :meth:`Scheduler.follow`)."""
        self.scheduler.follow(listener)

    def poll(self) -> bool:
        """True while a job runs or waits (the timer moves them on)."""
        return self.scheduler.busy()

    def cancel(self, job: Job[Any]) -> None:
        """Cancel a queued or running job."""
        self.scheduler.cancel(job)

    def running(self) -> list[Job[Any]]:
        """Jobs whose worker is running."""
        return self.scheduler.running()

    def user_jobs_running(self) -> list[Job[Any]]:
        """Running jobs the user started (worth asking about before quitting)."""
        return self.scheduler.user_jobs_running()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Cancel everything and wait for the workers to go (window closing, tests)."""
        self.scheduler.shutdown(timeout_s)
        self._timer.stop()

    def _updated(self, job: Job[Any]) -> None:
        self._last_update[job.id] = time.monotonic()
        self.job_updated.emit(job)

    def _tick(self) -> None:
        now = time.monotonic()
        busy = self.scheduler.poll()
        for job in self.scheduler.running():
            # refreshed twice a second anyway, so that the elapsed time moves
            if now - self._last_update.get(job.id, 0) >= 0.5:
                self._updated(job)
        if not busy:
            self._timer.stop()

    def _throttled(self, job: Job[Any]) -> None:
        """Progress news, at most ~10 times a second per job (its first news at once)."""
        if (
            time.monotonic() - self._last_update.get(job.id, 0) >= UPDATE_INTERVAL_S
            or job.id not in self._last_update
        ):
            self._updated(job)
