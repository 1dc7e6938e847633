"""``edgestudio quantize``: every onnxruntime quantization mode from the command line."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import (
    add_data_args,
    add_input_args,
    add_output_args,
    add_timeout_arg,
    data_source,
    execute,
    input_fields,
)
from edgestudio.cli.json_option import add_json_option
from edgestudio.cli.workspace_option import add_workspace_option
from edgestudio.core.job_api.arguments import add_spelled
from edgestudio.core.job_api.options import add_options, values_from_args
from edgestudio.core.quant.quant_recipes import QuantRecipe


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``quantize`` subcommand (its options come from QuantRecipe's fields)."""
    p = subparsers.add_parser(
        "quantize",
        help="quantize a model (dynamic, QDQ, QOperator, fp16, int4)",
        description="Quantize with onnxruntime.quantization. ORT's rules are checked first; "
        "calibration data is validated before anything is written.",
    )
    add_spelled(p, QuantRecipe)  # the model
    add_output_args(p, "where to write the quantized model")
    add_options(p, QuantRecipe)
    add_data_args(
        p,
        "--calib",
        "calibration data: .npz, a folder of .npy/.npz/test_data_set_*, "
        "a folder of images, or synthetic[:N[:SEED]] (drawn from the input "
        "specification)",
    )
    add_input_args(p)
    add_json_option(p, "the report")
    add_workspace_option(p)
    add_timeout_arg(p)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> QuantRecipe:
    """The recipe the parsed arguments describe."""
    return QuantRecipe(
        model=args.model,
        output=args.output,
        overwrite=args.overwrite,
        calib=data_source(args, args.calib) if args.calib else None,
        **input_fields(args, with_data=False),
        **values_from_args(args, QuantRecipe),
    )


def run(args: argparse.Namespace) -> int:
    """Build the recipe and run it."""
    return execute(recipe_from_args(args), args)
