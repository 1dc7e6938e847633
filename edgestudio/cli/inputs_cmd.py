"""``edgestudio inputs MODEL``: the input specification every job feeds the model with."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import add_input_args, execute_job, input_fields
from edgestudio.core.input_spec import InputSpecification
from edgestudio.core.recipes import InputsRecipe


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``inputs`` subcommand."""
    p = subparsers.add_parser(
        "inputs", help="show the inputs jobs feed the model (derived, tried until it runs)",
        description="Derive each input's dtype, shape and values from the graph (batch 1, "
        "fixed dims kept, ids below their embedding's size, masks ones, recurrent state zeros), "
        "try candidate sizes until the model runs, and print the result. Calibration with "
        "synthetic data, the conversion check, bench and profile all use it; override parts "
        "with --shape/--range on any of them.")
    p.add_argument("model", help="the .onnx model")
    add_input_args(p, data=True)
    p.add_argument("--json", metavar="REPORT", help="also write the specification as JSON")
    p.add_argument("--timeout", type=float, metavar="S", help="stop the job after S seconds")
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> InputsRecipe:
    """The recipe the parsed arguments describe."""
    return InputsRecipe(model=args.model, **input_fields(args))


def run(args: argparse.Namespace) -> int:
    """Find the specification and print it, one input a line."""
    code, job = execute_job(recipe_from_args(args), args, show_report=False)
    if job is not None and job.report is not None:
        spec = InputSpecification.from_dict(job.report.details["spec"])
        print(f"The model runs on these inputs ({spec.note}):")
        width = max((len(e.name) for e in spec.inputs), default=4)
        print(f"  {'input':<{width}}  {'dtype':<8} {'shape':<16} {'declared':<22} values")
        for e in spec.inputs:
            print(f"  {e.name:<{width}}  {e.dtype:<8} {e.shape_text():<16} "
                  f"{e.declared_text():<22} {e.domain.text()}"
                  + (f"  ({e.reason})" if e.reason else ""))
    return code
