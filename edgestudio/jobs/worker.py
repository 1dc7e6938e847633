"""The job worker: a child process that runs one recipe and reports over the protocol pipe.

Started as ``python -X faulthandler -m edgestudio.jobs.worker SPEC`` (or, in a frozen app,
``edgestudio --job-worker SPEC``). SPEC is a JSON file with the recipe and the staging folder.
The protocol travels on the stdout pipe the worker was started with: the worker keeps that pipe
for itself and points its own stdout at stderr, so whatever native libraries print never mixes
with the messages (this works the same on every OS, unlike passing extra descriptors). A native
crash kills only this process: the parent classifies it from the exit status and our stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import BinaryIO

import edgestudio  # noqa: F401  (telemetry off before any onnxruntime import)
from edgestudio.core.errors import describe_exception
from edgestudio.core.paths import exit_child
from edgestudio.core.serialise import to_json
from edgestudio.jobs import protocol
from edgestudio.jobs.fork_server import FORK_SERVER_FLAG


class PipeReporter:
    """A :class:`~edgestudio.core.progress.Reporter` that writes protocol messages."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._last_fraction = -1.0

    def _send(self, msg_type: str, **fields: object) -> None:
        self._stream.write(protocol.encode(msg_type, **fields))
        self._stream.flush()

    def stage(self, name: str, fraction: float | None = None) -> None:
        """Send a stage message."""
        self._send("stage", name=name, fraction=fraction)

    def progress(self, fraction: float) -> None:
        """Send a progress message (steps under 0.2 % are not worth a message: per-node
        progress on a 20k-node graph would otherwise send 20k of them)."""
        fraction = max(0.0, min(1.0, fraction))
        if abs(fraction - self._last_fraction) < 0.002 and fraction < 1.0:
            return
        self._last_fraction = fraction
        self._send("progress", fraction=fraction)

    def log(self, text: str) -> None:
        """Send a log line."""
        self._send("log", text=text)

    def warn(self, text: str) -> None:
        """Send a warning."""
        self._send("warning", text=text)

    def check_cancelled(self) -> None:
        """Cancellation terminates the worker process, so there is nothing to poll here."""

    def result(self, report: dict[str, object]) -> None:
        """Send the final report."""
        self._send("result", report=report)

    def error(self, exc: BaseException, output_folder: str | None = None) -> None:
        """Send the exception that ended the job, worded for the user (memory, disk, …)."""
        self._send(
            "error",
            error_type=type(exc).__name__,
            message=describe_exception(exc, output_folder),
            traceback="".join(traceback.format_exception(exc)),
        )


def _take_protocol_stream() -> int:
    """Keep the stdout pipe for the protocol; send fd 1 (native prints too) to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)  # not inherited by anything this job starts
    os.dup2(2, 1)
    return protocol_fd


def preload() -> None:
    """Load what most jobs need before there is a job (see :mod:`edgestudio.jobs.fork_server`).

    PyTorch is left out: only exports use it, and it takes seconds and hundreds of MB.
    """
    from edgestudio.jobs.kinds import resolve_operation

    for kind in ("quantize", "analyze", "bench"):
        resolve_operation(kind)
    import numpy.random  # noqa: F401  (synthetic inputs; numpy imports it on first use)
    import onnxruntime.quantization  # noqa: F401  (imported lazily inside the operations)

    from edgestudio.core.quant.accel import ort_guard

    ort_guard.unsupported_reason()  # reads and hashes ORT's sources once, not per job


def run_spec(spec_path: str, stream: BinaryIO) -> int:
    """Run the job described by ``spec_path``, reporting on ``stream``; 0 on success, 1 when
    it raised (the error is reported)."""
    reporter = PipeReporter(stream)
    output_folder: str | None = None
    try:
        spec = json.loads(Path(spec_path).read_text())
        from edgestudio.jobs.kinds import recipe_from_dict, resolve_operation

        if spec.get("threads"):
            from edgestudio.core.model.sessions import THREADS_ENV

            os.environ[THREADS_ENV] = str(spec["threads"])  # read by every session made
        recipe = recipe_from_dict(spec["recipe"])
        if recipe.output:
            output_folder = str(Path(recipe.output).absolute().parent)
        operation = resolve_operation(recipe.kind)
        report = operation(recipe, reporter, Path(spec["staging"]))
        # only here does the typed result become JSON: the runner reads it back by the
        # recipe's type (Recipe.read_result)
        reporter.result(to_json(report))
    except BaseException as exc:  # report everything, including SystemExit from libraries
        reporter.error(exc, output_folder)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the job described by the spec file; exit 0 on success, 1 when it raised.

    ``--fork-server``: load the job modules, then fork one child per job asked for on stdin
    (a socket); see :mod:`edgestudio.jobs.fork_server`.
    """
    parser = argparse.ArgumentParser(prog="edgestudio-worker")
    parser.add_argument("spec", nargs="?", help="the job's spec file")
    parser.add_argument(FORK_SERVER_FLAG, action="store_true", help="fork a child per job")
    args = parser.parse_args(argv)
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    import faulthandler

    faulthandler.enable()
    if args.fork_server:
        from edgestudio.jobs.fork_server import serve

        preload()
        return serve(run_spec)
    if not args.spec:
        parser.error("give the job's spec file")
    with os.fdopen(_take_protocol_stream(), "wb", buffering=0) as stream:
        return run_spec(args.spec, stream)


if __name__ == "__main__":
    exit_child(main())
