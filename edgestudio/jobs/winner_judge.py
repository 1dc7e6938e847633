"""The winner re-judged once a tune's search is over: on the data split the other way round (a
recipe that meets the goal on one split only is not crowned while another holds on both) and
calibrated on ¼ and ½ of its samples (its calibration curve, said in words). The figures come
from :mod:`edgestudio.core.quant.winner_check`; this runs the re-judgements as jobs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QUANT_MODES
from edgestudio.core.quant.sample_bounds import evidence_text
from edgestudio.core.quant.tune import Candidate, TuneSettings
from edgestudio.core.quant.winner_check import (
    WinnerCheck,
    calibration_advice,
    calibration_subset,
    curve_points,
    fold_text,
    swapped_split,
)
from edgestudio.jobs.scheduler import JobSubmitter
from edgestudio.jobs.tuner_steps import LocalStep, Measured

UNITS = {"images": "images", "audio": "audio windows", "text": "lines"}


class WinnerJudge:
    """The re-judgements of a tune's winners and what they found."""

    MAX_SPLIT_CHECKS: int = 3  # winners re-judged on the swapped split, at most

    def __init__(self, jobs: JobSubmitter, folder: Path, calib_data: Any, eval_data: Any) -> None:
        self.jobs, self.folder = jobs, folder
        self.calib_data, self.eval_data = calib_data, eval_data
        self.checks: list[WinnerCheck] = []
        self.steps: list[tuple[WinnerCheck, LocalStep]] = []
        self.unconfirmed: set[int] = set()  # met the goal, but not on the swapped split
        self.split_checked: set[int] = set()
        self.curve_drawn: set[int] = set()

    def start_next(self, winner: Candidate | None, settings: TuneSettings) -> bool:
        """Start the next re-judgement of ``winner``; False when there is none left."""
        if winner is None or not settings.check_winner:
            return False
        if (
            winner.number not in self.split_checked
            and len(self.split_checked) < self.MAX_SPLIT_CHECKS
        ):
            self.split_checked.add(winner.number)
            swapped = swapped_split(settings)
            if swapped is not None:
                calib, evaluation, label = swapped
                self._start(winner, settings, "swapped", label, calib, evaluation)
                return True
        if winner.number not in self.curve_drawn:
            self.curve_drawn.add(winner.number)
            calibrated = QUANT_MODES[winner.recipe.mode].calibrated
            for count, word in curve_points(winner.calibration_samples) if calibrated else []:
                self._start(
                    winner,
                    settings,
                    "calibration",
                    f"{word} of the calibration samples ({count})",
                    calibration_subset(self.calib_data, count),
                    self.eval_data,
                    count,
                )
            return bool(self.steps)
        return False

    def _start(
        self,
        winner: Candidate,
        settings: TuneSettings,
        kind: str,
        label: str,
        calib: Any,
        evaluation: DataSource,
        samples: int = 0,
    ) -> None:
        check = WinnerCheck(winner.number, kind, label, samples, state="running")
        self.checks.append(check)
        recipe = dataclasses.replace(
            winner.recipe,
            calib=calib if QUANT_MODES[winner.recipe.mode].calibrated else None,
            output=str(self.folder / f"check_{len(self.checks)}.onnx"),
        )
        try:
            step = LocalStep(Candidate(0, recipe, label), settings, self.jobs, evaluation)
        except Exception as exc:  # recorded; the tune still ends with its winner
            check.state, check.error = "failed", str(exc)
            return
        self.steps.append((check, step))

    def poll(
        self,
        settings: TuneSettings,
        candidates: list[Candidate],
        on_change: Callable[[Candidate], None],
    ) -> bool:
        """Collect the re-judgements that finished; True when one found a candidate that meets
        the goal on one split only (the winner may change)."""
        goal, flagged = settings.goal, False
        for check, step in list(self.steps):
            if not step.poll():
                continue
            self.steps.remove((check, step))
            if isinstance(step.result, Measured):
                check.goal_value = goal.value(step.result.analysis)
                check.met = goal.met(check.goal_value)
                check.state = "done"
                checked = next(c for c in candidates if c.number == check.candidate)
                if check.kind == "swapped" and not check.met and checked.met:
                    self.unconfirmed.add(checked.number)
                    flagged = True
            else:
                check.state, check.error = "failed", str(step.result)
            if check.kind == "swapped":
                Path(str(step.candidate.recipe.output)).unlink(missing_ok=True)
            for c in candidates:
                if c.number == check.candidate:
                    on_change(c)
        return flagged

    def cancel(self) -> None:
        """Stop the re-judgements under way (each said to be cancelled)."""
        for check, step in self.steps:
            step.cancel()
            check.state, check.error = "failed", "cancelled"
        self.steps = []

    def checks_of(self, candidate: Candidate) -> list[WinnerCheck]:
        """The re-judgements of ``candidate`` (swapped split, calibration curve)."""
        return [c for c in self.checks if c.candidate == candidate.number]

    def split_note(self, winner: Candidate, settings: TuneSettings) -> str:
        """What the swapped split says of ``winner``, in a sentence ("" when not checked for
        want of a second split, or when the check was switched off)."""
        checks = [c for c in self.checks_of(winner) if c.kind == "swapped"]
        if checks:
            return fold_text(winner, checks[0], settings.goal)
        if self.unconfirmed and settings.check_winner:
            return (
                f"#{winner.number} was not re-judged on the swapped split: "
                f"{len(self.unconfirmed)} candidate(s) before it met the goal on one split "
                "only, which says the data's halves differ (more, or more varied, "
                "calibration data should help)."
            )
        return ""

    def evidence_note(self, candidate: Candidate, settings: TuneSettings) -> str:
        """What the judged samples can show of ``candidate``'s goal figure, when it is a share
        of samples ("" when they show the goal, or it is no such share)."""
        task = candidate.analysis.task if candidate.analysis is not None else None
        figure = next(
            (f for f in (task.figures if task else []) if f.key == settings.goal.metric),
            None,
        )
        if figure is None or not figure.count or not figure.higher_is_better:
            return ""
        unit = UNITS.get(getattr(self.eval_data, "kind", ""), "samples")
        return evidence_text(figure.value, figure.count, settings.goal.threshold, unit)

    def calibration_advice(self, candidate: Candidate, settings: TuneSettings) -> str:
        """The calibration curve of ``candidate`` in words ("" when it was not drawn)."""
        points = [
            (c.calibration_samples, c.goal_value)
            for c in self.checks_of(candidate)
            if c.kind == "calibration" and c.state == "done"
        ]
        if not points or not candidate.calibration_samples:
            return ""
        points.append((candidate.calibration_samples, candidate.goal_value))
        unit = UNITS.get(getattr(self.calib_data, "kind", ""), "samples")
        return calibration_advice(points, settings.goal, unit)
