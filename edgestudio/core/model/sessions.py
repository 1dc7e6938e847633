"""The options every job's own onnxruntime sessions start from (never a benchmark's: its
threads are what it measures).

A job uses every core by default. When jobs run side by side (auto-tune workers), each gets a
share: ``EDGESTUDIO_JOB_THREADS`` intra-op threads that do not spin while they wait. onnxruntime's
threads otherwise busy-wait between operators, burning the cores the other job needs.
"""

from __future__ import annotations

import os
from typing import Any

THREADS_ENV = "EDGESTUDIO_JOB_THREADS"


def job_threads() -> int | None:
    """The threads this job's sessions may use (None: onnxruntime's default, every core)."""
    value = os.environ.get(THREADS_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def job_session_options(log_level: int = 3) -> Any:
    """SessionOptions for a job's session: quiet below ``log_level``, the job's thread share."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = log_level
    threads = job_threads()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def cpu_session(model: bytes | str, optimized: bool = True, level: str = "all") -> Any:
    """A quiet CPU session (telemetry is off in every EdgeStudio process).

    ``optimized=False`` skips graph optimizations: whether a model runs on some inputs does
    not depend on them, and they are most of a session's start-up on big graphs (2.7 s vs 0.9 s
    at 20k nodes). ``level="extended"`` stops before the last level (layout transforms).
    """
    import onnxruntime as ort

    options = job_session_options(4)  # failed tries are expected; we report their errors
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    elif level == "extended":
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
