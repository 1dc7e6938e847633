"""The conversion job: opset (onnx.version_converter) and input/output dims, then the check."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.convert.ahead_ops import convert_version
from edgestudio.core.convert.batch_constants import free_batch_constants
from edgestudio.core.convert.batch_states import state_batch_changes
from edgestudio.core.convert.conversion_plan import (
    apply_dim_changes,
    io_dims,
    plan_dim_changes,
    plan_opset_conversion,
)
from edgestudio.core.convert.convert_recipes import Conversion, ConvertRecipe
from edgestudio.core.convert.float32 import FLOAT16_TOLERANCE, upcast_float16
from edgestudio.core.convert.output_shapes import declare_produced_shapes, output_shape_mismatches
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.equivalence import check_against
from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.inputs.input_spec import InputSpecError, InputSpecification
from edgestudio.core.job_api.recipe import Tolerance
from edgestudio.core.job_api.report import EquivalenceCheck, JobReport
from edgestudio.core.model.model_files import load_full_model, save_model
from edgestudio.core.model.validate import (
    declared_dims,
    ort_session,
    session_runner,
)
from edgestudio.core.progress import Reporter
from edgestudio.core.serialise import to_json


class ConversionError(EdgeStudioError):
    """The conversion itself failed (the message says which step and why; ``declarations``:
    the model declares its outputs wrongly, a likely cause)."""

    def __init__(self, message: str, declarations: bool = False) -> None:
        super().__init__(message)
        self.declarations = declarations


def run_convert(recipe: ConvertRecipe, reporter: Reporter, staging: Path) -> JobReport[Conversion]:
    """Convert ``recipe.model`` as asked, write it to ``staging`` and check it. A conversion
    that fails where the model declares its outputs wrongly (onnx's converter and shape
    inference trust declarations) is made again with what the model produces declared."""
    try:
        return _convert(recipe, reporter, staging)
    except ConversionError as exc:
        if not exc.declarations or recipe.fix_output_shapes:
            raise
        note = (
            f"{exc} Converted again with the outputs declared as the model produces them "
            "(--fix-output-shapes)."
        )
        reporter.warn(note)
    report = _convert(replace(recipe, fix_output_shapes=True), reporter, staging)
    report.warnings.insert(0, note)
    return report


def _convert(recipe: ConvertRecipe, reporter: Reporter, staging: Path) -> JobReport[Conversion]:
    source = Path(recipe.model)
    reporter.stage("Reading the model", 0.0)
    model = load_full_model(source)
    report: JobReport[Conversion] = JobReport(kind=recipe.kind)
    done = Conversion(source=str(source), opset=recipe.opset)
    # The original's inputs are found first: the conversion below may change the graph in place.
    reporter.stage("Finding inputs the original runs on", 0.05)
    original = ort_session(source)
    spec, why_not = original_spec(source, model, recipe, original, reporter)
    hint = _output_declarations(model, original, spec, recipe, reporter, report)
    tolerance = recipe.tolerance
    if recipe.float32:
        reporter.stage("Upcasting float16 to float32", 0.08)
        upcast = upcast_float16(model)
        if not upcast:
            message = "The model has no float16 weight, constant or cast: nothing was upcast."
        else:
            message = f"Upcast: {upcast.text()}"
            if tolerance == Tolerance():
                tolerance = FLOAT16_TOLERANCE
                message += (
                    f" Checked to float16's precision (atol {tolerance.atol}, rtol "
                    f"{tolerance.rtol}): float32 computes the same graph more precisely."
                )
        if upcast:
            reporter.log(message)
            done.upcast = message
        else:
            reporter.warn(message)
            report.warnings.append(message)

    if recipe.opset is not None:
        plan = plan_opset_conversion(model, recipe.opset)
        if not plan.ok:
            raise ConversionError(" ".join(plan.blockers))
        for w in plan.warnings:
            reporter.warn(w)
            report.warnings.append(w)
        reporter.stage(f"Converting to opset {recipe.opset}", 0.1)
        try:
            model, held = convert_version(model, recipe.opset)
        except Exception as exc:
            raise ConversionError(
                f"onnx's version converter could not convert to opset {recipe.opset}: {exc}" + hint,
                declarations=bool(hint),
            ) from exc
        if held:
            note = (
                f"{', '.join(held)}: used before opset {recipe.opset} defines "
                f"{'it' if len(held) == 1 else 'them'} (onnxruntime's own, as its optimiser "
                "writes them); kept as they were through the conversion."
            )
            reporter.log(note)
            report.warnings.append(note)
    if recipe.dims:
        plan = plan_dim_changes(model, list(recipe.dims))
        if not plan.ok:
            raise ConversionError(" ".join(plan.blockers))
        for w in plan.warnings:
            reporter.warn(w)
            report.warnings.append(w)
        reporter.stage("Changing input/output dims", 0.3)
        before = io_dims(model)
        apply_dim_changes(model, list(recipe.dims))
        freed = _free_batch(model, recipe, before)
        if freed:
            note = (
                "The batch was hard-coded in the graph; freed where the tensor provably "
                "carries the batch (checked below at batch 3): " + "; ".join(freed) + "."
            )
            reporter.log(note)
            done.batch_freed = freed

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
    result_dims = io_dims(model)
    del model  # written: the check opens the file, and a 200 MB model is 1.4 GB parsed
    check = check_against(
        staging / name,
        session_runner(original),
        spec,
        tolerance.atol,
        tolerance.rtol,
        declared_dims(original),
        second_sizes=second_sizes(spec, result_dims, declared_dims(original)) if spec else None,
        unchecked_reason=why_not,
    )
    unusable = result_unusable(check)
    if unusable:
        raise ConversionError(unusable + hint, declarations=bool(hint))
    report.check = check
    done.dims = dict(result_dims)
    done.inputs = to_json(spec) if spec else None
    report.result = done
    reporter.stage(f"Done: {check.verdict()}", 1.0)
    return report


def _free_batch(
    model: onnx.ModelProto, recipe: ConvertRecipe, before: dict[str, list[int | str | None]]
) -> list[str]:
    """What else carries a batch that the recipe made dynamic, freed with it: recurrent states
    (see :mod:`batch_states`), then the shape constants that hard-code the old batch (see
    :mod:`batch_constants`). Returns what was changed, in words."""
    made_dynamic = {
        c: old
        for c in recipe.dims
        if isinstance(c.value, str)
        and c.axis < len(before.get(c.tensor) or [])
        and isinstance(old := before[c.tensor][c.axis], int)
    }
    states = state_batch_changes(model, {str(c.value): old for c, old in made_dynamic.items()})
    asked = {(c.tensor, c.axis) for c in recipe.dims}
    states = [c for c in states if (c.tensor, c.axis) not in asked]
    apply_dim_changes(model, states)
    said = [f"recurrent state '{c.tensor}' axis {c.axis} → {c.value}" for c in states]
    first_axis = {c: old for c, old in made_dynamic.items() if c.axis == 0}
    # none, or inputs whose old batches differ: then nothing is provably the batch
    if len(set(first_axis.values())) == 1:
        old = next(iter(first_axis.values()))
        symbols = {str(c.value) for c in first_axis}
        said += [f.text() for f in free_batch_constants(model, symbols, old)]
    return said


def _output_declarations(
    model: onnx.ModelProto,
    session: Any,
    spec: InputSpecification | None,
    recipe: ConvertRecipe,
    reporter: Reporter,
    report: JobReport[Any],
) -> str:
    """Compare the declared output shapes with what the original produces on its inputs: fix
    them when asked, else warn up front. Returns the hint a conversion error should end with."""
    if spec is None:
        return ""
    names = [o.name for o in session.get_outputs()]
    produced = {n: np.shape(v) for n, v in zip(names, session.run(None, spec.feeds()), strict=True)}
    mismatches = output_shape_mismatches(model, produced)
    if not mismatches:
        return ""
    said = "; ".join(m.text() for m in mismatches)
    if recipe.fix_output_shapes:
        declare_produced_shapes(model, mismatches)
        message = f"Output declarations fixed to what the model produces: {said}."
        reporter.warn(message)
        report.warnings.append(message)
        return ""
    message = (
        f"The model declares its outputs wrongly: {said}. onnxruntime ignores the "
        "declaration, but onnx's converter and shape inference trust it and can fail on "
        "it; --fix-output-shapes (the form's 'Fix wrong output shape declarations') "
        "declares what the model produces."
    )
    reporter.warn(message)
    report.warnings.append(message)
    return (
        f" The likely cause: {said} — the declaration is wrong; --fix-output-shapes "
        "declares what the model produces."
    )


def original_spec(
    source: Path, model: onnx.ModelProto, recipe: ConvertRecipe, session: object, reporter: Reporter
) -> tuple[InputSpecification | None, str]:
    """The original's input specification, or None and why it could not be found."""
    try:
        resolved = job_inputs(
            source, model, recipe.shapes, recipe.ranges, recipe.data, reporter, session=session
        )
    except InputSpecError as exc:
        reporter.warn(f"Could not check the result against the original: {exc}")
        return None, str(exc)
    return resolved.spec, ""


