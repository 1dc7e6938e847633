"""Auto-tune: which quantization meets an accuracy goal at the lowest latency (or size).

Pure logic, no onnxruntime: what a tune is given (:class:`TuneSettings`), a measured
candidate, its speed against float and the winner's choice. The goal lives in
:mod:`.tune_goal`, the recipes tried rung by rung in :mod:`.tune_ladder`, the winner's
re-judging in :mod:`.winner_check`; :mod:`edgestudio.jobs.tuner` runs the candidates as jobs.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from edgestudio.core.job_api.command import spelled
from edgestudio.core.job_api.options import option
from edgestudio.core.perf.latency_stats import PRACTICAL_RATIO, median_ratio_interval
from edgestudio.core.perf.perf_results import LatencyRow
from edgestudio.core.perf.providers import resolve_provider
from edgestudio.core.quant.quant_recipes import QUANT_TARGETS, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.core.serialise import from_json, to_json


@dataclass(frozen=True)
class SearchSpace:
    """What the tuner may vary."""

    modes: tuple[str, ...] = ("qdq", "dynamic")
    per_channel: tuple[bool, ...] = (False, True)
    reduce_range: tuple[bool, ...] = (False, True)
    calib_methods: tuple[str, ...] = ("minmax", "percentile")
    activation_types: tuple[str, ...] = ("uint8", "uint16")
    placements: tuple[str, ...] = ("compute-inputs", "compute")
    exclusions: bool = True  # exclude the worst layers when no recipe meets the goal


@dataclass
class Candidate:
    """One recipe tried: what came out of quantizing, analysing and timing it."""

    number: int
    recipe: QuantRecipe
    why: str  # how the search came to it
    state: str = "pending"  # pending, running, done, failed
    error: str | None = None
    quant_bytes: int | None = None
    analysis: Analysis | None = None
    latency: LatencyRow | None = None
    goal_value: float | None = None
    met: bool = False
    # the goal's figure with the output error doubled, and whether the goal holds there
    # (None: no decision figure, or the goal not met)
    doubled_value: float | None = None
    holds: bool | None = None
    seconds: float = 0.0  # from start to the end of its benchmark (or its failure)
    calibration_samples: int = 0  # how many samples calibrated it (0: dynamic, or unknown)
    # probability outputs its calibration left unable to reach 0.5 (Quantization.undecidable)
    undecidable: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic, repr=False)
    resumed: bool = False  # measured by an earlier tune: taken from its summary

    def judge(self, goal: Goal) -> None:
        """Score the candidate's analysis against ``goal``: its figure, whether it meets it,
        and whether it still does with its error doubled."""
        if self.analysis is None:
            return
        self.goal_value = goal.value(self.analysis)
        self.met = goal.met(self.goal_value)
        self.doubled_value = goal.doubled(self.analysis)
        self.holds = goal.holds(self.analysis, self.goal_value)

    @property
    def settled(self) -> bool:
        """True when it meets the goal with headroom (or headroom cannot be tested)."""
        return self.met and self.holds is not False

    @property
    def latency_ms(self) -> float | None:
        """Median latency, when measured."""
        return self.latency.median_ms if self.latency is not None else None

    def objective(self, objective: str) -> float | None:
        """The figure to minimise: median latency in ms, or the model's size in bytes."""
        return (
            self.latency_ms
            if objective == "latency"
            else (float(self.quant_bytes) if self.quant_bytes is not None else None)
        )

    def summary(self) -> dict[str, Any]:
        """Plain JSON for reports."""
        return {
            "number": self.number,
            "why": self.why,
            "state": self.state,
            "error": self.error,
            "command": self.recipe.command_line(),
            "mode": self.recipe.title().removeprefix("Quantize: "),
            "goal_value": self.goal_value,
            "met": self.met,
            "doubled_value": self.doubled_value,
            "holds": self.holds,
            "latency_ms": self.latency_ms,
            "quant_bytes": self.quant_bytes,
            "excluded": list(self.recipe.exclude),
            "int16": list(self.recipe.int16),
            "seconds": round(self.seconds, 2),
            "resumed": self.resumed,
            "calibration_samples": self.calibration_samples,
            "undecidable": list(self.undecidable),
            # what a resumed tune takes back
            "recipe": to_json(self.recipe),
            "analysis": to_json(self.analysis),
            "latency": to_json(self.latency),
        }

    @classmethod
    def measured_before(
        cls, number: int, recipe: QuantRecipe, summary: dict[str, Any], goal: Goal
    ) -> Candidate | None:
        """``recipe`` as an earlier tune measured it (its ``summary``), judged by ``goal``;
        None when that candidate was not fully measured."""
        analysis = from_json(Analysis, summary.get("analysis"))
        latency = from_json(LatencyRow, summary.get("latency"))
        if summary.get("state") != "done" or analysis is None or latency is None:
            return None
        candidate = cls(
            number,
            recipe,
            f"{summary.get('why', '')} (measured by the earlier tune)",
            state="done",
            error=summary.get("error"),
            quant_bytes=summary.get("quant_bytes"),
            analysis=analysis,
            latency=latency,
            resumed=True,
            calibration_samples=summary.get("calibration_samples", 0),
            undecidable=list(summary.get("undecidable", [])),
        )
        candidate.judge(goal)
        return candidate


