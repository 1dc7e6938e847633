"""The cost job: a model's MACs, parameters and memory at the sizes of its inputs (found, or
given), with what onnx's shape inference cannot tell measured by running the model once."""

from __future__ import annotations

from pathlib import Path

from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.cost import (
    computed_trip_counts,
    inferred_shapes,
    measured_shapes,
    measured_trips,
    model_cost,
    unknown_tensors,
)
from edgestudio.core.model.cost_recipe import CostRecipe, ModelCost
from edgestudio.core.model.model_files import load_structure
from edgestudio.core.progress import Reporter


def run_cost(recipe: CostRecipe, reporter: Reporter, staging: Path) -> JobReport[ModelCost]:
    """The cost job: the input specification, then :func:`model_cost` at its sizes."""
    reporter.stage("Reading the model", 0.0)
    model = load_structure(Path(recipe.model))
    reporter.stage("Finding the input sizes", 0.1)
    spec = job_inputs(
        Path(recipe.model), model, recipe.shapes, recipe.ranges, reporter=reporter
    ).spec
    sizes = {e.name: list(e.shape) for e in spec.inputs}
    reporter.stage("Inferring shapes", 0.4)
    unknown = unknown_tensors(model, inferred_shapes(model, sizes)[0])
    measured = None
    if unknown:
        reporter.stage(
            f"Running the model once for {len(unknown)} shape(s) inference cannot tell", 0.5
        )
        measured = measured_shapes(Path(recipe.model), unknown, spec.feeds())
    loops = computed_trip_counts(model)
    trips = measured_trips(Path(recipe.model), loops, spec.feeds()) if loops else {}
    reporter.stage("Counting", 0.8)
    cost = model_cost(model, sizes, measured, trips)
    for node in cost.bodies:
        if not node.body.startswith("body ×") and node.body != "the larger branch":
            reporter.warn(f"'{node.node}' ({node.op}): {node.body}.")
    if cost.unknown:
        reporter.warn(
            f"{len(cost.unknown)} node(s) whose shapes onnx's inference could not "
            f"tell are counted as 0 (e.g. {', '.join(cost.unknown[:3])})."
        )
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, result=cost)
