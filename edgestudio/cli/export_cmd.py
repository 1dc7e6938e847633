"""``edgestudio export``: PyTorch (.pt2 ExportedProgram / .pt TorchScript) to ONNX, checked."""

from __future__ import annotations

import argparse
import functools

from edgestudio.cli.job_ui import add_common_job_args, execute
from edgestudio.core.convert.convert_grammar import parse_axis_change, parse_torch_input
from edgestudio.core.convert.export_recipes import ExportRecipe
from edgestudio.core.job_api.arguments import add_spelled
from edgestudio.core.job_api.options import add_options, argument_type, values_from_args
from edgestudio.core.job_api.recipe import Tolerance


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``export`` subcommand."""
    p = subparsers.add_parser(
        "export",
        help="export a PyTorch model to ONNX, checked against PyTorch",
        description="Export a PyTorch ExportedProgram (.pt2) or TorchScript (.pt) file to ONNX, "
        "then compare onnxruntime's outputs with PyTorch's on the same inputs. PyTorch files "
        "can carry code: they are loaded only in a worker process with weights-only loading "
        "forced. Needs the torch extra (pip install 'edgestudio[torch]').",
    )
    add_spelled(p, ExportRecipe)
    p.add_argument(
        "--input",
        action="append",
        type=argument_type(parse_torch_input),
        required=True,
        metavar="NAME=DIMxDIM[:DTYPE]",
        help="example input (repeatable, in order)",
    )
    p.add_argument(
        "--dynamic",
        action="append",
        default=[],
        metavar="NAME:AXIS=SYMBOL",
        type=argument_type(functools.partial(parse_axis_change, symbolic=True)),
        help="make an axis dynamic, e.g. x:0=batch (repeatable)",
    )
    add_options(p, ExportRecipe)
    add_common_job_args(p)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> ExportRecipe:
    """The recipe the parsed arguments describe."""
    return ExportRecipe(
        model=args.model,
        output=args.output,
        overwrite=args.overwrite,
        inputs=tuple(args.input),
        dynamic=tuple(args.dynamic),
        tolerance=Tolerance(args.atol, args.rtol),
        **values_from_args(args, ExportRecipe),
    )


def run(args: argparse.Namespace) -> int:
    """Build the recipe from the arguments and run it."""
    return execute(recipe_from_args(args), args)
