"""Runs jobs for the GUI: a queue, a poll timer on the UI thread, signals per change.

Polling a pipe without blocking costs microseconds, so no extra thread is needed: the UI thread
stays free, and workers do the heavy lifting in their own processes.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal

from edgestudio.core.job_api.recipe import Recipe
from edgestudio.jobs.runner import Job, JobState

POLL_INTERVAL_MS = 50
UPDATE_INTERVAL_S = 0.1  # throttle: widgets hear about progress at most ~10 times a second


class JobController(QObject):
    """Owns every job of the session; runs at most ``max_parallel`` at a time."""

    job_added = Signal(object)  # Job
    job_updated = Signal(object)  # Job
    job_finished = Signal(object)  # Job

    def __init__(self, parent: QObject | None = None, max_parallel: int = 1) -> None:
        super().__init__(parent)
        self.jobs: list[Job] = []
        self.background: set[str] = set()
        self.max_parallel = max_parallel
        self._last_update: dict[str, float] = {}
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_INTERVAL_MS)
        self._timer.timeout.connect(self._tick)

    def submit(self, recipe: Recipe, timeout: float | None = None,
               background: bool = False) -> Job:
        """Queue ``recipe``; it starts as soon as a slot is free.

        ``background`` jobs (the app's own probes) are cancelled without asking on quit.
        """
        job = Job(recipe, timeout=timeout)
        if background:
            self.background.add(job.id)
        self.jobs.append(job)
        self.job_added.emit(job)
        self._start_queued()
        self._timer.start()
        return job

    def cancel(self, job: Job) -> None:
        """Cancel a queued or running job."""
        job.cancel()
        if job.state.is_final:
            self.job_finished.emit(job)

    def running(self) -> list[Job]:
        """Jobs whose worker is running."""
        return [j for j in self.jobs if j.state is JobState.RUNNING]

    def user_jobs_running(self) -> list[Job]:
        """Running jobs the user started (worth asking about before quitting)."""
        return [j for j in self.running() if j.id not in self.background]

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Cancel everything and wait for the workers to go (window closing, tests)."""
        for job in self.jobs:
            if not job.state.is_final:
                job.cancel()
        for job in self.jobs:
            if job.state is JobState.RUNNING:
                job.wait(timeout_s)
        self._timer.stop()

    def _start_queued(self) -> None:
        for job in self.jobs:
            if len(self.running()) >= self.max_parallel:
                break
            if job.state is JobState.QUEUED:
                try:
                    job.start()
                except Exception as exc:  # unusable output etc.: the job fails, the app goes on
                    job.fail_before_start(str(exc))
                    self.job_finished.emit(job)
                    continue
                self.job_updated.emit(job)

    def _tick(self) -> None:
        now = time.monotonic()
        for job in self.running():
            changed = job.poll(0.0)
            if job.state.is_final:
                self.job_finished.emit(job)
            elif now - self._last_update.get(job.id, 0) >= (UPDATE_INTERVAL_S if changed else 0.5):
                # Throttled, and refreshed twice a second anyway so the elapsed time moves.
                self._last_update[job.id] = now
                self.job_updated.emit(job)
        self._start_queued()
        if not self.running() and not any(j.state is JobState.QUEUED for j in self.jobs):
            self._timer.stop()
