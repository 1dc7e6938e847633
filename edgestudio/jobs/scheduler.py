"""One queue for every job of a session: the window's, the command line's, auto-tune's.

At most ``max_parallel`` jobs run at once; the rest wait in the order they came. A job whose recipe
runs alone (``Recipe.runs_alone``: a benchmark or profile, whose times must not share the machine)
starts only when nothing else runs, and nothing starts beside it. The scheduler is plain Python:
the window drives it from a Qt timer (:class:`edgestudio.gui.job_controller.JobController`), the
command line and the tuner from a loop (:meth:`Scheduler.run_until_done`), so auto-tune's
candidates are jobs like any other — listed in the Jobs panel and governed by the same limit. The
scheduler owns the launcher that starts each job's worker (:mod:`edgestudio.jobs.launch`); a single
job run to its end (:func:`run_job`: a command, a test) goes through a scheduler too.
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from edgestudio.core.job_api.recipe import Recipe
from edgestudio.jobs.fork_server import ForkLauncher
from edgestudio.jobs.launch import FORK_PLATFORM, Launcher, SpawnLauncher
from edgestudio.jobs.runner import KILL_GRACE_S, Job, JobState

Listener = Callable[[Job[Any]], None]  # hears of jobs of every kind
R = TypeVar("R")


class JobSubmitter(Protocol):
    """What a client of the scheduler needs (the tuner, the workflow): submit and watch."""

    def submit(
        self,
        recipe: Recipe[R],
        timeout: float | None = None,
        background: bool = False,
        threads: int | None = None,
    ) -> Job[R]:
        """Queue ``recipe``; the returned job's state says where it is."""
        ...  # pragma: no cover - a protocol

    def poll(self) -> bool:
        """Advance what runs; True while something runs or waits."""
        ...  # pragma: no cover - a protocol

    def cancel(self, job: Job[Any]) -> None:
        """Stop ``job`` (queued or running)."""
        ...  # pragma: no cover - a protocol

    @property
    def max_parallel(self) -> int:
        """How many jobs may run at once."""
        ...  # pragma: no cover - a protocol


class JobQueue(JobSubmitter, Protocol):
    """A submitter whose finished jobs can be followed (the workflow's queue)."""

    def follow(self, listener: Listener) -> None:
        """Have ``listener`` hear of every job as it ends."""
        ...  # pragma: no cover - a protocol


