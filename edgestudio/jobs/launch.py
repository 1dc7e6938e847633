"""How a job's worker process starts: the one launcher interface, which the scheduler owns.

Every job runs in a process of its own (a crash kills only that job, a cancel only its tree).
Two launchers start it:

- :class:`SpawnLauncher` starts a fresh Python, which loads numpy, onnx and onnxruntime before
  it does any work: about 0.4 s on this project's 2-core machine.
- :class:`~edgestudio.jobs.fork_server.ForkLauncher` (Linux) forks the worker from a server that
  has loaded them once, in milliseconds.

Measured (``make bench``, ``bench_jobs``: a dynamic int8 quantization of the digits sample,
2 cores): after a pause, a cold worker 0.50 s, a forked one 0.08 s; eight jobs back to back,
0.47 s against 0.08 s each. A pool of workers started ahead (the standby pool of earlier
versions) matched the fork after a pause (0.07 s) but gave back 0.39 s per job back to back:
each waiting worker loads the modules again, beside the job before it. Chained jobs (quantize,
then analyse) and auto-tune run back to back, so only the fork server is kept, where the
platform forks safely; elsewhere jobs start cold.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO, Protocol

from edgestudio.core.paths import child_command, child_env

# Forking after loading numpy and onnxruntime is safe on Linux; macOS frameworks and Windows
# do not allow it.
FORK_PLATFORM = sys.platform == "linux"


class Child(Protocol):
    """A started worker: what the runner reads, samples and stops."""

    @property
    def pid(self) -> int:
        """Its process id."""
        ...  # pragma: no cover - a protocol

    @property
    def stdout(self) -> IO[bytes] | None:
        """The pipe its protocol messages arrive on."""
        ...  # pragma: no cover - a protocol

    def poll(self) -> int | None:
        """The exit status once it has ended (negative: killed by that signal), else None."""
        ...  # pragma: no cover - a protocol


class Launcher(Protocol):
    """Starts the worker of a job."""

    def launch(self, spec: Path, folder: Path, measures_time: bool = False) -> Child:
        """Start a worker for the job described in ``spec``; its stderr goes into
        ``folder/stderr.txt``. ``measures_time``: the job times a model, so nothing else may
        load beside it."""
        ...  # pragma: no cover - a protocol

    def prepare(self, wait_for_load: bool = False) -> None:
        """Get ready for the next jobs ahead of time (cheap for the caller). ``wait_for_load``:
        a job launched while that is under way waits for it instead of starting cold (a
        command, whose job would only redo it; not the window, which launches on its UI
        thread)."""
        ...  # pragma: no cover - a protocol

    def close(self) -> None:
        """Stop whatever the launcher keeps running; jobs already started go on."""
        ...  # pragma: no cover - a protocol


def spawn(
    args: list[str], stderr_path: Path, env: dict[str, str], stdin: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """Start a child process: the protocol on its stdout pipe, its stderr into ``stderr_path``,
    detached from the terminal's Ctrl+C (the one place that decides how a process starts)."""
    flags: dict[str, object] = {"start_new_session": True}
    if sys.platform == "win32":
        flags = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    with open(stderr_path, "wb") as err:
        process: subprocess.Popen[bytes] = subprocess.Popen(
            args, stdin=stdin, stdout=subprocess.PIPE, stderr=err, env=env, **flags
        )  # type: ignore[call-overload]
    return process


class SpawnLauncher:
    """Each job in a freshly started Python (``--job-worker SPEC``; the frozen app runs itself)."""

    def launch(self, spec: Path, folder: Path, measures_time: bool = False) -> Child:
        """Start a cold worker for ``spec``."""
        return spawn(child_command("--job-worker", str(spec)), folder / "stderr.txt", child_env())

    def prepare(self, wait_for_load: bool = False) -> None:
        """Nothing to prepare: every worker starts from scratch."""

    def close(self) -> None:
        """Nothing runs between jobs."""
