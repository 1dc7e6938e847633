"""Workers started ahead of their job, with Python and onnxruntime already loaded.

Starting a worker costs about half a second before it does any work (the interpreter, numpy,
onnx, onnxruntime and its quantization tools); on a small model that is a third of the job.
While the window is open, or while a CLI command parses its arguments, one worker is started
ahead: it loads those modules and waits for the path of its job's spec on stdin. Each worker
still runs exactly one job in its own process, so isolation is unchanged: a crash kills only
that job, and nothing of one job can leak into the next.

A warm worker is only used when it was started with the environment and working folder a
cold one would get now; otherwise it is stopped and the job starts cold. Loading modules takes
a core for half a second, so the next worker is started once jobs are over — beside running
jobs only on a machine with cores to spare, and never beside one that measures time
(benchmarks, profiles), whose numbers it would disturb.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from edgestudio.core.paths import child_command, child_env

STANDBY_FLAG = "--standby"
# From this many cores on, a worker is loaded beside running jobs (below, a job uses them all).
SPARE_CORES = 4
# Variables that change while the app runs without meaning anything to a job: pytest rewrites
# this one at every test phase.
VOLATILE_ENV = frozenset({"PYTEST_CURRENT_TEST"})


def _lasting(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in VOLATILE_ENV}


def start_worker(args: list[str], folder: Path, env: dict[str, str],
                 stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """Start a worker process: protocol on its stdout pipe, stderr into ``folder/stderr.txt``,
    detached from the terminal's Ctrl+C."""
    flags: dict[str, object] = {"start_new_session": True}
    if sys.platform == "win32":
        flags = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    with open(folder / "stderr.txt", "wb") as err:
        process: subprocess.Popen[bytes] = subprocess.Popen(
            args, stdin=stdin, stdout=subprocess.PIPE, stderr=err, env=env,
            **flags)  # type: ignore[call-overload]
    return process


@dataclass
class WarmWorker:
    """A started worker waiting for its job (its folder keeps its stderr and, later, the spec)."""

    process: subprocess.Popen[bytes]
    folder: Path
    env: dict[str, str] = field(repr=False)
    cwd: str

    def fits_now(self) -> bool:
        """Alive, and started with the environment and folder a new worker would get now."""
        return (self.process.poll() is None and _lasting(self.env) == _lasting(child_env())
                and self.cwd == os.getcwd())

    def hand(self, spec: Path) -> None:
        """Give the worker its job; its stdin is closed afterwards (as a cold worker's is)."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{spec}\n".encode())
        self.process.stdin.close()

    def discard(self) -> None:
        """Stop a worker that will get no job, and remove its folder."""
        with contextlib.suppress(OSError):
            self.process.kill()
            self.process.wait(5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class WarmPool:
    """At most one worker kept ready; ``refill`` starts the next one after each use."""

    def __init__(self, refill: bool = True) -> None:
        self.refill = refill
        self._ready: WarmWorker | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._timing_jobs = 0
        self._running = 0

    def fill(self) -> None:
        """Start a worker if none is waiting (cheap: the loading happens in the child)."""
        with self._lock:
            if self._closed or (self._ready is not None and self._ready.fits_now()):
                return
            stale, self._ready = self._ready, None
            if stale is not None:
                stale.discard()
            folder = Path(tempfile.mkdtemp(prefix="edgestudio-job-"))
            env = child_env()
            try:
                process = start_worker(child_command("--job-worker", STANDBY_FLAG), folder, env,
                                       stdin=subprocess.PIPE)
            except OSError:
                shutil.rmtree(folder, ignore_errors=True)
                return  # jobs start cold, as before
            self._ready = WarmWorker(process, folder, env, os.getcwd())

    @property
    def waiting(self) -> WarmWorker | None:
        """The worker waiting for a job, if any (for diagnostics and tests)."""
        return self._ready

    def take(self) -> WarmWorker | None:
        """The waiting worker if it fits a job started now; None means start one cold."""
        with self._lock:
            worker, self._ready = self._ready, None
        if worker is None:
            return None
        if not worker.fits_now():
            worker.discard()
            return None
        return worker

    def note_job(self, started: bool, measures_time: bool) -> None:
        """Count running jobs; start the next worker when it would slow none of them."""
        step = 1 if started else -1
        with self._lock:
            self._running = max(0, self._running + step)
            if measures_time:
                self._timing_jobs = max(0, self._timing_jobs + step)
            idle = self._running == 0
            timing = self._timing_jobs > 0
        if self.refill and not timing and (idle or (os.cpu_count() or 1) >= SPARE_CORES):
            self.fill()

    def close(self) -> None:
        """Stop the waiting worker; nothing is started afterwards."""
        with self._lock:
            self._closed = True
            worker, self._ready = self._ready, None
        if worker is not None:
            worker.discard()


_pool: WarmPool | None = None


def keep_warm(refill: bool = True) -> WarmPool:
    """Start a worker ahead of the next job now; with ``refill``, again after each one starts.

    The GUI keeps one ready while it runs; a CLI command starts one while it parses its
    arguments (no refill: it runs one job). Stopped at exit.
    """
    global _pool
    if _pool is None:
        _pool = WarmPool(refill)
        atexit.register(stop_warm)
    _pool.refill = refill
    _pool.fill()
    return _pool


def stop_warm() -> None:
    """Stop the waiting worker and start no more (window closed, tests)."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.close()


def current_pool() -> WarmPool | None:
    """The pool :func:`keep_warm` started, while it runs."""
    return _pool


def take_warm() -> WarmWorker | None:
    """A ready worker for a job starting now, or None (no pool, none ready, or a stale one)."""
    return _pool.take() if _pool is not None else None


def job_started(measures_time: bool) -> None:
    """A job took its worker: start the next one, unless a job that measures time is running."""
    if _pool is not None:
        _pool.note_job(started=True, measures_time=measures_time)


def job_ended(measures_time: bool) -> None:
    """A job ended: start the next worker, unless a job that measures time is still running."""
    if _pool is not None:
        _pool.note_job(started=False, measures_time=measures_time)