def speed_vs_float(candidate_ms: float | None, float_ms: float | None) -> str:
    """``0.62× float`` / ``1.31× float (slower)``: a candidate's median latency against the
    float model's, measured in the same benchmark; "" when either is unknown."""
    if not candidate_ms or not float_ms:
        return ""
    ratio = candidate_ms / float_ms
    return f"{ratio:.2f}× float" + (" (slower)" if ratio > 1 + PRACTICAL_RATIO else "")


def slower_than_float_text(winner: Candidate, float_ms: float | None) -> str:
    """The sentence a winner slower than the float model needs, or ""."""
    ms = winner.latency_ms
    if not ms or not float_ms or ms <= float_ms * (1 + PRACTICAL_RATIO):
        return ""
    return (
        f"#{winner.number} is slower than the float model ({ms:.3f} vs {float_ms:.3f} ms, "
        f"{ms / float_ms:.2f}×, in the same benchmark): it meets the goal but keeping the "
        "float model is faster here; quantize for size, or for a target whose integer "
        "kernels pay."
    )


def headroom_text(winner: Candidate, candidates: list[Candidate], goal: Goal) -> str:
    """What the doubled-error test says of the winner, in words: a winner with no headroom,
    or the faster candidates passed over for want of it ("" when there is nothing to say)."""
    from edgestudio.core.quant.tune_goal import show_value

    if winner.met and winner.holds is False:
        return (
            f"#{winner.number} meets the goal on this data without headroom: with its output "
            f"error doubled it reads {show_value(goal, winner.doubled_value)} — the decisions "
            "it changes grow much faster than its error, so inputs a little harder than these will "
            "likely fall short. No candidate tried kept the goal at doubled error (16-bit "
            "activations and weights usually do)."
        )
    faster = [c for c in candidates if (c.latency_ms or 0) < (winner.latency_ms or 0)]
    passed = [c for c in faster if c.met and c.holds is False and c is not winner]
    if not winner.settled or not passed:
        return ""
    named = ", ".join(
        f"#{c.number} ({show_value(goal, c.doubled_value)} at doubled error)" for c in passed
    )
    return (
        f"Faster candidates met the goal but were passed over for want of headroom: {named} — "
        "the decisions they change grow much faster than their error, so inputs a little harder "
        f"than these would likely fall short; #{winner.number}'s decisions hold with its "
        f"error doubled ({show_value(goal, winner.doubled_value)})."
    )


