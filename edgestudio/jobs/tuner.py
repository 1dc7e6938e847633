"""The auto-tune run: candidates quantized and analysed in parallel, timed one at a time.

Each candidate is quantize → analyse (jobs in the session's one queue, ``workers`` at once and
never more than the queue allows, or Ray tasks on a cluster: :mod:`.tuner_steps`) → benchmark
(always here, as a job that runs alone, so the latencies stay clean). In the window the
candidates' jobs are listed in the Jobs panel beside every other job. The search
(:mod:`edgestudio.core.quant.tune_ladder`) tries sensible recipes first, then excludes the
worst layers of the closest one (or moves them to 16 bits) until the goal is met or the budget
is spent; the winner is then re-judged (:mod:`edgestudio.core.quant.winner_check`). A failed
or crashed candidate is recorded with its reason and the search goes on. Drive it with
:meth:`Tuner.poll` (the window's timer, the CLI's loop); :meth:`Tuner.cancel` stops everything
and leaves no file behind.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgestudio.core.convert.conversion_plan import model_opset
from edgestudio.core.model.model_io import load_model
from edgestudio.core.paths import atomic_target, file_hash
from edgestudio.core.quant.quant_recipes import QUANT_MODES, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.tune import (
    Candidate,
    TuneSettings,
    headroom_text,
    latency_ties,
    no_positives_text,
    pick_winner,
    slower_than_float_text,
)
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.core.quant.tune_ladder import (
    combined_step,
    exclusion_step,
    failure_cause,
    first_recipes,
    int16_step,
    int16_step_applies,
    near_lossless_step,
    recipe_key,
    rounding_step,
)
from edgestudio.core.quant.winner_check import WinnerCheck
from edgestudio.core.serialise import to_json
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import JobSubmitter, Scheduler, run_job
from edgestudio.jobs.tune_bench import BENCH_BATCH, CandidateTimer
from edgestudio.jobs.tune_resume import earlier_candidates
from edgestudio.jobs.tuner_steps import LocalStep, RayStep, connect_ray
from edgestudio.jobs.winner_judge import WinnerJudge

LAST_RUNGS = 2  # candidates kept for the whole-model rungs when nothing meets the goal


def tuner_summary(tuner: Tuner) -> dict[str, Any]:
    """A tune as plain JSON: goal, objective, every candidate, the winner (for workspaces and
    reports)."""
    winner = tuner.winner
    s = tuner.settings
    return {
        "model": s.model,
        "model_hash": tuner.model_hash,
        "goal": s.goal.text(),
        "objective": s.objective,
        "provider": s.provider,
        "threads": s.threads,
        "winner": winner.number if winner else None,
        "met": bool(winner and winner.met),
        "tied": [c.number for c in tuner.latency_ties()],
        "float": {"bytes": tuner.float_bytes, "latency_ms": tuner.float_latency_ms},
        "data": tuner.data_note,
        "integer_only": s.integer_only,
        "skipped": list(tuner.skipped),
        "goal_note": tuner.goal_note,
        "checks": to_json(tuner.checks),
        "unconfirmed": sorted(tuner.unconfirmed),
        "split_note": tuner.split_note(winner) if winner else "",
        "headroom_note": tuner.headroom_note(winner) if winner else "",
        "verdict": tuner.verdict_of(winner) if winner else "",
        "calibration_advice": tuner.calibration_advice(winner) if winner else "",
        "calibration_note": no_positives_text(tuner.candidates),
        "evidence_note": tuner.evidence_note(winner) if winner else "",
        "slower_than_float": slower_than_float_text(winner, tuner.float_latency_ms)
        if winner
        else "",
        "candidates": [
            {
                **c.summary(),
                "vs_float": c.latency_ms / tuner.float_latency_ms
                if c.latency_ms and tuner.float_latency_ms
                else None,
            }
            for c in tuner.candidates
        ],
    }


class Tuner:
    """One auto-tune run (see the module doc)."""

    def __init__(
        self,
        settings: TuneSettings,
        on_change: Callable[[Candidate], None] | None = None,
        jobs: JobSubmitter | None = None,
    ) -> None:
        self.settings = settings
        self.on_change = on_change or (lambda c: None)
        # the session's queue (the window's); on its own (the CLI), one of ``workers`` slots
        self.jobs: JobSubmitter = jobs or Scheduler(max_parallel=max(1, settings.workers))
        self.folder = Path(tempfile.mkdtemp(prefix="edgestudio-tune-"))
        model = load_model(settings.model)
        ops = {n.op_type for n in model.graph.node}
        # calibration and evaluation never share a sample (said in the summary)
        self.calib_data, self.eval_data, self.data_note = settings.split()
        self.judge = WinnerJudge(self.jobs, self.folder, self.calib_data, self.eval_data)
        base = (
            dataclasses.replace(
                settings.base,
                model=settings.model,
                calib=self.calib_data,
                overwrite=True,
                output=None,
            )
            if settings.base is not None
            else QuantRecipe(model=settings.model, calib=self.calib_data, overwrite=True)
        )
        if settings.integer_only:  # nothing kept in float: not even what the base excluded
            base = dataclasses.replace(base, exclude=())
        if settings.target != "cpu":  # every candidate quantized for it, and judged there
            base = dataclasses.replace(base, target=settings.target)
        if settings.shapes or settings.ranges:
            base = dataclasses.replace(base, shapes=settings.shapes, ranges=settings.ranges)
        self.base = base
        self.opset = model_opset(model)
        self.queue = list(
            first_recipes(
                base,
                settings.space,
                has_matmul=bool(ops & {"MatMul", "Gemm", "Attention"}),
                opset=self.opset,
            )
        )
        # "auto": the goal is the task's own figure, fixed by the first analysis
        self.goal_note = ""
        # The winner re-judged once the search is over: on the split swapped (a recipe that
        # meets the goal on one split only is not crowned) and calibrated on fewer samples.
        self.candidates: list[Candidate] = []
        self.steps: list[LocalStep | RayStep] = []
        self.tried: set[tuple[str, ...]] = set()
        self.exclusion_round = 0
        self.int16_round = 0
        # a mode whose candidates failed twice for one cause: its queued ones are skipped (five
        # failed identically once, and the budget never reached the mode that met the goal)
        self.failure_counts: dict[tuple[str, str], int] = {}
        self.failed_causes: dict[str, str] = {}
        self.skipped: list[str] = []
        self._ties: tuple[tuple[tuple[int, float | None], ...], list[Candidate]] | None = None
        self.started = time.monotonic()
        self.model_hash = file_hash(Path(settings.model))
        # The float model, for the Pareto plot's reference: its size (as the quantize job counts
        # it), and its latency measured in every benchmark beside the candidates.
        self.float_bytes = Path(settings.model).stat().st_size
        self.earlier, self.resume_note = earlier_candidates(settings, self.model_hash)
        # resumed: timed beside them, the reference their "vs float" was measured on
        resumed_float = (settings.resume or {}).get("float", {}) if self.earlier else {}
        self.timer = CandidateTimer(settings, self.jobs, resumed_float.get("latency_ms"))
        self.finished = False
        self.cancelled = False
        self._ray: dict[str, Any] | None = None
        if settings.ray_address:
            self._ray = connect_ray(
                settings.ray_address, settings.model, self.calib_data, self.eval_data
            )

    # ----- driving -----------------------------------------------------------------------------
    @property
    def float_latency_ms(self) -> float | None:
        """The float model's median latency, timed beside the candidates (None: not yet)."""
        return self.timer.float_latency_ms

    @property
    def winner(self) -> Candidate | None:
        """The best candidate so far (meeting the goal at the lowest objective, else closest);
        one that met the goal on one split only is passed over while another meets it."""
        ties = self.latency_ties()
        if ties:  # no measurable latency difference among them: the smaller model wins
            return min(ties, key=lambda c: (c.quant_bytes or 0, c.number))
        return pick_winner(self._crownable(), self.settings.goal, self.settings.objective)

    def _crownable(self) -> list[Candidate]:
        """The candidates a winner is picked from: those not found to meet the goal on one
        split only, unless nothing else meets it (then the flag is said beside the winner)."""
        confirmed = [c for c in self.candidates if c.number not in self.unconfirmed]
        if any(c.met and c.state == "done" for c in confirmed):
            return confirmed
        return self.candidates

    def meets_word(self, candidate: Candidate) -> str:
        """The *meets* cell of a candidate: "yes", "one split only", "no headroom" or ""."""
        if not candidate.met:
            return ""
        if candidate.number in self.unconfirmed:
            return "one split only"
        return "no headroom" if candidate.holds is False else "yes"

    def verdict_of(self, winner: Candidate) -> str:
        """What the winner is, in words: it meets the goal (confirmed, on one split only, or
        without headroom), or it is only the closest."""
        if not winner.met:
            return "is the closest: no recipe tried meets the goal on this data"
        if winner.number in self.unconfirmed:
            return "meets the goal on one split only (not confirmed)"
        if winner.holds is False:
            return "meets the goal without headroom (not with its error doubled)"
        return "meets the goal"

    def headroom_note(self, winner: Candidate) -> str:
        """What the doubled-error test says of the winner and the candidates passed over."""
        return headroom_text(winner, self.candidates, self.settings.goal)

    @property
    def checks(self) -> list[WinnerCheck]:
        """Every re-judgement of a winner so far."""
        return self.judge.checks

    @property
    def unconfirmed(self) -> set[int]:
        """The candidates that met the goal, but not on the swapped split."""
        return self.judge.unconfirmed

    @property
    def rejudging(self) -> bool:
        """True while a winner is being re-judged."""
        return bool(self.judge.steps)

    def checks_of(self, candidate: Candidate) -> list[WinnerCheck]:
        """The re-judgements of ``candidate`` (swapped split, calibration curve)."""
        return self.judge.checks_of(candidate)

    def split_note(self, winner: Candidate) -> str:
        """What the swapped split says of ``winner``, in a sentence."""
        return self.judge.split_note(winner, self.settings)

    def evidence_note(self, candidate: Candidate) -> str:
        """What the judged samples can show of ``candidate``'s goal figure ("" when enough)."""
        return self.judge.evidence_note(candidate, self.settings)

    def calibration_advice(self, candidate: Candidate) -> str:
        """The calibration curve of ``candidate`` in words ("" when it was not drawn)."""
        return self.judge.calibration_advice(candidate, self.settings)

    def latency_ties(self) -> list[Candidate]:
        """With the latency objective: the candidates meeting the goal that are not measurably
        slower than the fastest of them (ties are reported as ties)."""
        if self.settings.objective != "latency":
            return []
        meeting = [c for c in self._crownable() if c.state == "done" and c.met]
        meeting = [c for c in meeting if c.settled] or meeting  # headroom first
        # The bootstrap test runs on the window's thread at every redraw: once per change.
        key = tuple((c.number, c.latency_ms) for c in meeting)
        if self._ties is None or self._ties[0] != key:
            self._ties = (key, latency_ties(meeting))
        return list(self._ties[1])

    def _out_of_budget(self) -> bool:
        s = self.settings
        late = s.minutes is not None and time.monotonic() - self.started > s.minutes * 60
        tried = sum(1 for c in self.candidates if not c.resumed)  # resumed ones cost nothing
        return tried >= s.budget or late

    def _nearly_spent(self) -> bool:
        """True when only the last rungs fit in what is left of the budget (two candidates,
        or the last quarter of the minutes) and nothing meets the goal yet."""
        s = self.settings
        tried = sum(1 for c in self.candidates if not c.resumed)
        late = s.minutes is not None and time.monotonic() - self.started > 0.75 * s.minutes * 60
        done = [c for c in self.candidates if c.state == "done"]
        spent = s.budget - tried <= LAST_RUNGS or late
        return bool(done) and spent and not any(self._holds(c) for c in done)

    def _holds(self, candidate: Candidate) -> bool:
        """True when ``candidate`` meets the goal with headroom and was not found to meet it on
        one split only: a candidate the search may stop at."""
        return candidate.settled and candidate.number not in self.unconfirmed

    def _whole_model_rungs(self) -> tuple[QuantRecipe, str] | None:
        """The whole-model rungs: what helped, together, then A16W16 (16-bit activations and
        weights, where the space allows 16 bits). When the loss is spread over many layers (it
        was on every hidden model that missed its goal), promoting layers one by one does not
        pay; on hidden text lines A16W16 alone read 100 %."""
        if "qdq" not in self.settings.space.modes or "qdq" in self.failed_causes:
            return None
        wide = bool({"uint16", "int16"} & set(self.settings.space.activation_types))
        closest = pick_winner(self.candidates, self.settings.goal, self.settings.objective)

        def near_lossless() -> tuple[QuantRecipe, str] | None:
            per_channel = True in self.settings.space.per_channel
            return near_lossless_step(closest, self.base, self.tried, self.opset, per_channel)

        # A candidate that met the goal on one split only says the data's halves differ: what
        # helped on this split is what would not carry over, so the widest margins come first.
        if wide and self.unconfirmed:
            lossless = near_lossless()
            if lossless is not None:
                return lossless
        combined = combined_step(self.candidates, self.settings.goal, self.tried, wide)
        if combined is not None or not wide:
            return combined
        return near_lossless()

    def _next_recipe(self) -> tuple[QuantRecipe, str] | None:
        if self.queue and self._nearly_spent():  # the last candidates go to these rungs
            last = self._whole_model_rungs()
            if last is not None:
                return last
        while self.queue:
            recipe, why = self.queue.pop(0)
            cause = self.failed_causes.get(recipe.mode)
            if cause is None:
                return recipe, why
            self.skipped.append(
                f"{why}: skipped, {recipe.mode} failed twice for the same cause ({cause[:120]})"
            )
        busy = self.steps or self.timer.waiting or self.timer.busy
        if busy or any(self._holds(c) for c in self.candidates):
            return None  # escalations build on finished results: wait for them
        rung = self._whole_model_rungs()
        if rung is not None:
            return rung
        closest = pick_winner(self.candidates, self.settings.goal, self.settings.objective)
        wide = {"uint16", "int16"} & set(self.settings.space.activation_types)
        # Then the worst layers in 16-bit (still integer; where the space allows 16 bits),
        # then, when allowed, in float.
        # from the closest 8-bit QDQ candidate: a whole-model 16-bit one closer to the goal
        # has nothing left to widen
        closest8 = pick_winner(
            [c for c in self.candidates if int16_step_applies(c.recipe)],
            self.settings.goal,
            self.settings.objective,
        )
        while closest8 is not None and wide and self.int16_round < 8:
            step = int16_step(closest8, self.tried, self.int16_round)
            self.int16_round += 1
            if step is not None:
                return step
        excluding = not self.settings.integer_only and self.settings.space.exclusions
        while excluding and closest is not None and self.exclusion_round < 8:
            step = exclusion_step(closest, self.settings.goal, self.tried, self.exclusion_round)
            self.exclusion_round += 1
            if step is not None:
                return step
        # Last, the slower pass: the closest 8-bit recipes again, rounded adaptively (first
        # when neither 16 bits nor float may be used: 8-bit everywhere, integer only).
        return rounding_step(self.candidates, self.settings.goal, self.tried)

    def _start(self, recipe: QuantRecipe, why: str) -> None:
        number = len(self.candidates) + 1
        if not QUANT_MODES[recipe.mode].calibrated:
            recipe = dataclasses.replace(recipe, calib=None)
        earlier = self.earlier.get(recipe_key(recipe))
        if earlier is not None:
            resumed = Candidate.measured_before(
                number,
                dataclasses.replace(recipe, output=str(self.folder / f"candidate_{number}.onnx")),
                earlier,
                self.settings.goal,
            )
            if resumed is not None:
                self.candidates.append(resumed)
                if self.settings.goal.is_auto and resumed.analysis is not None:
                    self._fix_goal(resumed.analysis)
                self.on_change(resumed)
                return
        recipe = dataclasses.replace(recipe, output=str(self.folder / f"candidate_{number}.onnx"))
        candidate = Candidate(number, recipe, why, state="running")
        self.candidates.append(candidate)
        try:
            step: LocalStep | RayStep = (
                RayStep(candidate, self.settings, self._ray)
                if self._ray is not None
                else LocalStep(candidate, self.settings, self.jobs, self.eval_data)
            )
        except Exception as exc:  # e.g. the output check: recorded, the search goes on
            self._fail(candidate, str(exc))
            return
        self.steps.append(step)
        self.on_change(candidate)

    def _fail(self, candidate: Candidate, reason: str) -> None:
        cause = failure_cause(reason)
        key = (candidate.recipe.mode, cause)
        self.failure_counts[key] = self.failure_counts.get(key, 0) + 1
        if self.failure_counts[key] >= 2:
            self.failed_causes[candidate.recipe.mode] = cause
        candidate.state, candidate.error = "failed", reason
        candidate.seconds = time.monotonic() - candidate.started
        self.on_change(candidate)

    def poll(self) -> bool:
        """Move the run on; True while there is more to do."""
        if self.finished:
            return False
        self.jobs.poll()
        for step in list(self.steps):
            if step.poll():
                self.steps.remove(step)
                candidate = step.candidate
                if isinstance(step.result, str) or step.result is None:
                    self._fail(candidate, str(step.result))
                    continue
                quantization, candidate.analysis = step.result.quantization, step.result.analysis
                candidate.quant_bytes = quantization.quant_bytes
                candidate.calibration_samples = quantization.calibration_samples
                candidate.undecidable = list(quantization.undecidable)
                if self.settings.goal.is_auto:
                    self._fix_goal(candidate.analysis)
                candidate.judge(self.settings.goal)
                self.timer.waiting.append(candidate)
        self.timer.poll(quantizing=bool(self.steps), on_change=self.on_change)
        # Latency is measured alone: candidates are benchmarked together, in one job, once
        # a batch of them waits and nothing else runs; no quantization starts meanwhile.
        workers = max(1, self.settings.workers)
        while (
            not self.timer.busy
            and not self.judge.steps  # a winner being re-judged may reopen the search
            and len(self.steps) < workers
            and len(self.steps) + len(self.timer.waiting) < BENCH_BATCH * workers
            and not self._out_of_budget()
        ):
            chosen = self._next_recipe()
            if chosen is None:
                break
            self._start(*chosen)
        # Idle after that loop: nothing could start (budget spent, or nothing left to try);
        # the winner is re-judged before the tune ends.
        if not (self.steps or self.timer.waiting or self.timer.busy):
            if self.judge.poll(self.settings, self.candidates, self.on_change):
                # A candidate met the goal on one split only: it is not one to stop at, so the
                # search goes on (the next poll starts what follows, while the budget lasts).
                self._ties = None
                if not self._out_of_budget() and not any(map(self._holds, self.candidates)):
                    return True
            winner = None if self.cancelled else self.winner
            if not self.judge.steps and not self.judge.start_next(winner, self.settings):
                self._finish()
        return not self.finished

    def _fix_goal(self, analysis: Analysis) -> None:
        """Replace ``auto`` by the task's own figure, read from the first analysis (every
        candidate's analysis detects the same task on the same float model)."""
        goal = Goal.for_task(analysis)
        self.settings = dataclasses.replace(self.settings, goal=goal)
        task = analysis.task
        self.goal_note = (
            f"Goal {goal.text()}: the task's own figure ({task.label} on output "
            f"'{task.output}'), at the bound its verdict calls good."
            if task is not None and goal.metric != "sqnr"
            else f"Goal {goal.text()}: the model's outputs carry no task figure, so output "
            "SQNR judges."
        )
        for c in self.candidates:
            c.judge(goal)

    def _finish(self) -> None:
        self.finished = True
        self.queue = []

    def run(self, interval: float = 0.05) -> Candidate | None:
        """Drive the run to its end here (the CLI); return the winner."""
        try:
            while self.poll():
                time.sleep(interval)
        except KeyboardInterrupt:
            self.cancel()
            raise
        return self.winner

    def cancel(self) -> None:
        """Stop every candidate, local or remote; nothing is left behind."""
        self.cancelled = True
        for step in self.steps:
            step.cancel()
        self.judge.cancel()
        self.timer.cancel()
        for c in self.candidates:
            if c.state in ("pending", "running"):
                c.state, c.error = "failed", "cancelled"
        self.steps = []
        self._finish()
        self.cleanup()

    def keep(self, candidate: Candidate, output: str | Path) -> Path:
        """Copy a candidate's model to ``output`` (the tuner's folder is temporary); one
        measured by an earlier tune is quantized again (its calibration comes from the
        cache)."""
        target = Path(output)
        if not Path(str(candidate.recipe.output)).is_file():
            job = run_job(dataclasses.replace(candidate.recipe, output=str(target), overwrite=True))
            if job.state is not JobState.SUCCEEDED:
                raise RuntimeError(
                    f"candidate #{candidate.number} could not be made again: {job.error}"
                )
            return target
        with atomic_target(target) as tmp:
            shutil.copyfile(str(candidate.recipe.output), tmp)
        return target

    def cleanup(self) -> None:
        """Remove the candidates' models."""
        shutil.rmtree(self.folder, ignore_errors=True)