def second_sizes(
    spec: InputSpecification,
    result_dims: dict[str, list[int | str | None]],
    original_dims: dict[str, list[object]],
) -> dict[str, int]:
    """Sizes for the check's second case: batch dims at 3, dims the conversion made dynamic at
    twice their old fixed size, so that every dynamic axis is really exercised."""
    sizes: dict[str, int] = {}
    for name, dims in result_dims.items():
        before = original_dims.get(name)
        if before is None:
            continue  # an output, or an input the original lacks
        for axis, dim in enumerate(dims):
            if not isinstance(dim, str):
                continue
            old = before[axis] if axis < len(before) else None
            if isinstance(old, int) and old > 0:
                sizes.setdefault(dim, 3 if axis == 0 and old == 1 else old * 2)
            elif str(old) in spec.batch_symbols or (axis == 0 and len(dims) >= 2):
                sizes.setdefault(dim, 3)
    return sizes


def result_unusable(check: EquivalenceCheck) -> str:
    """Why a written result cannot be used (it does not load, or does not run where the
    original does); empty when it can."""
    if not check.checker_ok:
        return f"The result is not a valid model: {check.checker_message}"
    if not check.session_ok:
        return f"onnxruntime cannot load the result: {check.session_message}"
    first = check.cases[0] if check.cases else None
    if first is not None and first.error:
        return f"The result does not run on the inputs the original runs on: {first.error}"
    second = check.cases[1] if len(check.cases) > 1 else None
    if second is not None and second.error:
        sizes = second.label.split(" (")[0]
        return (
            f"The result declares dynamic axes but does not run at {sizes}: "
            f"{second.error.removeprefix('the result does not run on these inputs: ')}. "
            "Something in the graph fixes that size; keep the axis static (or fix the "
            "model where the error points)."
        )
    return ""
