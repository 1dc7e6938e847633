"""``edgestudio inputs MODEL``: the input specification every job feeds the model with."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import add_input_args, add_timeout_arg, execute_job, input_fields
from edgestudio.cli.json_option import add_json_option
from edgestudio.cli.output import print_table
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.arguments import add_spelled


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``inputs`` subcommand."""
    p = subparsers.add_parser(
        "inputs",
        help="show the inputs jobs feed the model (derived, tried until it runs)",
        description="Derive each input's dtype, shape and values from the graph (batch 1, "
        "fixed dims kept, ids below their embedding's size, masks ones, recurrent state zeros), "
        "try candidate sizes until the model runs, and print the result. Calibration with "
        "synthetic data, the conversion check, bench and profile all use it; override parts "
        "with --shape/--range on any of them.",
    )
    add_spelled(p, InputsRecipe)
    add_input_args(p, data=True)
    add_json_option(p, "the specification")
    add_timeout_arg(p)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> InputsRecipe:
    """The recipe the parsed arguments describe."""
    return InputsRecipe(model=args.model, **input_fields(args))


def run(args: argparse.Namespace) -> int:
    """Find the specification and print it, one input a line."""
    code, job = execute_job(recipe_from_args(args), args, show_report=False)
    if job is not None and job.report is not None:
        spec = job.report.result
        print_table(
            ["input", "dtype", "shape", "declared", "values", "why"],
            [
                [e.name, e.dtype, e.shape_text(), e.declared_text(), e.domain.text(), e.reason]
                for e in spec.inputs
            ],
            title=f"The model runs on these inputs ({spec.note}):",
        )
    return code
