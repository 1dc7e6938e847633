"""The parent side of a job: launch its worker, read its messages, cancel, classify the outcome.

Nothing here blocks for long: :meth:`Job.poll` reads whatever the worker has sent, so the GUI
calls it from a timer and the CLI from a loop (both through the scheduler, whose launcher starts
the worker). Outputs are written by the worker into a staging folder next to the target
(:mod:`edgestudio.jobs.staging`) and moved into place only when the job succeeded; any other
outcome deletes the staging folder, so no half-written file is ever left behind.

Portable by construction: the worker's protocol arrives on its stdout pipe, read by a thread
(no ``select`` on a pipe, which Windows lacks); the worker tree is stopped and its memory sampled
through psutil (no process groups, no ``/proc``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import os
import queue
import shutil
import signal
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import psutil

from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.serialise import from_json, to_json
from edgestudio.jobs import protocol
from edgestudio.jobs.launch import Child, Launcher
from edgestudio.jobs.staging import OutputPathError, check_output, publish, staging_folder

R = TypeVar("R")  # the job's result, as its recipe (a Recipe[R]) declares

STDERR_TAIL_BYTES = 4000
KILL_GRACE_S = 2.0


class JobState(enum.Enum):
    """Where a job is in its life; the last five are final."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CRASHED = "crashed"
    TIMED_OUT = "timed out"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        """True once the job has ended."""
        return self not in (JobState.QUEUED, JobState.RUNNING)


