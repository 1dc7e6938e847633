"""Purpose-made jobs that exercise every outcome of the job system (``edgestudio diagnostic``)."""

from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path

from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.progress import Reporter


def run_diagnostic(recipe: DiagnosticRecipe, reporter: Reporter, staging: Path) -> JobReport[None]:
    """Do what ``recipe.action`` says; see :class:`DiagnosticRecipe`."""
    action = recipe.action
    reporter.stage(f"self-test: {action}", 0.0)
    if action == "succeed":
        files = []
        if recipe.output:
            (staging / "result.txt").write_text("EdgeStudio self-test output\n")
            files.append("result.txt")
        reporter.progress(1.0)
        return JobReport(kind=recipe.kind, files=files)
    if action == "fail":
        raise ValueError("The self-test job failed on purpose.")
    if action == "crash":
        ctypes.string_at(0)  # a real segfault in native code
    if action == "partial":
        (staging / "result.txt").write_bytes(b"half a fi")
        ctypes.string_at(0)
    if action == "hang":
        while True:
            time.sleep(1)
    if action == "noise":  # what a native library printing to stdout does
        import os

        os.write(1, b"noise from a native library {not json\n")
        return JobReport(kind=recipe.kind)
    if action in ("spawn", "spawn-stubborn"):  # a worker with a child: cancel stops both
        import subprocess

        # spawn-stubborn's child ignores SIGTERM, as some native tools do: only SIGKILL works.
        ignore = (
            "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            if action == "spawn-stubborn"
            else ""
        )
        child = subprocess.Popen([sys.executable, "-c", f"{ignore}import time; time.sleep(600)"])
        reporter.log(f"child {child.pid}")
        while True:
            time.sleep(1)
    if action == "spin":
        end = time.monotonic() + recipe.seconds
        total = 0
        while time.monotonic() < end:
            total += sum(i * i for i in range(10_000))
            reporter.progress(1 - (end - time.monotonic()) / recipe.seconds)
        return JobReport(kind=recipe.kind)
    if action == "hog":
        _hog_memory(recipe.megabytes)
    raise ValueError(f"Unknown self-test action '{action}'.")


def _hog_memory(limit_mb: int) -> None:
    """Allocate (and touch) memory in 16 MiB steps until it runs out.

    With ``limit_mb`` the process caps its own address space that much above its current size,
    so the allocation fails with MemoryError as it would on a full machine. Without it, the job
    takes at most 1 GiB and then waits, for the test to kill it as the kernel's OOM killer would.
    """
    import resource  # Unix only: imported where it is needed

    if limit_mb > 0:
        import psutil

        current = psutil.Process().memory_info().vms
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (current + limit_mb * 2**20, hard))
    step = 16 * 2**20
    held: list[bytes] = []
    while limit_mb > 0 or len(held) * step < 2**30:
        held.append(b"\x01" * step)  # filled, so the pages are really resident
        print(f"self-test: holding {len(held) * 16} MiB", file=sys.stderr, flush=True)
    while True:
        time.sleep(1)
