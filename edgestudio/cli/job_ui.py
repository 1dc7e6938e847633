"""Running a recipe from the terminal: progress, Ctrl+C, the result, the JSON report, exit code."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO, TypeVar

from edgestudio.cli.json_option import STDOUT, add_json_option, write_json
from edgestudio.cli.output import JobProgress
from edgestudio.cli.workspace_option import record_job, workspace_problems
from edgestudio.core.inputs.data_source import DataSource, parse_data_source
from edgestudio.core.inputs.grammar import (
    checked_text,
    parse_named_range,
    parse_named_shape,
)
from edgestudio.core.job_api.options import add_options, argument_type, values_from_args
from edgestudio.core.job_api.recipe import Recipe, Tolerance
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.serialise import to_json
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import run_job

R = TypeVar("R")

EXIT_OK, EXIT_CHECK_FAILED, EXIT_JOB_FAILED, EXIT_UNCHECKED, EXIT_CANCELLED = 0, 1, 2, 4, 130
OUTCOME_EXIT = {"passed": EXIT_OK, "failed": EXIT_CHECK_FAILED, "unchecked": EXIT_UNCHECKED}


def add_timeout_arg(p: argparse.ArgumentParser, what: str = "the job") -> None:
    """``--timeout S``, declared once for every command that runs a job."""
    p.add_argument(
        "--timeout", type=float, default=None, metavar="S", help=f"stop {what} after S seconds"
    )


def add_output_args(
    p: argparse.ArgumentParser,
    help_text: str = "where to write the result",
    required: bool = True,
    overwrite: bool = True,
) -> None:
    """``-o/--output`` (and ``--overwrite``, unless ``overwrite`` is False), declared once for
    every command that writes a file."""
    p.add_argument("-o", "--output", required=required, help=help_text)
    if overwrite:
        p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it exists")


def add_common_job_args(p: argparse.ArgumentParser, tolerance: bool = True) -> None:
    """The options every file-producing job takes."""
    add_output_args(p)
    add_json_option(p, "the report")
    add_timeout_arg(p)
    if tolerance:
        add_tolerance_args(p, Tolerance(), "the check")


def add_tolerance_args(p: argparse.ArgumentParser, default: Tolerance, what: str) -> None:
    """``--atol``/``--rtol``: the tolerance of ``what``, ``default`` unless given."""
    for name, value in (("absolute", default.atol), ("relative", default.rtol)):
        p.add_argument(
            f"--{name[0]}tol",
            type=float,
            default=value,
            help=f"{name} tolerance of {what} (default %(default)g)",
        )


def add_calib_args(p: argparse.ArgumentParser, help_text: str, required: bool = False) -> None:
    """``--calib`` (prepared as ``--data`` is) and ``--calib-samples``: a calibration set of
    its own, and how much of it to use (read back by ``calibration_source``)."""
    p.add_argument("--calib", metavar="PATH", required=required, help=help_text)
    p.add_argument(
        "--calib-samples",
        type=int,
        metavar="N",
        help="calibrate on the first N samples of --calib only (default: as --samples); the "
        "result's calibration curve then says whether more would help",
    )


def add_data_args(
    p: argparse.ArgumentParser, option: str, help_text: str, required: bool = False
) -> None:
    """``--calib``/``--data`` with sample count and image preprocessing options."""
    p.add_argument(option, metavar="PATH", required=required, help=help_text)
    p.add_argument("--samples", type=int, default=0, help="use only the first N samples")
    p.add_argument(
        "--part",
        choices=("even", "odd"),
        help="use only the even- or odd-numbered samples (a disjoint half each)",
    )
    # the preparation options are DataSource's own declarations
    images = p.add_argument_group("image folders")
    add_options(images, DataSource, only=lambda opt: opt.group == "images")
    others = p.add_argument_group("audio files and text")
    add_options(others, DataSource, only=lambda opt: opt.group != "images")


def data_source(args: argparse.Namespace, text: str) -> DataSource:
    """Build the DataSource from the data options."""
    try:
        return parse_data_source(
            text, args.samples, args.part or "", **values_from_args(args, DataSource)
        )
    except ValueError as exc:
        raise SystemExit(f"edgestudio: error: {exc}") from exc


def add_input_args(p: argparse.ArgumentParser, data: bool = False) -> None:
    """``--shape``/``--range`` (and ``--data`` with its options) of a job that feeds a model."""
    g = p.add_argument_group(
        "model inputs",
        "By default the inputs are derived from the graph and tried until the "
        "model runs (see `edgestudio inputs MODEL`); these override parts of it.",
    )
    g.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=DIMxDIM",
        type=argument_type(checked_text(parse_named_shape)),
        help="give an input's shape, e.g. image=1x3x224x224 or sr=scalar (repeatable)",
    )
    g.add_argument(
        "--range",
        action="append",
        default=[],
        metavar="NAME=LOW:HIGH",
        type=argument_type(checked_text(parse_named_range)),
        help="give an input's values: LOW:HIGH (integers below HIGH), V1,V2,…, ones, "
        "zeros, normal or bool, e.g. input_ids=0:30522 (repeatable)",
    )
    if data:
        add_data_args(
            p,
            "--data",
            "real data instead of derived inputs: .npz, a folder of "
            ".npy/.npz/test_data_set_*, a folder of images, audio files (.wav/.flac) "
            "or a .txt of sentences (the first sample is used)",
        )


def input_fields(args: argparse.Namespace, with_data: bool = True) -> dict[str, Any]:
    """The recipe fields given by :func:`add_input_args` (``data`` only ``with_data``)."""
    fields: dict[str, Any] = {"shapes": tuple(args.shape), "ranges": tuple(args.range)}
    if with_data:
        text = getattr(args, "data", None)
        fields["data"] = data_source(args, text) if text else None
    return fields


def print_report(
    report: JobReport[Any], stream: TextIO | None = None, with_warnings: bool = True
) -> None:
    """Print the result and its check as a small table (on standard output by default)."""
    stream = stream or sys.stdout  # resolved per call: a test or --json may swap it
    if report.output:
        stream.write(f"output: {report.output}\n")
    for warning in report.warnings if with_warnings else []:
        stream.write(f"warning: {warning}\n")
    for note in getattr(report.result, "notes", None) or []:  # what the job did on the way
        stream.write(f"note: {note}\n")
    check = report.check
    if check is None:
        return
    stream.write("\n".join(check.text_lines()) + "\n")


def execute(recipe: Recipe[Any], args: argparse.Namespace) -> int:
    """Run ``recipe`` with terminal progress; print and save the report; return the exit code."""
    return execute_job(recipe, args)[0]


def problems_before_start(recipe: Recipe[Any], args: argparse.Namespace) -> list[str]:
    """What would make the job fail late: a missing input, a report that cannot be written.
    Checked before any worker starts, so nothing runs for minutes and then fails."""
    found = [
        f"{path} does not exist."
        for path in recipe.input_paths()
        if path and not Path(path).exists()
    ]
    found += workspace_problems(args, recipe)
    report = getattr(args, "json", None)
    if report and report != STDOUT:
        folder = Path(report).absolute().parent
        if not folder.is_dir():
            found.append(f"--json {report}: the folder {folder} does not exist.")
        elif not os.access(folder, os.W_OK):
            found.append(f"--json {report}: the folder {folder} is not writable.")
    return found


def execute_job(
    recipe: Recipe[R], args: argparse.Namespace, show_report: bool = True
) -> tuple[int, Job[R] | None]:
    """Like :func:`execute`, also returning the finished job (None when cancelled or when it
    could not start)."""
    problems = problems_before_start(recipe, args)
    if problems:
        for problem in problems:
            print(f"edgestudio: error: {problem}", file=sys.stderr)
        print("edgestudio: nothing was run", file=sys.stderr)
        return EXIT_JOB_FAILED, None
    progress = JobProgress()

    def show(job: Job[Any]) -> None:
        progress.update(job.stage, job.fraction, job.elapsed, job.warnings)

    try:
        job = run_job(recipe, timeout=getattr(args, "timeout", None), on_update=show)
    except KeyboardInterrupt:
        progress.done()
        print("edgestudio: cancelled; no output was written", file=sys.stderr)
        return EXIT_CANCELLED, None
    progress.done()
    if getattr(args, "json", None):
        _write_json(args.json, job)
    record_job(args, job)
    if job.state is JobState.SUCCEEDED and job.report is not None:
        if show_report:
            print_report(job.report, with_warnings=False)  # warnings were shown while it ran
        return OUTCOME_EXIT[job.report.outcome], job
    print(f"edgestudio: error: job {job.state.value}: {job.error}", file=sys.stderr)
    if job.state is JobState.CRASHED and job.stderr_tail:
        print("worker stderr (last lines):\n" + job.stderr_tail[-1500:], file=sys.stderr)
    return (EXIT_CANCELLED if job.state is JobState.CANCELLED else EXIT_JOB_FAILED), job


def _write_json(target: str, job: Job[Any]) -> None:
    """The job's report as JSON; the fields of its typed result (``layers``, ``results``, …)
    are top-level keys."""
    report: dict[str, Any] = (
        to_json(job.report) if job.report else {"output": None, "passed": False}
    )
    result: dict[str, Any] = report.pop("result", None) or {}
    data = {
        "state": job.state.value,
        "error": job.error,
        "recipe": to_json(job.recipe),
        "command": job.recipe.command_line(),
        "elapsed_s": round(job.elapsed, 3),
        **report,
    }
    data.update({k: v for k, v in result.items() if k not in data})
    write_json(target, data)