def _read_lines(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    """Copy the worker's protocol lines into ``lines``; None marks the end of the pipe."""
    try:
        for line in iter(stream.readline, b""):
            lines.put(line)
    except (OSError, ValueError):
        pass  # the pipe broke: the job is over either way
    finally:
        stream.close()
        lines.put(None)


def _process_tree(pid: int) -> list[psutil.Process]:
    """The worker and every process it started (alive ones only)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _alive(process: psutil.Process) -> bool:
    """True while ``process`` runs (a zombie has ended)."""
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _signal_all(processes: list[psutil.Process], kill: bool) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):  # already gone
            process.kill() if kill else process.terminate()


class Job(Generic[R]):
    """One recipe running (or to be run) in a worker process; a ``Recipe[R]`` makes a
    ``Job[R]``, whose report's ``result`` is an ``R``.

    Parameters
    ----------
    recipe
        What to do.
    timeout
        Seconds after which the worker is stopped and the job ends as ``TIMED_OUT``.
    threads
        The onnxruntime threads the job's own sessions may use (jobs side by side each get a
        share; None: every core). Benchmarks keep the threads they measure.
    """

    def __init__(
        self, recipe: Recipe[R], timeout: float | None = None, threads: int | None = None
    ) -> None:
        self.recipe = recipe
        self.timeout = timeout
        self.threads = threads
        self.id = uuid.uuid4().hex[:8]
        self.state = JobState.QUEUED
        self.stage = "queued"
        self.fraction: float | None = None
        self.log: list[str] = []
        self.warnings: list[str] = []
        self.report: JobReport[R] | None = None
        self.error: str | None = None
        self.error_type: str | None = None
        self.stderr_tail = ""
        self.peak_memory_mb: float | None = None
        self.output: Path | None = None
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._proc: Child | None = None
        self._launcher: Launcher | None = None
        self._ps: psutil.Process | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._pipe_open = False
        self._stopping: list[psutil.Process] = []
        self._tmp: Path | None = None
        self._staging: Path | None = None
        self._stderr_path: Path | None = None
        self._cancel_requested = False
        self._timed_out = False
        self._kill_at: float | None = None
        self._error_msg: dict[str, object] | None = None

    # ----- lifecycle ----------------------------------------------------------------------------
    def start(self, launcher: Launcher) -> None:
        """Check the output and have ``launcher`` start the worker (the scheduler's own).

        Raises OutputPathError for an unusable output."""
        self.output = check_output(self.recipe)
        self._launcher = launcher
        self._tmp = Path(tempfile.mkdtemp(prefix="edgestudio-job-"))
        if self.output is not None:
            self._staging = staging_folder(self.output)
        else:
            self._staging = self._tmp / "staging"
            self._staging.mkdir()
        spec = self._tmp / "spec.json"
        spec.write_text(
            json.dumps(
                {
                    "recipe": to_json(self.recipe),
                    "staging": str(self._staging),
                    "threads": self.threads,
                }
            )
        )
        self._stderr_path = self._tmp / "stderr.txt"
        self._proc = launcher.launch(spec, self._tmp, self.recipe.runs_alone)
        # Running from here on: whatever interrupts the rest, cancel() stops this process.
        self.state = JobState.RUNNING
        self.stage = "starting"
        self.started_at = time.monotonic()
        assert self._proc.stdout is not None
        self._pipe_open = True
        threading.Thread(
            target=_read_lines,
            args=(self._proc.stdout, self._lines),
            name=f"job-{self.id}-reader",
            daemon=True,
        ).start()
        try:
            self._ps = psutil.Process(self._proc.pid)
        except psutil.Error:
            self._ps = None  # it died at once; poll() will say how

    def cancel(self) -> None:
        """Stop the job: terminate the worker now, kill it if it is still there 2 s later.

        Never blocks: :meth:`poll` escalates to SIGKILL and notices the exit.
        """
        if self.state is JobState.QUEUED:
            self._cancel_requested = True
            self._finish(JobState.CANCELLED)
        elif self.state is JobState.RUNNING:
            self._cancel_requested = True
            self._stop_worker()

    def poll(self, timeout: float = 0.0) -> bool:
        """Read what the worker sent (waiting up to ``timeout`` s); return True if anything changed.

        Finishes the job when the worker has exited.
        """
        if self.state is not JobState.RUNNING or self._proc is None:
            return False
        changed = self._read_messages(timeout)
        self._sample_peak_memory()
        if self.timeout is not None and self.elapsed > self.timeout and self._proc.poll() is None:
            self._timed_out = True
            self._stop_worker()
        if self._kill_at is not None and time.monotonic() > self._kill_at:
            self._kill_at = None
            _signal_all(self._stopping + _process_tree(self._proc.pid), kill=True)
        if self._proc.poll() is not None:
            self._drain_after_exit()
            self._conclude()
            return True
        return changed

    def wait(self, timeout: float | None = None) -> JobState:
        """Poll until the job ends (or ``timeout`` s pass); return its state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.state.is_final:
            if deadline is not None and time.monotonic() > deadline:
                break
            self.poll(0.1)
        return self.state

    @property
    def elapsed(self) -> float:
        """Seconds since the worker started (frozen once the job ends)."""
        if self.started_at is None:
            return 0.0
        end = self.finished_at if self.finished_at is not None else time.monotonic()
        return end - self.started_at

    @property
    def pid(self) -> int | None:
        """The worker's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    # ----- internals ----------------------------------------------------------------------------
    def _stop_worker(self) -> None:
        """Terminate the worker and everything it started; :meth:`poll` kills what stays."""
        assert self._proc is not None
        if self._proc.poll() is not None:
            return
        # The tree is listed now: once the worker is gone its children are orphans that
        # psutil can no longer find through it.
        self._stopping = _process_tree(self._proc.pid)
        _signal_all(self._stopping, kill=False)
        self._kill_at = time.monotonic() + KILL_GRACE_S

    def _sample_peak_memory(self) -> None:
        """Keep the highest resident memory seen, so a killed worker can say how much it used.

        Sampled at every poll (the GUI polls 20 times a second, the CLI 10). The OS's own peak
        (``ru_maxrss``) is no help here: a forked worker inherits the window's peak with it.
        """
        if self._ps is None:
            return
        try:
            rss_mb = self._ps.memory_info().rss / 2**20
        except psutil.Error:
            return  # already gone
        self.peak_memory_mb = max(self.peak_memory_mb or 0.0, rss_mb)

    def _read_messages(self, timeout: float) -> bool:
        """Handle the lines the reader thread has queued, waiting up to ``timeout`` s for one."""
        changed = False
        wait = timeout
        while self._pipe_open:
            try:
                line = self._lines.get(timeout=wait) if wait > 0 else self._lines.get_nowait()
            except queue.Empty:
                break
            wait = 0.0
            if line is None:
                self._pipe_open = False
                break
            msg = protocol.decode(line.rstrip(b"\n"))
            if msg is not None:
                self._handle(msg)
                changed = True
        return changed

    def _drain_after_exit(self) -> None:
        """Read the last messages of an exited worker (its pipe closes right after)."""
        deadline = time.monotonic() + 2.0
        while self._pipe_open and time.monotonic() < deadline:
            self._read_messages(0.05)

    def _handle(self, msg: dict[str, object]) -> None:
        kind = msg["type"]
        if kind == "stage":
            self.stage = str(msg["name"])
            self.log.append(f"▸ {self.stage}")
            if msg.get("fraction") is not None:
                self.fraction = float(msg["fraction"])  # type: ignore[arg-type]
        elif kind == "progress":
            self.fraction = float(msg["fraction"])  # type: ignore[arg-type]
        elif kind == "log":
            self.log.append(str(msg["text"]))
        elif kind == "warning":
            self.warnings.append(str(msg["text"]))
            self.log.append(f"warning: {msg['text']}")
        elif kind == "result":
            report: JobReport[Any] = from_json(JobReport[Any], msg["report"])
            try:  # typed once, here: every reader then has an R
                report.result = self.recipe.read_result(report.result)
                self.report = report
            except Exception as exc:  # a result this version cannot read fails the job
                self._error_msg = {
                    "message": f"The job's result could not be read: {exc}",
                    "error_type": type(exc).__name__,
                }
        elif kind == "error":
            self._error_msg = msg

    def _conclude(self) -> None:
        assert self._proc is not None
        code = self._proc.poll()
        assert code is not None  # only called once the worker has exited
        self.stderr_tail = self._read_stderr_tail()
        if self._cancel_requested or self._timed_out:
            # The worker is gone, so poll() will not escalate to SIGKILL for what it started:
            # whatever of its tree outlived SIGTERM is killed now.
            _signal_all([p for p in self._stopping if _alive(p)], kill=True)
        if self._cancel_requested:
            self._finish(JobState.CANCELLED)
        elif self._timed_out:
            self.error = f"The job ran longer than its {self.timeout:g} s limit and was stopped."
            self._finish(JobState.TIMED_OUT)
        elif self._error_msg is not None:
            self.error = str(self._error_msg.get("message"))
            self.error_type = str(self._error_msg.get("error_type"))
            self.log.append(str(self._error_msg.get("traceback", "")))
            self._finish(JobState.FAILED)
        elif code == 0 and self.report is not None:
            self._publish_outputs()
        elif self._retry_isolated(code):
            return
        else:
            self.error = self._crash_description(code)
            self._finish(JobState.CRASHED)

    def _retry_isolated(self, code: int) -> bool:
        """After a crash, run a job that can prove its result in a child process once more
        that way (onnxruntime can segfault on a model it just wrote). True when restarted."""
        if getattr(self.recipe, "isolate_proof", True):  # no such field, or retried already
            return False
        crash = self._crash_description(code)
        self.recipe = dataclasses.replace(self.recipe, isolate_proof=True)  # type: ignore[call-arg]
        for folder in (self._staging, self._tmp):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        self._lines, self._error_msg, self.report = queue.Queue(), None, None
        note = (
            f"{crash} Running the job again with the result's proof in a separate "
            "process, so that a result that crashes onnxruntime is refused cleanly."
        )
        self.log.append(f"warning: {note}")
        self.warnings.append(note)
        assert self._launcher is not None
        try:
            self.start(self._launcher)
        except OutputPathError as exc:
            self.error = str(exc)
            self._finish(JobState.FAILED)
        return True

    def _crash_description(self, code: int) -> str:
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            if name == "SIGKILL":  # we only send SIGKILL when cancelling or timing out
                used = (
                    f" after using {self.peak_memory_mb:,.0f} MB"
                    if self.peak_memory_mb is not None
                    else ""
                )
                return (
                    f"The worker process was killed (SIGKILL){used}: most likely the "
                    "system ran out of memory and its out-of-memory killer stopped it, or "
                    "another program did. Try fewer calibration samples or a machine with "
                    "more memory."
                )
            return f"The worker process crashed with {name}."
        return f"The worker process exited with code {code} without a result."

    def _publish_outputs(self) -> None:
        assert self.report is not None and self._staging is not None
        try:
            if self.output is not None:
                publish(self.report, self._staging, self.output)
        except OSError as exc:
            self.error = f"Could not move the result into place: {exc.strerror or exc}."
            self._finish(JobState.FAILED)
            return
        except OutputPathError as exc:
            self.error = str(exc)
            self._finish(JobState.FAILED)
            return
        self._finish(JobState.SUCCEEDED)

    def _read_stderr_tail(self) -> str:
        if self._stderr_path is None or not self._stderr_path.exists():
            return ""
        with open(self._stderr_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - STDERR_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")

    def fail_before_start(self, message: str) -> None:
        """End a queued job as FAILED without starting it (e.g. its output is unusable)."""
        self.error = message
        self._finish(JobState.FAILED)

    def _finish(self, state: JobState) -> None:
        self.state = state
        self.stage = state.value
        self.finished_at = time.monotonic()
        self._pipe_open = False  # the reader thread closes the pipe when it ends
        for folder in (self._staging, self._tmp):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
