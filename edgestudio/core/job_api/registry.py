"""Every recipe kind by name, and recipes rebuilt from JSON (in the worker, from workspaces).

The one module that knows every recipe module; they do not import it, so there is no cycle.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from edgestudio.core.convert.convert_recipes import ConvertRecipe, DimChange
from edgestudio.core.convert.export_recipes import ExportRecipe, TorchInput
from edgestudio.core.inputs.data_source import data_source_from_dict
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.recipe import Recipe, Tolerance
from edgestudio.core.model.tensor_shapes import ShapesRecipe
from edgestudio.core.perf.bench_recipes import (
    BenchRecipe,
    DeviceCheckRecipe,
    ProbeRecipe,
    ProfileRecipe,
)
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.selftest.diagnostic_recipe import DiagnosticRecipe

RECIPE_TYPES: dict[str, type[Recipe]] = {cls.kind: cls for cls in (
    ConvertRecipe, ExportRecipe, DiagnosticRecipe, ShapesRecipe, InputsRecipe, QuantRecipe,
    AnalyzeRecipe, BenchRecipe, ProfileRecipe, ProbeRecipe, DeviceCheckRecipe)}

# Field name -> how to rebuild it from JSON.
FIELD_CONVERTERS: dict[str, Any] = {"calib": data_source_from_dict, "data": data_source_from_dict}


def recipe_from_dict(data: dict[str, Any]) -> Recipe:
    """Rebuild a recipe from :meth:`Recipe.to_dict` output."""
    data = dict(data)
    cls = RECIPE_TYPES[data.pop("kind")]
    for key, convert in FIELD_CONVERTERS.items():
        if key in data and data[key] is not None:
            data[key] = convert(data[key])
    for f in dataclasses.fields(cls):
        if f.name in data and isinstance(data[f.name], list) and isinstance(f.default, tuple):
            data[f.name] = tuple(data[f.name])
    if "tolerance" in data and isinstance(data["tolerance"], dict):
        data["tolerance"] = Tolerance(**data["tolerance"])
    for key in ("dims", "dynamic"):
        if key in data:
            data[key] = tuple(DimChange(**d) for d in data[key])
    if "inputs" in data and cls is ExportRecipe:
        data["inputs"] = tuple(
            TorchInput(i["name"], tuple(i["shape"]), i.get("dtype", "float32"))
            for i in data["inputs"]
        )
    if "output_names" in data:
        data["output_names"] = tuple(data["output_names"])
    return cls(**data)
