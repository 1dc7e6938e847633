"""``edgestudio tune MODEL --data DATA --goal 'sqnr>=30'``: the quantization that meets an
accuracy goal at the lowest latency (or size), searched in parallel, locally or on Ray."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgestudio.cli.job_ui import (
    add_calib_args,
    add_data_args,
    add_input_args,
    add_output_args,
    data_source,
    input_fields,
)
from edgestudio.cli.json_option import add_json_option, write_json
from edgestudio.cli.output import print_table
from edgestudio.cli.workspace_option import add_workspace_option, record_tune
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.command import spelled
from edgestudio.core.job_api.options import add_options, values_from_args
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.tune import SearchSpace, TuneSettings, no_positives_text

if TYPE_CHECKING:
    from edgestudio.core.quant.tune import Candidate
    from edgestudio.jobs.tuner import Tuner


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``tune``."""
    p = subparsers.add_parser(
        "tune",
        help="find the quantization that meets an accuracy goal fastest",
        description="Quantize, analyse and time candidate recipes: sensible ones first "
        "(QDQ, per-channel, reduce-range, percentile calibration, 16-bit activations, "
        "quantizers on compute operators, dynamic), then the closest one with its worst layers "
        "in 16-bit, then (unless --integer-only) without them, until one meets the goal or the "
        "budget is spent. Calibration and evaluation never share a sample. Quantizing and "
        "analysing run in parallel (locally, or as Ray tasks with --ray); latency is measured "
        "one candidate at a time.",
    )
    add_spelled(p, QuantRecipe)  # the model
    add_data_args(
        p,
        "--data",
        "evaluation data (as --calib of quantize; labels in an .npz "
        "allow top1_drop goals); without --calib, its even-numbered samples "
        "calibrate and its odd-numbered ones judge",
        required=True,
    )
    add_calib_args(
        p, "calibration data of its own (prepared as --data is); every sample of --data then judges"
    )
    add_input_args(p)
    add_spelled(p, TuneSettings)  # the goal, the provider timed on, a Ray cluster
    add_options(p, TuneSettings)
    add_spelled(p, SearchChoice)
    add_output_args(p, "write the winner's model here", required=False)
    add_json_option(p, "every candidate")
    add_workspace_option(p)
    p.set_defaults(func=run)


@dataclass(frozen=True)
class SearchChoice:
    """What the command line may take out of the search (its flags, declared once), and an
    earlier tune to resume."""

    modes: str = spelled(
        "qdq,dynamic", "--modes", help="modes to try, comma-separated (default %(default)s)"
    )
    no_exclusions: bool = spelled(
        False, "--no-exclusions", help="never exclude layers from quantization"
    )
    no_16_bit: bool = spelled(
        False,
        "--no-16-bit",
        help="8-bit everywhere: no 16-bit activations, whole-model or per layer (the Auto-tune "
        "window's 'Precision: 8-bit everywhere')",
    )
    resume: str | None = spelled(
        None,
        "--resume",
        metavar="TUNE",
        help="take the candidates an earlier tune measured (its --json file, or the last tune "
        "of a workspace) instead of measuring them again; the budget counts only new ones",
    )

    def space(self) -> SearchSpace:
        """The search space these flags leave."""
        return SearchSpace(
            modes=tuple(m.strip() for m in self.modes.split(",") if m.strip()),
            exclusions=not self.no_exclusions,
            activation_types=("uint8",) if self.no_16_bit else SearchSpace().activation_types,
        )


