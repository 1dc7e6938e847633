"""``edgestudio sensitivity MODEL --calib C --data D``: which layers, kept alone in 16-bit (or in
float), give back most of the task figure 8-bit quantization loses, measured on held-out data."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from edgestudio.cli.job_ui import (
    add_calib_args,
    add_data_args,
    add_input_args,
    add_timeout_arg,
    data_source,
    execute_job,
    input_fields,
)
from edgestudio.cli.json_option import add_json_option
from edgestudio.cli.output import print_table
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.options import add_options, values_from_args
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.sensitivity import SensitivityRecipe


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``sensitivity``."""
    p = subparsers.add_parser(
        "sensitivity",
        help="rank layers by what keeping each in 16-bit gives back on the task",
        description="Quantize as the options say (static QDQ), analyse on --data, then try "
        "each candidate layer alone in 16-bit (or in float, --way float) and rank the layers "
        "by how much of the task figure each gives back. Calibration (--calib) and evaluation "
        "(--data) should be different samples.",
    )
    add_spelled(p, QuantRecipe)  # the model
    add_calib_args(p, "calibration data (prepared as --data is)", required=True)
    add_data_args(p, "--data", "evaluation data, held out from calibration", required=True)
    add_options(p, QuantRecipe)
    add_options(p, SensitivityRecipe)
    add_spelled(p, SensitivityRecipe)
    add_input_args(p)
    add_json_option(p, "the ranking")
    add_timeout_arg(p)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> SensitivityRecipe:
    """The recipe the parsed arguments describe."""
    calib = dataclasses.replace(
        data_source(args, args.calib), samples=args.calib_samples or 0, part=""
    )
    base = QuantRecipe(
        model=args.model,
        calib=calib,
        **input_fields(args, with_data=False),
        **values_from_args(args, QuantRecipe),
    )
    recipe = SensitivityRecipe(
        base=base,
        data=data_source(args, args.data),
        **spelled_values(args, SensitivityRecipe),
        **values_from_args(args, SensitivityRecipe),
    )
    if base.mode != "qdq" or (
        recipe.way == "int16" and base.activation_type not in ("uint8", "int8")
    ):
        raise EdgeStudioError(
            "sensitivity starts from an 8-bit static QDQ recipe (--mode qdq, "
            "8-bit activations); --way float also takes QOperator."
        )
    return recipe


def run(args: argparse.Namespace) -> int:
    """Run the ranking and print it."""
    code, job = execute_job(recipe_from_args(args), args, show_report=False)
    if job is None or job.report is None:
        return code
    result = job.report.result

    def fig(value: float | None) -> str:
        return "-" if value is None else f"{value:.4g}"

    second = [f"{result.second_metric} gain"] if result.second_metric else []
    print_table(
        ["#", "layer", "op", "SQNR dB", result.metric, "gain", *second, "note"],
        [
            [
                k + 1,
                r.node,
                r.op_type,
                fig(r.sqnr_db),
                fig(r.value),
                fig(r.gain),
                *([fig(r.second_gain)] if second else []),
                r.error,
            ]
            for k, r in enumerate(result.ranked())
        ],
        title=f"each layer alone in {result.way}; base {result.metric} "
        f"{fig(result.base_value)}{f' {result.unit}' if result.unit in ('points', 'dB') else ''}"
        f" on {result.data}",
        numeric=(0, 3, 4, 5),
    )
    print(result.stability_text(), file=sys.stderr)
    if any(r.gain for r in result.layers):
        best = result.ranked()[0]
        print(f"most sensitive: {best.node} (gain {fig(best.gain)})", file=sys.stderr)
    return code