class Scheduler:
    """Every job of a session; runs at most ``max_parallel`` at a time (see the module doc).

    ``on_added``, ``on_updated`` and ``on_finished`` hear of each job as it is queued, as it
    starts or reports progress, and when it ends. ``launcher`` starts the workers (by default
    this process's: forked from a loaded server where possible).
    """

    def __init__(
        self,
        max_parallel: int = 1,
        on_added: Listener | None = None,
        on_updated: Listener | None = None,
        on_finished: Listener | None = None,
        launcher: Launcher | None = None,
    ) -> None:
        self.max_parallel = max(1, max_parallel)
        self.launcher = launcher or default_launcher()
        self.jobs: list[Job[Any]] = []
        self.background: set[str] = set()
        self.on_added = on_added or (lambda job: None)
        self.on_updated = on_updated or (lambda job: None)
        self.on_finished = on_finished or (lambda job: None)
        self._followers: list[Listener] = []

    def follow(self, listener: Listener) -> None:
        """Have ``listener`` hear of every job as it ends, after ``on_finished`` (the workflow
        subscribes itself this way: outcomes reach documents without passing the window)."""
        self._followers.append(listener)

    def _finished(self, job: Job[Any]) -> None:
        self.on_finished(job)
        for listener in self._followers:
            listener(job)

    def submit(
        self,
        recipe: Recipe[R],
        timeout: float | None = None,
        background: bool = False,
        threads: int | None = None,
    ) -> Job[R]:
        """Queue ``recipe``; it starts as soon as a slot is free.

        ``background`` jobs (the app's own probes) are cancelled without asking on quit;
        ``threads`` is the share of cores the job's own sessions may use; a job that measures
        time runs alone (``recipe.runs_alone``).
        """
        job = Job(recipe, timeout=timeout, threads=threads)
        if background:
            self.background.add(job.id)
        self.jobs.append(job)
        self.on_added(job)
        self._start_queued()
        return job

    def cancel(self, job: Job[Any]) -> None:
        """Cancel a queued or running job."""
        job.cancel()
        if job.state.is_final:
            self._finished(job)
        self._start_queued()

    def running(self) -> list[Job[Any]]:
        """Jobs whose worker is running."""
        return [j for j in self.jobs if j.state is JobState.RUNNING]

    def queued(self) -> list[Job[Any]]:
        """Jobs waiting for a slot."""
        return [j for j in self.jobs if j.state is JobState.QUEUED]

    def user_jobs_running(self) -> list[Job[Any]]:
        """Running jobs the user started (worth asking about before quitting)."""
        return [j for j in self.running() if j.id not in self.background]

    def busy(self) -> bool:
        """True while a job runs or waits."""
        return bool(self.running() or self.queued())

    def poll(self, wait: float = 0.0) -> bool:
        """Read every running job's news (waiting up to ``wait`` s for the first one's), start
        what may start; True while busy."""
        for job in self.running():
            changed = job.poll(wait)
            wait = 0.0
            if job.state.is_final:
                self._finished(job)
            elif changed:
                self.on_updated(job)
        self._start_queued()
        return self.busy()

    def run_until_done(self, jobs: list[Job[Any]] | None = None, interval: float = 0.05) -> None:
        """Drive the queue here (the command line) until ``jobs`` (or every job) ended."""

        def waiting() -> bool:
            return any(not j.state.is_final for j in (jobs if jobs is not None else self.jobs))

        while waiting():
            if not self.running():
                time.sleep(interval)
            self.poll(wait=interval)  # wakes as soon as a worker says something or ends

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Cancel everything and wait for the workers to go (window closing, tests)."""
        for job in self.jobs:
            if not job.state.is_final:
                job.cancel()
        for job in self.jobs:
            if job.state is JobState.RUNNING:
                job.wait(timeout_s)

    def _may_start(self, job: Job[Any]) -> bool:
        running = self.running()
        if any(j.recipe.runs_alone for j in running):
            return False  # a job that measures time runs alone
        if job.recipe.runs_alone:
            return not running
        return len(running) < self.max_parallel

    def _start_queued(self) -> None:
        for job in self.queued():
            if not self._may_start(job):
                if job.recipe.runs_alone:
                    break  # it waits for the others to end; later jobs wait behind it
                continue
            try:
                job.start(self.launcher)
            except Exception as exc:  # unusable output etc.: the job fails, the app goes on
                job.fail_before_start(str(exc))
                self._finished(job)
                continue
            self.on_updated(job)


def run_job(
    recipe: Recipe[R],
    timeout: float | None = None,
    on_update: Listener | None = None,
    launcher: Launcher | None = None,
) -> Job[R]:
    """Run ``recipe`` to the end through a scheduler of its own (with ``launcher``, else this
    process's) and return the finished job; ``on_update`` hears of its progress and its end.

    A KeyboardInterrupt cancels the worker (no partial output remains) and is re-raised.
    """
    scheduler = Scheduler(on_updated=on_update, on_finished=on_update, launcher=launcher)
    try:
        job = scheduler.submit(recipe, timeout=timeout)  # may wait for the fork server to load
        scheduler.run_until_done([job])
    except KeyboardInterrupt:
        scheduler.shutdown(KILL_GRACE_S + 5)
        raise
    return job


_default: Launcher | None = None


def default_launcher() -> Launcher:
    """The launcher of this process's jobs: forking on Linux, spawning elsewhere. Nothing is
    started until it is asked to :meth:`~Launcher.prepare` or to launch; it is closed at exit.
    """
    global _default
    if _default is None:
        _default = ForkLauncher() if FORK_PLATFORM else SpawnLauncher()
        atexit.register(close_default_launcher)
    return _default


def close_default_launcher() -> None:
    """Close the default launcher (command ended, tests); a later job makes a new one."""
    global _default
    launcher, _default = _default, None
    if launcher is not None:
        launcher.close()