def earlier_tune(path: str) -> dict[str, object]:
    """The tune summary in ``path``: a ``tune --json`` file, or a workspace's last tune."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise EdgeStudioError(f"--resume {path}: cannot be read ({exc}).") from exc
    if isinstance(data, dict) and isinstance(data.get("candidates"), list):
        return data
    tunes = data.get("tunes") if isinstance(data, dict) else None
    if not tunes:
        raise EdgeStudioError(
            f"--resume {path}: neither a tune's JSON nor a workspace with a tune."
        )
    last: dict[str, object] = tunes[-1]
    return last


def calibration_source(args: argparse.Namespace) -> DataSource | None:
    """``--calib`` prepared as ``--data`` is, capped by ``--calib-samples`` when given."""
    if not args.calib:
        return None
    source = data_source(args, args.calib)
    if args.calib_samples is not None:
        if args.calib_samples < 1:
            raise EdgeStudioError(f"--calib-samples must be 1 or more (got {args.calib_samples}).")
        source = dataclasses.replace(source, samples=args.calib_samples)
    return source


def settings_from_args(args: argparse.Namespace) -> TuneSettings:
    """The tune the parsed arguments describe."""
    choice = SearchChoice(**spelled_values(args, SearchChoice))
    return TuneSettings(
        model=args.model,
        data=data_source(args, args.data),
        calib=calibration_source(args),
        space=choice.space(),
        **spelled_values(args, TuneSettings),
        **values_from_args(args, TuneSettings),
        resume=earlier_tune(choice.resume) if choice.resume else None,
        **input_fields(args, with_data=False),
    )


def run(args: argparse.Namespace) -> int:
    """Tune, print the candidates and the winner; exit 0 when one meets the goal, 1 if none."""
    from edgestudio.core.quant.tune_goal import synthetic_goal_warning
    from edgestudio.jobs.tuner import Tuner, tuner_summary

    if args.output and Path(args.output).exists() and not args.overwrite:
        raise EdgeStudioError(f"{args.output} already exists (--overwrite replaces it).")
    settings = settings_from_args(args)
    warning = synthetic_goal_warning(settings.data, settings.goal)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    said_goal = [False]
    said: set[int] = set()  # each candidate is said once (re-judging it changes it again)

    def say(candidate: object) -> None:
        from edgestudio.core.quant.tune import Candidate
        from edgestudio.core.quant.tune_goal import show_value

        assert isinstance(candidate, Candidate)
        goal = tuner.settings.goal
        if tuner.goal_note and not said_goal[0]:
            said_goal[0] = True
            print(tuner.goal_note, file=sys.stderr)
        if candidate.state in ("done", "failed") and candidate.number not in said:
            said.add(candidate.number)
            doubled = show_value(goal, candidate.doubled_value)
            meets = (
                f" (meets the goal; {doubled} with its error doubled: no headroom)"
                if candidate.met and candidate.holds is False
                else " (meets the goal)"
                if candidate.met
                else ""
            )
            print(
                f"#{candidate.number} {candidate.state}: {candidate.why}: {goal.metric} "
                f"{show_value(goal, candidate.goal_value)}{meets}"
                + (f"; {candidate.error}" if candidate.error else ""),
                file=sys.stderr,
            )

    try:
        tuner = Tuner(settings, on_change=say)
    except RuntimeError as exc:
        raise EdgeStudioError(str(exc)) from exc
    print(f"data: {tuner.data_note}", file=sys.stderr)
    if tuner.resume_note:
        print(tuner.resume_note, file=sys.stderr)
    try:
        winner = tuner.run()
    except KeyboardInterrupt:
        print("edgestudio: cancelled; nothing was written", file=sys.stderr)
        return 130
    try:
        print_candidates(tuner)
        positives = no_positives_text(tuner.candidates)
        if positives:
            print(f"calibration: {positives}")
        if winner is None:
            print(
                "No candidate could be analysed: every recipe failed (the note column says "
                "why; failures sharing a cause skipped only their own family)."
            )
        else:
            print_winner_checks(tuner, winner)
            verdict = tuner.verdict_of(winner)

            out = args.output or str(
                Path(args.model).with_name(f"{Path(args.model).stem}_tuned.onnx")
            )
            print(
                f"winner: #{winner.number} {verdict}: "
                f"{dataclasses.replace(winner.recipe, output=out).command_line()}"
            )
            tied = [c.number for c in tuner.latency_ties() if c is not winner]
            if tied:
                print(
                    "tied on latency with "
                    + ", ".join(f"#{n}" for n in tied)
                    + " (no measurable difference; the smallest model wins)"
                )
            if args.output:
                print(f"written to {tuner.keep(winner, args.output)}")
        if args.json:
            write_json(args.json, tuner_summary(tuner))
        record_tune(args, tuner_summary(tuner))
    finally:
        tuner.cleanup()
    confirmed = winner is not None and winner.met and winner.number not in tuner.unconfirmed
    return 0 if confirmed else 1


def print_candidates(tuner: Tuner) -> None:
    """Every candidate: its figure, latency against float, size, and why it was tried."""
    from edgestudio.core.quant.tune import speed_vs_float
    from edgestudio.core.quant.tune_goal import show_value

    goal = tuner.settings.goal

    def figure(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for line in tuner.skipped:
        print(line, file=sys.stderr)
    print_table(
        [
            "#",
            "recipe",
            "excluded",
            goal.metric,
            "at 2× error",
            "meets",
            "median ms",
            "vs float",
            "size KiB",
            "note",
        ],
        [
            [
                c.number,
                c.recipe.title().removeprefix("Quantize: "),
                len(c.recipe.exclude),
                show_value(goal, c.goal_value),
                show_value(goal, c.doubled_value),
                tuner.meets_word(c),
                figure(c.latency_ms, ".3f"),
                speed_vs_float(c.latency_ms, tuner.float_latency_ms) or "-",
                figure(None if c.quant_bytes is None else c.quant_bytes / 1024, ".1f"),
                c.error or c.why,
            ]
            for c in tuner.candidates
        ]
        + [
            [
                "float",
                "float32 (the reference)",
                "",
                "",
                "",
                "",
                figure(tuner.float_latency_ms, ".3f"),
                "1.00× float",
                figure(tuner.float_bytes / 1024, ".1f"),
                "measured beside the candidates",
            ]
        ],
        title=f"{len(tuner.candidates)} candidates, goal {goal.text()}, "
        f"objective {tuner.settings.objective}",
        numeric=(0, 2, 3, 4, 6, 8),
    )


def print_winner_checks(tuner: Tuner, winner: Candidate) -> None:
    """The re-judgements: each split check, the calibration curve in words, and a winner
    slower than the float model said as such."""
    from edgestudio.core.quant.tune import slower_than_float_text
    from edgestudio.core.quant.winner_check import fold_text

    goal = tuner.settings.goal
    for candidate in tuner.candidates:
        for check in tuner.checks_of(candidate):
            if check.kind == "swapped" and candidate is not winner:
                print(f"split check: {fold_text(candidate, check, goal)}")
    if tuner.split_note(winner):
        print(f"split check: {tuner.split_note(winner)}")
    if tuner.headroom_note(winner):
        print(f"headroom: {tuner.headroom_note(winner)}")
    advice = tuner.calibration_advice(winner)
    if advice:
        print(f"calibration curve of #{winner.number}: {advice}")
    evidence = tuner.evidence_note(winner)
    if evidence:
        print(f"judged on: {evidence}")
    slower = slower_than_float_text(winner, tuner.float_latency_ms)
    if slower:
        print(slower)
