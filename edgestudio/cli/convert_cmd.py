"""``edgestudio convert``: change a model's opset and/or make axes dynamic or static."""

from __future__ import annotations

import argparse
import functools

from edgestudio.cli.job_ui import (
    add_common_job_args,
    add_input_args,
    execute,
    input_fields,
)
from edgestudio.core.convert.convert_grammar import parse_axis_change, parse_static
from edgestudio.core.convert.convert_recipes import ConvertRecipe
from edgestudio.core.job_api.arguments import add_spelled
from edgestudio.core.job_api.options import add_options, argument_type, values_from_args
from edgestudio.core.job_api.recipe import Tolerance


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``convert`` subcommand."""
    p = subparsers.add_parser(
        "convert",
        help="change opset and/or dynamic/static axes, checked against the original",
        description="Convert a model's opset (onnx.version_converter) and/or its input/output "
        "dims, then check the result: onnx checker, an onnxruntime session, and np.allclose "
        "against the original on the same inputs (the model's input specification, then a "
        "batch of 3 and twice every dim made dynamic). Exit 0: equivalent; 1: not "
        "equivalent; 4: converted, but the check could not run (it says why).",
    )
    add_spelled(p, ConvertRecipe)  # the model and the opset
    p.add_argument(
        "--dynamic",
        action="append",
        default=[],
        metavar="NAME:AXIS=SYMBOL",
        type=argument_type(functools.partial(parse_axis_change, symbolic=True)),
        help="make an axis symbolic, e.g. image:0=batch (repeatable)",
    )
    p.add_argument(
        "--static",
        action="append",
        default=[],
        metavar="NAME=DIMxDIM",
        type=argument_type(parse_static),
        help="fix a whole shape (image=1x3x224x224) or one axis (image:0=1) (repeatable)",
    )
    add_common_job_args(p)
    add_options(p, ConvertRecipe)
    add_input_args(p, data=True)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> ConvertRecipe:
    """The recipe the parsed arguments describe."""
    dims = [*args.dynamic, *(d for group in args.static for d in group)]
    declared = values_from_args(args, ConvertRecipe)
    if args.opset is None and not dims and not any(declared.values()):
        raise SystemExit(
            "edgestudio convert: nothing to do: give --opset, --dynamic, --static, "
            "--float32 or --fix-output-shapes"
        )
    return ConvertRecipe(
        model=args.model,
        output=args.output,
        overwrite=args.overwrite,
        opset=args.opset,
        dims=tuple(dims),
        tolerance=Tolerance(args.atol, args.rtol),
        **input_fields(args),
        **declared,
    )


def run(args: argparse.Namespace) -> int:
    """Build the recipe from the arguments and run it."""
    return execute(recipe_from_args(args), args)
