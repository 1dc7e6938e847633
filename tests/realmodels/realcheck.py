"""``make realcheck``: the whole workflow on every model of the real-model corpus, as a matrix.

For each cached model: inspect → convert (new opset, dynamic batch) → quantize (dynamic, QDQ,
QDQ per-channel, fp16) → analyze the QDQ result → bench → profile, each through the same job
runner the GUI and CLI use. Every written model is then loaded and run here, independently of
the job's own checks. A cell reads:

- ``ok``: the job succeeded and its output (if any) loads and runs;
- ``unchecked``: a conversion whose equivalence check could not run (it says why);
- ``refused``: the job declined with a reason (printed below the matrix);
- ``broken``: the job called a result good that is not (it does not load or run, or is not
  equivalent), or an analysis on synthetic data gave a verdict;
- ``crashed``: the worker died or the job timed out.

Usage: ``python -m tests.realmodels.realcheck [--only NAME ...] [--markdown FILE]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx

from edgestudio.core.convert.convert_recipes import ConvertRecipe, DimChange
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.model.summary import summarize_file
from edgestudio.core.perf.bench_recipes import BenchRecipe, ProfileRecipe
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import run_job
from tests.realmodels.corpus import SKIP_REASON, RealModel, available

STEPS = ("inspect", "convert", "dynamic", "qdq", "qdq-pc", "fp16", "analyze", "bench", "profile")
JOB_TIMEOUT = 900.0


@dataclass
class Cell:
    """One model × step outcome."""

    state: str
    reason: str = ""
    seconds: float = 0.0


def _runs(path: Path) -> str:
    """Load and run ``path`` on its own derived inputs here; empty when it works."""
    from edgestudio.core.inputs.input_probe import resolve_inputs

    try:
        resolve_inputs(path, use_cache=False)
    except Exception as exc:  # any failure to load or run is what we look for
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return ""


def _job(recipe: Recipe, written: Path | None = None) -> Cell:
    return _cell(recipe, written)[0]


def _cell(recipe: Recipe, written: Path | None = None) -> tuple[Cell, Job]:
    """Run ``recipe`` and judge it (the job too, for callers that read its report)."""
    start = time.perf_counter()
    job = run_job(recipe, timeout=JOB_TIMEOUT)
    cell = _judge(job, written)
    cell.seconds = time.perf_counter() - start
    return cell, job


def _judge(job: Job, written: Path | None) -> Cell:
    """The cell for a finished job (its seconds are filled in by the caller)."""
    if job.state in (JobState.CRASHED, JobState.TIMED_OUT):
        return Cell("crashed", f"{job.state.value}: {job.error}")
    if job.state is not JobState.SUCCEEDED or job.report is None:
        return Cell("refused", str(job.error))
    outcome = job.report.outcome
    if outcome == "failed":
        check = job.report.check
        return Cell("broken", check.verdict() if check else "check failed")
    if written is not None:
        problem = _runs(written)
        if problem:
            return Cell("broken", f"written model does not run: {problem}")
    if outcome == "unchecked" and job.report.check is not None:
        return Cell("unchecked", job.report.check.unchecked_reason())
    return Cell("ok", "")


def convert_recipe(model: RealModel, out: Path) -> ConvertRecipe:
    """A newer opset and a dynamic batch on every input/output with a fixed first dim."""
    proto = onnx.load(str(model.path), load_external_data=False)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 13)
    target = 17 if opset < 17 else min(opset + 1, 21)
    inits = {t.name for t in proto.graph.initializer}
    dims = []
    for value in [*proto.graph.input, *proto.graph.output]:
        shape = value.type.tensor_type.shape.dim
        if value.name not in inits and len(shape) >= 2 and shape[0].dim_value == 1:
            dims.append(DimChange(value.name, 0, "batch"))
    return ConvertRecipe(model=str(model.path), output=str(out), opset=target, dims=tuple(dims))


def check_model(model: RealModel, work: Path, report: Callable[[str], None]) -> dict[str, Cell]:
    """Run every step on ``model``; later steps that need an earlier output say so."""
    cells: dict[str, Cell] = {}
    start = time.perf_counter()
    try:
        summarize_file(model.path)
        cells["inspect"] = Cell("ok", "", time.perf_counter() - start)
    except EdgeStudioError as exc:
        cells["inspect"] = Cell("refused", str(exc))
    calib = DataSource("synthetic", samples=8, seed=0)
    out = {step: work / f"{model.name}_{step}.onnx" for step in STEPS}
    cells["convert"] = _job(convert_recipe(model, out["convert"]), out["convert"])
    quant = {
        "dynamic": QuantRecipe(model=str(model.path), output=str(out["dynamic"]), mode="dynamic"),
        "qdq": QuantRecipe(model=str(model.path), output=str(out["qdq"]), mode="qdq", calib=calib),
        "qdq-pc": QuantRecipe(
            model=str(model.path),
            output=str(out["qdq-pc"]),
            mode="qdq",
            per_channel=True,
            calib=calib,
        ),
        "fp16": QuantRecipe(model=str(model.path), output=str(out["fp16"]), mode="fp16"),
    }
    for step, recipe in quant.items():
        cells[step] = _job(recipe, out[step])
        report(f"  {step}: {cells[step].state} {cells[step].reason[:100]}")
    if cells["qdq"].state == "ok":
        cells["analyze"], job = _cell(
            AnalyzeRecipe(float_model=str(model.path), quant_model=str(out["qdq"]), data=calib)
        )
        verdict = job.report.result.verdict if job.report else None
        if cells["analyze"].state == "ok" and verdict is not None and verdict.level is not None:
            cells["analyze"] = Cell("broken", f"a {verdict.level} verdict on synthetic data")
    else:
        cells["analyze"] = Cell("refused", "no QDQ model to analyse")
    models = [str(model.path)] + ([str(out["qdq"])] if cells["qdq"].state == "ok" else [])
    cells["bench"] = _bench_cell(BenchRecipe(models=tuple(models), warmup=3, runs=20))
    cells["profile"] = _job(ProfileRecipe(model=str(model.path), runs=5))
    return cells


def _bench_cell(recipe: BenchRecipe) -> Cell:
    cell, job = _cell(recipe)
    if cell.state != "ok":
        return cell
    # A benchmark succeeds with per-model errors in its rows: those are refusals.
    errors = [r.error for r in (job.report.result.rows if job.report else []) if r.error]
    return Cell("refused", errors[0], cell.seconds) if errors else cell


def markdown(results: dict[str, dict[str, Cell]], families: dict[str, str]) -> str:
    """The matrix as a Markdown table, then the reasons of every cell that is not ok."""
    lines = [
        "| model | family | " + " | ".join(STEPS) + " |",
        "| --- | --- | " + " | ".join("---" for _ in STEPS) + " |",
    ]
    notes = []
    for name, cells in results.items():
        row = []
        for step in STEPS:
            cell = cells.get(step, Cell("-"))
            row.append(cell.state)
            if cell.state not in ("ok", "-"):
                notes.append(f"- {name} / {step} ({cell.state}): {cell.reason}")
        lines.append(f"| {name} | {families[name]} | " + " | ".join(row) + " |")
    totals = {
        s: sum(c.state == s for cells in results.values() for c in cells.values())
        for s in ("ok", "unchecked", "refused", "broken", "crashed")
    }
    lines.append("")
    lines.append("Totals: " + ", ".join(f"{v} {k}" for k, v in totals.items()))
    return "\n".join([*lines, "", *notes]) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the matrix; exit 1 when any cell is broken or crashed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="model names to check")
    parser.add_argument("--markdown", help="also write the matrix to this file")
    args = parser.parse_args(argv)
    corpus = [m for m in available() if not args.only or m.name in args.only]
    if not corpus:
        print(f"realcheck: {SKIP_REASON}")
        return 0
    results: dict[str, dict[str, Cell]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in corpus:
            print(f"{model.name} ({model.family})", flush=True)
            t0 = time.perf_counter()
            results[model.name] = check_model(model, Path(tmp), lambda s: print(s, flush=True))
            print(
                f"  {time.perf_counter() - t0:.0f} s: "
                + " ".join(f"{k}={v.state}" for k, v in results[model.name].items()),
                flush=True,
            )
    text = markdown(results, {m.name: m.family for m in corpus})
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    bad = any(
        c.state in ("broken", "crashed") for cells in results.values() for c in cells.values()
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
