"""``edgestudio analyze FLOAT QUANT --data PATH``: per-layer and whole-model error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from edgestudio.cli.job_ui import add_data_args, data_source, execute_job
from edgestudio.core.quant_recipes import AnalyzeRecipe
from edgestudio.core.quant_runs import worst_first, write_layers_csv
from edgestudio.core.recipes import Tolerance


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``analyze`` subcommand."""
    p = subparsers.add_parser(
        "analyze", help="per-layer and whole-model error of a quantized model",
        description="Run the float and quantized models on the same samples and report, per "
        "activation, SQNR (dB), MSE, max abs error and cosine similarity (the same SQNR as "
        "onnxruntime's qdq_loss_debug), per weight the same plus scale error bounds, and per "
        "output allclose/SQNR/cosine and top-1 accuracy when the data has 'labels'.",
    )
    p.add_argument("float_model", help="the float original")
    p.add_argument("quant_model", help="its quantized version")
    add_data_args(p, "--data", "evaluation data (as --calib of quantize)", required=True)
    p.add_argument("--atol", type=float, default=1e-2,
                   help="absolute tolerance of the outputs' allclose (default %(default)g)")
    p.add_argument("--rtol", type=float, default=1e-2,
                   help="relative tolerance of the outputs' allclose (default %(default)g)")
    p.add_argument("--top", type=int, default=15, help="print the N worst layers (default 15)")
    p.add_argument("--json", metavar="REPORT", help="write the full report as JSON")
    p.add_argument("--csv", metavar="TABLE", help="write the per-layer table as CSV")
    p.add_argument("--timeout", type=float, metavar="S", help="stop the job after S seconds")
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_analysis(details: dict[str, Any], top: int) -> None:
    """The worst layers, the outputs and the accuracy as text tables."""
    layers = worst_first(details["layers"])
    print(f"{len(layers)} activations compared on {details['samples']} samples; worst first:")
    print(f"  {'SQNR dB':>8} {'MSE':>10} {'max abs':>9} {'cosine':>8}  tensor (node)")
    for r in layers[:top]:
        print(f"  {_fmt(r['sqnr_db'], '8.2f')} {_fmt(r['mse'], '10.3g')} "
              f"{_fmt(r['max_abs'], '9.3g')} {_fmt(r['cosine'], '8.5f')}  {r['tensor']} "
              f"({r['node']})")
    for o in details["outputs"]:
        close = "yes" if o["allclose"] else "NO"
        print(f"output {o['output']}: SQNR {_fmt(o['sqnr_db'], '.2f')} dB as deployed "
              f"({_fmt(o.get('sqnr_db_simulated'), '.2f')} dB in the simulated graph), max abs "
              f"{o['max_abs']:.3g}, max rel {o['max_rel']:.3g}, cosine {_fmt(o['cosine'], '.5f')}, "
              f"allclose(atol={o['atol']:g}, rtol={o['rtol']:g}) {close}")
    acc = details.get("accuracy")
    if acc:
        line = f"top-1 agreement {acc['top1_agreement']:.2%} on {acc['samples']} samples"
        if "float_top1" in acc:
            line += f"; accuracy float {acc['float_top1']:.2%}, quantized {acc['quant_top1']:.2%}"
        print(line)
    verdict = details.get("verdict")
    if verdict:
        print(f"verdict: {verdict['level'].upper()} — " + "; ".join(verdict["reasons"]))
        print(f"  thresholds: {verdict['thresholds']}")
        for tip in verdict["suggestions"]:
            print(f"  try: {tip}")


def recipe_from_args(args: argparse.Namespace) -> AnalyzeRecipe:
    """The recipe the parsed arguments describe."""
    return AnalyzeRecipe(float_model=args.float_model, quant_model=args.quant_model,
                         data=data_source(args, args.data),
                         tolerance=Tolerance(args.atol, args.rtol))


def run(args: argparse.Namespace) -> int:
    """Run the analysis job, print the summary, write JSON/CSV if asked."""
    recipe = recipe_from_args(args)
    code, job = execute_job(recipe, args, show_report=False)
    if job is not None and job.report is not None:
        print_analysis(job.report.details, args.top)
        if args.csv:
            write_layers_csv(Path(args.csv), job.report.details["layers"])
            print(f"per-layer table written to {args.csv}", file=sys.stderr)
    return code
