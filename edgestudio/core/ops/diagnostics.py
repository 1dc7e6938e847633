"""Purpose-made jobs that exercise every outcome of the job system (``edgestudio selftest``)."""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

from edgestudio.core.progress import Reporter
from edgestudio.core.recipes import DiagnosticRecipe, Recipe
from edgestudio.core.reports import JobReport


def run_diagnostic(recipe: Recipe, reporter: Reporter, staging: Path) -> JobReport:
    """Do what ``recipe.action`` says; see :class:`DiagnosticRecipe`."""
    assert isinstance(recipe, DiagnosticRecipe)
    action = recipe.action
    reporter.stage(f"self-test: {action}", 0.0)
    if action == "succeed":
        files = []
        if recipe.output:
            (staging / "result.txt").write_text("EdgeStudio self-test output\n")
            files.append("result.txt")
        reporter.progress(1.0)
        return JobReport(kind=recipe.kind, files=files, details={"action": action})
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
    if action == "spin":
        end = time.monotonic() + recipe.seconds
        total = 0
        while time.monotonic() < end:
            total += sum(i * i for i in range(10_000))
            reporter.progress(1 - (end - time.monotonic()) / recipe.seconds)
        return JobReport(kind=recipe.kind, details={"action": action})
    raise ValueError(f"Unknown self-test action '{action}'.")
