"""The conversion job: opset (onnx.version_converter) and input/output dims, then the check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.conversion_plan import (
    apply_dim_changes,
    io_dims,
    plan_dim_changes,
    plan_opset_conversion,
)
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.external_data import check_external_data
from edgestudio.core.model_io import load_model
from edgestudio.core.ops.validate import Feeds, check_against, ort_session, session_runner
from edgestudio.core.progress import Reporter
from edgestudio.core.recipes import ConvertRecipe, Recipe
from edgestudio.core.reports import JobReport

INLINE_LIMIT = 1_800_000_000  # above this the result keeps its weights in external data


class ConversionError(EdgeStudioError):
    """The conversion itself failed (the message says which step and why)."""


def load_full_model(path: Path) -> onnx.ModelProto:
    """Parse ``path`` and load its external weights after our policy has approved every file."""
    model = load_model(path)
    check_external_data(model, path.parent)
    onnx.external_data_helper.load_external_data_for_model(model, str(path.parent))
    return model


def save_model(model: onnx.ModelProto, folder: Path, name: str) -> list[str]:
    """Save into ``folder``; returns the file names written (the model first)."""
    if model.ByteSize() < INLINE_LIMIT:
        onnx.save(model, str(folder / name))
        return [name]
    data_name = f"{name}.data"
    onnx.save(model, str(folder / name), save_as_external_data=True,
              all_tensors_to_one_file=True, location=data_name)
    return [name, data_name]


def size_sets_for(dims: dict[str, list[int | str | None]]) -> list[dict[str, int]]:
    """Two sizes (1 and 3) for every symbolic dim, so dynamic axes are really exercised."""
    symbols = sorted({d for shape in dims.values() for d in shape if isinstance(d, str)})
    if not symbols:
        return [{}]
    return [dict.fromkeys(symbols, 1), dict.fromkeys(symbols, 3)]


def run_convert(recipe: Recipe, reporter: Reporter, staging: Path) -> JobReport:
    """Convert ``recipe.model`` as asked, write it to ``staging`` and check it."""
    assert isinstance(recipe, ConvertRecipe)
    source = Path(recipe.model)
    reporter.stage("Reading the model", 0.0)
    model = load_full_model(source)
    report = JobReport(kind=recipe.kind)

    if recipe.opset is not None:
        plan = plan_opset_conversion(model, recipe.opset)
        if not plan.ok:
            raise ConversionError(" ".join(plan.blockers))
        for w in plan.warnings:
            reporter.warn(w)
            report.warnings.append(w)
        reporter.stage(f"Converting to opset {recipe.opset}", 0.1)
        try:
            model = onnx.version_converter.convert_version(model, recipe.opset)
        except Exception as exc:
            raise ConversionError(
                f"onnx's version converter could not convert to opset {recipe.opset}: {exc}"
            ) from exc
    if recipe.dims:
        plan = plan_dim_changes(model, list(recipe.dims))
        if not plan.ok:
            raise ConversionError(" ".join(plan.blockers))
        for w in plan.warnings:
            reporter.warn(w)
            report.warnings.append(w)
        reporter.stage("Changing input/output dims", 0.3)
        apply_dim_changes(model, list(recipe.dims))

    reporter.stage("Inferring shapes", 0.4)
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as exc:
        reporter.warn(f"Shape inference failed on the result ({exc}); shapes left as they were.")
    reporter.check_cancelled()
    name = Path(recipe.output or source.name).name
    reporter.stage("Writing the result", 0.5)
    report.files = save_model(model, staging, name)

    reporter.stage("Checking against the original", 0.6)
    original = ort_session(source)
    original_dims = {i.name: list(i.shape) for i in original.get_inputs()}  # type: ignore[attr-defined]

    def accepts(feeds: Feeds) -> bool:
        return all(
            name in feeds and _fits(feeds[name], shape) for name, shape in original_dims.items()
        )

    sizes = size_sets_for(io_dims(model))
    fixed_before = _sizes_fixed_in_original(io_dims(model), original_dims)
    if fixed_before:  # compare numerically at the sizes the original was fixed to, too
        sizes.insert(0, {**sizes[0], **fixed_before})
    check = check_against(
        staging / name, session_runner(original), sizes,
        recipe.tolerance.atol, recipe.tolerance.rtol, accepts,
    )
    report.check = check
    report.details = {
        "source": str(source),
        "opset": recipe.opset,
        "dims": {k: v for k, v in io_dims(model).items()},
    }
    reporter.stage(f"Done: {check.verdict()}", 1.0)
    return report


def _sizes_fixed_in_original(
    new_dims: dict[str, list[int | str | None]], original: dict[str, list[object]]
) -> dict[str, int]:
    """Symbols of the result whose axis had a fixed size in the original inputs."""
    fixed: dict[str, int] = {}
    for name, shape in new_dims.items():
        for axis, dim in enumerate(shape):
            old = original.get(name, [])
            if isinstance(dim, str) and axis < len(old) and isinstance(old[axis], int):
                fixed[dim] = int(old[axis])  # type: ignore[call-overload]
    return fixed


def _fits(array: np.ndarray, shape: list[object]) -> bool:
    return array.ndim == len(shape) and all(
        not isinstance(d, int) or d <= 0 or d == n for d, n in zip(shape, array.shape, strict=True)
    )
