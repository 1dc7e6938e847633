"""Which operation runs each recipe kind. Resolved lazily: operations import native code."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.progress import Reporter

Operation = Callable[[Recipe, Reporter, Path], JobReport]

OPERATIONS: dict[str, str] = {
    "convert": "edgestudio.core.convert.convert:run_convert",
    "export": "edgestudio.core.convert.export_torch:run_export",
    "diagnostic": "edgestudio.core.diagnostics.diagnostics:run_diagnostic",
    "shapes": "edgestudio.core.model.infer_shapes:run_infer_shapes",
    "cost": "edgestudio.core.model.cost:run_cost",
    "edit": "edgestudio.core.edit.edit_job:run_edit",
    "quantize": "edgestudio.core.quant.quantize:run_quantize",
    "analyze": "edgestudio.core.quant.analyze:run_analyze",
    "sensitivity": "edgestudio.core.quant.sensitivity:run_sensitivity",
    "bench": "edgestudio.core.perf.bench:run_bench",
    "profile": "edgestudio.core.perf.profile:run_profile",
    "providers": "edgestudio.core.perf.bench:run_probe",
    "inputs": "edgestudio.core.inputs.input_probe:run_inputs",
    "device_check": "edgestudio.core.perf.profile:run_device_check",
    "target-check": "edgestudio.core.targets.target_check:run_target_check",
    "target-compile": "edgestudio.core.targets.target_check:run_target_compile",
}


def resolve_operation(kind: str) -> Operation:
    """Import and return the operation function for ``kind``."""
    module_name, func_name = OPERATIONS[kind].split(":")
    func: Operation = getattr(importlib.import_module(module_name), func_name)
    return func
