"""Every recipe kind by name, and recipes rebuilt from JSON (in the worker, from workspaces).

The one module that knows every recipe module; they do not import it, so there is no cycle.
"""

from __future__ import annotations

from typing import Any

from edgestudio.core.convert.convert_recipes import ConvertRecipe
from edgestudio.core.convert.export_recipes import ExportRecipe
from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.core.edit.edit_recipe import EditRecipe
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.model.cost_recipe import CostRecipe
from edgestudio.core.model.tensor_shapes import ShapesRecipe
from edgestudio.core.perf.bench_recipes import (
    BenchRecipe,
    DeviceCheckRecipe,
    ProbeRecipe,
    ProfileRecipe,
)
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.sensitivity import SensitivityRecipe
from edgestudio.core.serialise import from_json
from edgestudio.core.targets.target_recipe import TargetCheckRecipe, TargetCompileRecipe

RECIPE_TYPES: dict[str, type[Recipe]] = {
    cls.kind: cls
    for cls in (
        ConvertRecipe,
        ExportRecipe,
        DiagnosticRecipe,
        ShapesRecipe,
        InputsRecipe,
        QuantRecipe,
        AnalyzeRecipe,
        BenchRecipe,
        ProfileRecipe,
        ProbeRecipe,
        DeviceCheckRecipe,
        SensitivityRecipe,
        CostRecipe,
        EditRecipe,
        TargetCheckRecipe,
        TargetCompileRecipe,
    )
}


def recipe_from_dict(data: dict[str, Any]) -> Recipe:
    """Rebuild a recipe from its JSON (:func:`~edgestudio.core.serialise.to_json` output),
    whose ``kind`` names its class."""
    return from_json(RECIPE_TYPES[data["kind"]], data)
