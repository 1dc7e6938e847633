"""Every job kind in one table: its recipe type, the operation a worker runs it with, and the
subcommand that submits it from a shell.

A new kind is its feature folder (recipe and operation) and one line here; the worker, the
tuner, workspaces (recipes read back from JSON) and the tests derive from this table.
Operations are named, not imported: they load native runtimes, which only a worker may.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestudio.core.convert.convert_recipes import ConvertRecipe
from edgestudio.core.convert.export_recipes import ExportRecipe
from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.core.edit.edit_recipe import EditRecipe
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.cost_recipe import CostRecipe
from edgestudio.core.model.tensor_shapes import ShapesRecipe
from edgestudio.core.perf.bench_recipes import (
    BenchRecipe,
    DeviceCheckRecipe,
    ProbeRecipe,
    ProfileRecipe,
)
from edgestudio.core.progress import Reporter
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.sensitivity import SensitivityRecipe
from edgestudio.core.serialise import from_json
from edgestudio.core.targets.target_recipe import TargetCheckRecipe, TargetCompileRecipe

# An operation takes its own recipe type (the worker rebuilds it from the kind, so the type
# holds by construction), reports progress and writes into a staging folder.
Operation = Callable[[Any, Reporter, Path], JobReport[Any]]


@dataclass(frozen=True)
class JobKind:
    """One kind of job: ``operation`` is ``"module:function"``; ``command`` the subcommand
    that submits it ('': only the window does)."""

    recipe: type[Recipe[Any]]
    operation: str
    command: str

    def resolve(self) -> Operation:
        """Import and return the operation (in a worker)."""
        module, function = self.operation.split(":")
        found: Operation = getattr(importlib.import_module(module), function)
        return found


_CORE = "edgestudio.core"
KINDS: dict[str, JobKind] = {
    kind.recipe.kind: kind
    for kind in (
        JobKind(ConvertRecipe, f"{_CORE}.convert.convert:run_convert", "convert"),
        JobKind(ExportRecipe, f"{_CORE}.convert.export_torch:run_export", "export"),
        JobKind(DiagnosticRecipe, f"{_CORE}.diagnostics.diagnostics:run_diagnostic", "diagnostic"),
        JobKind(ShapesRecipe, f"{_CORE}.model.infer_shapes:run_infer_shapes", ""),
        JobKind(CostRecipe, f"{_CORE}.perf.cost_job:run_cost", ""),
        JobKind(EditRecipe, f"{_CORE}.edit.edit_job:run_edit", "edit"),
        JobKind(InputsRecipe, f"{_CORE}.inputs.input_probe:run_inputs", "inputs"),
        JobKind(QuantRecipe, f"{_CORE}.quant.quantize:run_quantize", "quantize"),
        JobKind(AnalyzeRecipe, f"{_CORE}.quant.analyze:run_analyze", "analyze"),
        JobKind(SensitivityRecipe, f"{_CORE}.quant.sensitivity:run_sensitivity", "sensitivity"),
        JobKind(BenchRecipe, f"{_CORE}.perf.bench:run_bench", "bench"),
        JobKind(ProfileRecipe, f"{_CORE}.perf.profile:run_profile", "profile"),
        JobKind(ProbeRecipe, f"{_CORE}.perf.bench:run_probe", "providers"),
        JobKind(DeviceCheckRecipe, f"{_CORE}.perf.profile:run_device_check", "device"),
        JobKind(TargetCheckRecipe, f"{_CORE}.targets.target_check:run_target_check", "target"),
        JobKind(TargetCompileRecipe, f"{_CORE}.targets.target_check:run_target_compile", "target"),
    )
}


def resolve_operation(kind: str) -> Operation:
    """Import and return the operation that runs jobs of ``kind``."""
    return KINDS[kind].resolve()


def recipe_from_dict(data: dict[str, Any]) -> Recipe[Any]:
    """Rebuild a recipe from its JSON (:func:`~edgestudio.core.serialise.to_json` output),
    whose ``kind`` names its class."""
    return from_json(KINDS[data["kind"]].recipe, data)
