"""Which operation runs each recipe kind. Resolved lazily: operations import native code."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from edgestudio.core.progress import Reporter
from edgestudio.core.recipes import Recipe
from edgestudio.core.reports import JobReport

Operation = Callable[[Recipe, Reporter, Path], JobReport]

OPERATIONS: dict[str, str] = {
    "convert": "edgestudio.core.ops.convert:run_convert",
    "export": "edgestudio.core.ops.export_torch:run_export",
    "selftest": "edgestudio.core.ops.diagnostics:run_diagnostic",
    "shapes": "edgestudio.core.ops.infer_shapes:run_infer_shapes",
    "quantize": "edgestudio.core.ops.quantize:run_quantize",
    "analyze": "edgestudio.core.ops.analyze:run_analyze",
    "bench": "edgestudio.core.ops.bench:run_bench",
    "profile": "edgestudio.core.ops.profile:run_profile",
    "providers": "edgestudio.core.ops.bench:run_probe",
    "inputs": "edgestudio.core.ops.input_probe:run_inputs",
    "device_check": "edgestudio.core.ops.profile:run_device_check",
}


def resolve_operation(kind: str) -> Operation:
    """Import and return the operation function for ``kind``."""
    module_name, func_name = OPERATIONS[kind].split(":")
    func: Operation = getattr(importlib.import_module(module_name), func_name)
    return func
