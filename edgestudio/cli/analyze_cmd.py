"""``edgestudio analyze FLOAT QUANT --data PATH``: per-layer and whole-model error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from edgestudio.cli.job_ui import (
    add_data_args,
    add_input_args,
    add_timeout_arg,
    add_tolerance_args,
    data_source,
    execute_job,
    input_fields,
)
from edgestudio.cli.json_option import add_json_option
from edgestudio.cli.output import print_table
from edgestudio.cli.workspace_option import add_workspace_option
from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.options import add_options, values_from_args
from edgestudio.core.job_api.recipe import Tolerance
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.quant_runs import write_layers_csv


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``analyze`` subcommand."""
    p = subparsers.add_parser(
        "analyze",
        help="per-layer and whole-model error of a quantized model",
        description="Run the float and quantized models on the same samples and report, per "
        "activation, SQNR (dB), MSE, max abs error and cosine similarity (the same SQNR as "
        "onnxruntime's qdq_loss_debug), per weight the same plus scale error bounds, and per "
        "output allclose/SQNR/cosine and top-1 accuracy when the data has 'labels'.",
    )
    add_spelled(p, AnalyzeRecipe)
    add_data_args(
        p,
        "--data",
        "evaluation data (as --calib of quantize); a verdict is given "
        "only on real data, synthetic:N runs a pipeline check",
        required=True,
    )
    add_options(p, AnalyzeRecipe)
    add_input_args(p)
    add_tolerance_args(p, AnalyzeRecipe().tolerance, "the outputs' allclose")
    p.add_argument("--top", type=int, default=15, help="print the N worst layers (default 15)")
    add_json_option(p, "the full report")
    add_workspace_option(p)
    p.add_argument("--csv", metavar="TABLE", help="write the per-layer table as CSV")
    add_timeout_arg(p)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_analysis(analysis: Analysis, top: int) -> None:
    """The worst layers, the outputs and the accuracy as text tables."""
    layers = analysis.layers_worst_first()
    there = any(r.sqnr_db_target is not None for r in layers)  # measured on the target too
    print_table(
        ["SQNR dB"]
        + (["on target dB"] if there else [])
        + ["MSE", "max abs", "cosine", "tensor", "node"],
        [
            [r.sqnr_text()]
            + ([_fmt(r.sqnr_db_target, ".2f")] if there else [])
            + [
                _fmt(r.mse, ".3g"),
                _fmt(r.max_abs, ".3g"),
                _fmt(r.cosine, ".5f"),
                r.tensor,
                r.node,
            ]
            for r in layers[:top]
        ],
        title=f"{len(layers)} activations compared on {analysis.samples} samples; "
        f"the {min(top, len(layers))} worst",
        numeric=(0, 1, 2, 3, 4) if there else (0, 1, 2, 3),
    )
    diverging = analysis.target_divergence()
    if diverging:
        print(diverging)
    print_table(
        ["output", "SQNR dB", "simulated dB", "max abs", "max rel", "cosine", "allclose"],
        [
            [
                o.output,
                o.sqnr_text(),
                _fmt(o.sqnr_db_simulated, ".2f"),
                _fmt(o.max_abs, ".3g"),
                _fmt(o.max_rel, ".3g"),
                _fmt(o.cosine, ".5f"),
                f"{'yes' if o.allclose else 'NO'} (atol={o.atol:g}, rtol={o.rtol:g})",
            ]
            for o in analysis.outputs
        ],
        numeric=(1, 2, 3, 4, 5),
    )
    # every output judged by its task (the verdict's is the worst), else the one
    for task in analysis.tasks or ([analysis.task] if analysis.task is not None else []):
        print_table(
            ["figure", "value", "grading"],
            [[f.label, f.text(), f.bounds_text()] for f in task.figures],
            title=f"task: {task.label} on output '{task.output}', {task.samples} samples "
            f"({'chosen by you' if task.chosen_by == 'you' else 'detected'})",
        )
        unsure = (
            [
                "unsure: "
                + " or ".join(f"--metric {a}" for a in task.alternatives)
                + f" may fit better ({task.why})"
            ]
            if task.alternatives
            else []
        )
        # a note the verdict's "why" repeats (a one-sided sample) is said once, there
        why = analysis.verdict.why if analysis.verdict is not None else ""
        lines = ([task.note] if task.note and task.note not in why else []) + unsure
        for line in lines + [f"differs: {e}" for e in task.examples]:
            print(f"  {line}")
    if analysis.verdict:
        print("\n".join(analysis.verdict.text_lines()))
        if analysis.verdict.level is None and not analysis.representative:
            print(
                "  for a verdict: --data PATH with real samples (an .npz, images, .wav files, "
                "a .txt of sentences, test_data_set_* folders)"
            )


def recipe_from_args(args: argparse.Namespace) -> AnalyzeRecipe:
    """The recipe the parsed arguments describe."""
    return AnalyzeRecipe(
        **spelled_values(args, AnalyzeRecipe),
        data=data_source(args, args.data),
        tolerance=Tolerance(args.atol, args.rtol),
        **values_from_args(args, AnalyzeRecipe),
        **input_fields(args, with_data=False),
    )


def run(args: argparse.Namespace) -> int:
    """Run the analysis job, print the summary, write JSON/CSV if asked."""
    recipe = recipe_from_args(args)
    code, job = execute_job(recipe, args, show_report=False)
    if job is not None and job.report is not None:
        analysis = job.report.result
        print_analysis(analysis, args.top)
        if args.csv:
            write_layers_csv(Path(args.csv), analysis.layers)
            print(f"per-layer table written to {args.csv}", file=sys.stderr)
    return code
