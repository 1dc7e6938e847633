"""Jobs that start with Python and onnxruntime already loaded.

Starting a worker costs about half a second before it does any work (the interpreter, numpy,
onnx, onnxruntime and its quantization tools); on a small model that is a third of the job.
While the window is open, or while a CLI command parses its arguments, that loading is done
ahead, one of two ways:

- Linux: a fork server (:mod:`edgestudio.jobs.fork_server`) has loaded the modules and forks
  one child per job, in milliseconds.
- Elsewhere: a worker is started ahead, loads the modules and waits for the path of its job's
  spec on stdin; after each job the next one is started.

Either way each job still runs in its own process, so isolation is unchanged: a crash kills only
that job, and nothing of one job can leak into the next. A loaded process is only used when it
was started with the environment and working folder a cold worker would get now; otherwise the
job starts cold and it is replaced. Loading modules takes a core for half a second, so it is
done once jobs are over — beside running jobs only on a machine with cores to spare or while an
auto-tune holds workers, and never beside a job that measures time (benchmarks, profiles),
whose numbers it would disturb.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from edgestudio.core.paths import child_command, child_env
from edgestudio.jobs.fork_server import ForkServer
from edgestudio.jobs.spawn import start_worker

STANDBY_FLAG = "--standby"
FORK_SERVER_FLAG = "--fork-server"
# Where jobs are forked from a loaded server instead of waiting workers: Linux (fork after
# loading numpy and onnxruntime is safe there; macOS frameworks and Windows do not allow it).
FORK_PLATFORM = sys.platform == "linux"
# From this many cores on, a worker is loaded beside running jobs (below, a job uses them all).
SPARE_CORES = 4
# Variables that change while the app runs without meaning anything to a job: pytest rewrites
# this one at every test phase.
VOLATILE_ENV = frozenset({"PYTEST_CURRENT_TEST"})


def _lasting(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in VOLATILE_ENV}


def _fits(env: dict[str, str], cwd: str) -> bool:
    """Whether a process started with ``env`` in ``cwd`` is what a worker started now gets."""
    return _lasting(env) == _lasting(child_env()) and cwd == os.getcwd()


@dataclass
class WarmWorker:
    """A started worker waiting for its job (its folder keeps its stderr and, later, the spec)."""

    process: subprocess.Popen[bytes]
    folder: Path
    env: dict[str, str] = field(repr=False)
    cwd: str

    def fits_now(self) -> bool:
        """Alive, and started with the environment and folder a new worker would get now."""
        return self.process.poll() is None and _fits(self.env, self.cwd)

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
    """Loaded processes for the next jobs: the fork server (``fork``), or workers kept ready
    (one, or one per parallel worker while a throughput hold is on) that ``refill`` replaces
    after each use."""

    def __init__(
        self, refill: bool = True, fork: bool | None = None, wait_for_load: bool = False
    ) -> None:
        self.refill = refill
        self.fork = FORK_PLATFORM if fork is None else fork
        # Whether a job waits for the fork server to finish loading rather than start cold:
        # yes for a command (the loading is under way, a cold worker would only redo it), no
        # in the window (a job is started on the UI thread, which must not wait).
        self.wait_for_load = wait_for_load
        self._server: ForkServer | None = None
        self._retired: list[ForkServer] = []
        self._ready: list[WarmWorker] = []
        self._lock = threading.Lock()
        self._closed = False
        self._timing_jobs = 0
        self._running = 0
        self._holds: list[int] = []  # the sizes asked for by throughput holds

    @property
    def size(self) -> int:
        """How many workers are kept ready."""
        return max([1, *self._holds])

    def fork_server(self) -> ForkServer | None:
        """The fork server, when jobs are forked from one that fits a job started now and has
        loaded its modules (or, with :attr:`wait_for_load`, is loading them)."""
        server = self._fitting_server()
        if server is None or not (server.loaded.is_set() or self.wait_for_load):
            return None
        return server

    def _fitting_server(self) -> ForkServer | None:
        """The fork server if it runs with the environment and folder a job would get now."""
        server = self._server
        if server is None or not (server.alive() and _fits(server.env, server.cwd)):
            return None
        return server

    def _fill_fork_server(self) -> None:
        with self._lock:
            if not self._closed and self._fitting_server() is None:
                if self._server is not None:
                    self._retired.append(self._server)
                try:
                    self._server = ForkServer(
                        child_command("--job-worker", FORK_SERVER_FLAG), child_env()
                    )
                except OSError:
                    self._server = None  # jobs start cold, as before
            # A replaced server is kept until its running jobs end: only it can report how.
            done = [s for s in self._retired if not s.busy()]
            self._retired = [s for s in self._retired if s.busy()]
        for server in done:
            server.close()

    def fill(self) -> None:
        """Start workers until :attr:`size` wait (cheap: the loading happens in the child);
        with a fork server, make sure one that fits is running."""
        if self.fork:
            self._fill_fork_server()
            return
        with self._lock:
            if self._closed:
                return
            stale = [w for w in self._ready if not w.fits_now()]
            self._ready = [w for w in self._ready if w not in stale]
            missing = self.size - len(self._ready)
        for worker in stale:
            worker.discard()
        for _ in range(missing):
            folder = Path(tempfile.mkdtemp(prefix="edgestudio-job-"))
            env = child_env()
            try:
                process = start_worker(
                    child_command("--job-worker", STANDBY_FLAG), folder, env, stdin=subprocess.PIPE
                )
            except OSError:
                shutil.rmtree(folder, ignore_errors=True)
                return  # jobs start cold, as before
            worker = WarmWorker(process, folder, env, os.getcwd())
            with self._lock:
                if self._closed:
                    worker.discard()
                    return
                self._ready.append(worker)

    @property
    def waiting(self) -> WarmWorker | None:
        """The next worker a job would get, if any (for diagnostics and tests)."""
        return self._ready[0] if self._ready else None

    def take(self) -> WarmWorker | None:
        """The oldest waiting worker (the most loaded) if it fits a job started now; None
        means start one cold."""
        with self._lock:
            worker = self._ready.pop(0) if self._ready else None
        if worker is None:
            return None
        if not worker.fits_now():
            worker.discard()
            return None
        return worker

    def note_job(self, started: bool, measures_time: bool) -> None:
        """Count running jobs; start the next worker when it would slow none of them (or when
        a throughput hold asks for workers beside running jobs)."""
        step = 1 if started else -1
        with self._lock:
            self._running = max(0, self._running + step)
            if measures_time:
                self._timing_jobs = max(0, self._timing_jobs + step)
            idle = self._running == 0
            timing = self._timing_jobs > 0
            beside = bool(self._holds) or (os.cpu_count() or 1) >= SPARE_CORES
        if self.refill and not timing and (idle or beside):
            self.fill()

    def hold(self, size: int) -> Callable[[], None]:
        """Keep ``size`` workers ready, loaded beside running jobs, until the returned function
        is called: parallel work (an auto-tune) wants throughput, and every job of it would
        otherwise start cold."""
        with self._lock:
            self._holds.append(size)
        self.fill()

        def release() -> None:
            with self._lock:
                if size in self._holds:
                    self._holds.remove(size)
                extra = self._ready[self.size :]
                self._ready = self._ready[: self.size]
            for worker in extra:
                worker.discard()

        return release

    def close(self) -> None:
        """Stop the waiting workers (and the fork server); nothing is started afterwards."""
        with self._lock:
            self._closed = True
            workers, self._ready = self._ready, []
            servers = [s for s in (self._server, *self._retired) if s is not None]
            self._server, self._retired = None, []
        for worker in workers:
            worker.discard()
        for server in servers:
            server.close()


_pool: WarmPool | None = None


def keep_warm(
    refill: bool = True, fork: bool | None = None, wait_for_load: bool = False
) -> WarmPool:
    """Have jobs start loaded from now on: a fork server (Linux; ``fork`` overrides), else a
    worker started ahead of the next job and, with ``refill``, again after each one.

    The GUI keeps this while it runs; a CLI command starts it while it parses its arguments
    (no refill: it runs one job). Stopped at exit.
    """
    global _pool
    if _pool is None:
        _pool = WarmPool(refill, fork, wait_for_load)
        atexit.register(stop_warm)
    _pool.refill = refill
    _pool.fill()
    return _pool


def hold_for_throughput(size: int) -> Callable[[], None]:
    """:meth:`WarmPool.hold` on the running pool (started for the hold when there is none, and
    stopped with it); returns the release function."""
    created = _pool is None
    pool = keep_warm(refill=True) if created else _pool
    assert pool is not None
    refill, pool.refill = pool.refill, True
    release_hold = pool.hold(size)

    def release() -> None:
        release_hold()
        pool.refill = refill
        if created and _pool is pool:
            stop_warm()

    return release


def stop_warm() -> None:
    """Stop the waiting worker and start no more (window closed, tests)."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.close()


def current_pool() -> WarmPool | None:
    """The pool :func:`keep_warm` started, while it runs."""
    return _pool


def fork_server() -> ForkServer | None:
    """The running fork server that fits a job started now, if jobs are forked."""
    return _pool.fork_server() if _pool is not None else None


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