def latency_ties(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates not measurably slower than the fastest of them: the bootstrap interval of
    the ratio of their median latencies (over the measured runs) does not exclude a tie."""
    timed = [c for c in candidates if c.latency_ms is not None]
    if not timed:
        return []
    fastest = min(timed, key=lambda c: (c.latency_ms or 0.0, c.number))
    ties = []
    for c in timed:
        a, b = c.latency, fastest.latency
        if c is fastest or a is None or b is None:
            ties.append(c)
        elif a.samples_ms and b.samples_ms:
            if not median_ratio_interval(a.samples_ms, b.samples_ms).slower:
                ties.append(c)
        elif (c.latency_ms or 0.0) <= (fastest.latency_ms or 0.0) * (1 + PRACTICAL_RATIO):
            ties.append(c)  # no runs kept to test against the noise: a near-equal median
    return ties


def pick_winner(candidates: list[Candidate], goal: Goal, objective: str) -> Candidate | None:
    """The candidate that meets the goal at the lowest objective — among those that keep it
    with their error doubled, when any does —; else the closest to it."""
    done = [c for c in candidates if c.state == "done"]
    meeting = [c for c in done if c.met and c.objective(objective) is not None]
    meeting = [c for c in meeting if c.settled] or meeting
    if meeting:
        return min(meeting, key=lambda c: (c.objective(objective), c.number))
    best: Candidate | None = None
    for c in done:
        if best is None or goal.better(c.goal_value, best.goal_value):
            best = c
    return best


def parse_minutes(text: str) -> float:
    """A time budget in minutes (above 0)."""
    try:
        value = float(text)
    except ValueError as exc:
        raise ValueError(f"give minutes as a number, e.g. 5 (got '{text}')") from exc
    if value <= 0:
        raise ValueError(f"the minutes must be above 0 (got '{text}')")
    return value


@dataclass
class TuneSettings:
    """A tune: the model, its data, the goal, what to minimise, where, and how long."""

    model: str
    data: Any  # a DataSource: the evaluation samples (and, without ``calib``, both halves)
    goal: Goal = spelled(
        default_factory=lambda: Goal(Goal.AUTO, 0.0),
        flag="--goal",
        parse=Goal.parse,
        help="auto (the task's own figure at the bound its verdict calls good: "
        "text_agreement>=0.99 for a recogniser, identical_share>=0.99 for tags; output "
        "SQNR only for a model with no task figure), sqnr>=DB (output SQNR), "
        "top1_drop<=POINTS (needs labels), max_abs<=ERROR, or a task figure as a fraction: "
        "top1_agreement>=0.99, text_agreement>=0.99, cer<=0.01, cosine>=0.999, "
        "neighbour_agreement>=0.95, box_agreement>=0.95, frame_agreement>=0.99, f1>=0.98, "
        "region_f1>=0.98, mask_iou>=0.95 (default auto)",
    )
    calib: Any = None  # a DataSource to calibrate on; None: the even half of ``data``
    # Declared once: the tune command's options and the tune window's fields follow.
    objective: str = option(
        "latency",
        "--objective",
        "what to minimise among the recipes that meet the goal",
        ("latency", "size"),
        label="Minimise:",
    )
    provider: str = spelled(
        "CPUExecutionProvider",
        "--ep",
        parse=resolve_provider,
        help="the provider latency is measured on (default CPUExecutionProvider)",
    )
    threads: int = option(
        1, "--threads", "intra-op threads for the latency", label="threads", minimum=1, maximum=64
    )
    budget: int = option(
        12, "--budget", "candidates at most", label="candidates, at most", minimum=1, maximum=200
    )
    minutes: float | None = option(
        None,
        "--minutes",
        "stop starting candidates after this long",
        metavar="M",
        label="minutes",
        placeholder="no limit",
        parse=parse_minutes,
        show=repr,
    )
    workers: int = option(
        2,
        "--workers",
        "candidates quantized and analysed side by side (their jobs share the session's queue)",
        label="workers",
        minimum=1,
        maximum=64,
    )
    seed: int = 0
    space: SearchSpace = field(default_factory=SearchSpace)
    integer_only: bool = option(
        False,
        "--integer-only",
        "never keep a layer in float: when "
        "no recipe meets the goal, move its worst layers to 16-bit "
        "instead of excluding them",
        label="Integer only (no float fallback)",
    )
    bench_runs: int = option(
        50,
        "--bench-runs",
        "timed runs per candidate",
        label="timed runs per candidate",
        minimum=3,
        maximum=100_000,
    )
    ray_address: str | None = spelled(
        None,
        "--ray",
        parse=str,
        metavar="ADDRESS",
        help="run candidates as tasks on the Ray cluster at ADDRESS (pip install "
        "'edgestudio[cluster]'); 'local' starts one on this machine",
    )
    base: QuantRecipe | None = None  # start from this recipe's choices (a run's context menu)
    shapes: tuple[str, ...] = ()  # input overrides for every candidate and its analysis
    ranges: tuple[str, ...] = ()
    # An earlier tune's summary (jobs.tuner.tuner_summary): its measured candidates are taken
    # as they are, not quantized, analysed and timed again
    resume: dict[str, Any] | None = None
    target: str = option(
        "cpu",
        "--target",
        "the accelerator the recipe is for: 'qnn-htp' tries only what the Hexagon NPU takes "
        "(QDQ with onnxruntime's QNN config, uint8/uint16 activations) and judges every "
        "candidate on the emulated NPU; latencies stay this CPU's",
        choices=QUANT_TARGETS,
        label="For target:",
    )
    check_winner: bool = option(
        True,
        "--no-check-winner",
        "skip re-judging the winner with the data split the other way round and "
        "calibrated on ¼ and ½ of its samples (three more quantizations)",
        label="Check the winner on the swapped split and a calibration curve",
    )

    def split(self) -> tuple[Any, Any, str]:
        """The data to calibrate on, the data to judge on, and how they were chosen.

        A candidate scored on the samples that calibrated it looks better than it is (one
        scored 84.8 % in-sample and 79.2 % held out): given only ``data``, its even-numbered
        samples calibrate and its odd-numbered ones judge."""
        if self.calib is not None:
            return (
                self.calib,
                self.data,
                f"calibrated on {self.calib.describe()}, judged on {self.data.describe()}",
            )
        if getattr(self.data, "kind", "") == "synthetic":
            return self.data, self.data, "synthetic data: calibration and evaluation alike"
        return (
            dataclasses.replace(self.data, part="even"),
            dataclasses.replace(self.data, part="odd"),
            f"{self.data.describe()} split in two: even-numbered samples calibrate, "
            "odd-numbered ones judge (no sample does both; --calib gives calibration data "
            "of its own)",
        )


def no_positives_text(candidates: list[Candidate]) -> str:
    """When calibration left candidates unable to decide 'yes' on a probability output, that
    in words with what to do ("" when none was)."""
    hit = [c for c in candidates if c.undecidable]
    if not hit:
        return ""
    outputs = sorted({name for c in hit for name in c.undecidable})
    return (
        f"{', '.join(f'#{c.number}' for c in hit)} can never decide 'yes' at "
        f"{', '.join(repr(o) for o in outputs)}: calibration left the output a range that "
        "stops below 0.5, so none of the calibration samples was a positive case (audio "
        "windows without speech, images without the object): calibrate on samples that "
        "include it."
    )
