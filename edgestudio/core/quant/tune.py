"""Auto-tune: which quantization meets an accuracy goal at the lowest latency (or size).

Pure logic, no onnxruntime: the goal and how a candidate is scored, the sensible recipes to try
first, and the SQNR-guided exclusions that follow (exclude the worst layers, and keep an
exclusion only when it helps). :mod:`edgestudio.jobs.tuner` runs the candidates as jobs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from edgestudio.core.job_api.options import option
from edgestudio.core.perf.latency_stats import PRACTICAL_RATIO, median_ratio_interval
from edgestudio.core.perf.perf_results import LatencyRow
from edgestudio.core.quant.quant_recipes import QUANT_MODES, QuantRecipe, check_rules
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.serialise import from_json, to_json


class GoalError(ValueError):
    """A goal that cannot be read (``sqnr>=30``, ``top1_drop<=1``, ``max_abs<=0.05``)."""


@dataclass(frozen=True)
class Goal:
    """The accuracy a quantization must keep.

    ``sqnr``: output SQNR in dB, at least ``threshold``; ``top1_drop``: top-1 accuracy lost in
    percentage points (needs labelled data), at most ``threshold``; ``max_abs``: the largest
    absolute output error, at most ``threshold``.
    """

    metric: str = "sqnr"
    threshold: float = 30.0

    METRICS: ClassVar[dict[str, str]] = {
        "sqnr": ">=",
        "top1_drop": "<=",
        "max_abs": "<=",
        # Task figures of the analysis (fractions: 0.99 is 99 %).
        "top1_agreement": ">=",
        "position_agreement": ">=",
        "text_agreement": ">=",
        "cer": "<=",
        "cosine": ">=",
        "neighbour_agreement": ">=",
        "box_agreement": ">=",
        "frame_agreement": ">=",
        "f1": ">=",
        "region_f1": ">=",
        "mask_iou": ">=",
        "pixel_agreement": ">=",
        "relative_error": "<=",
    }

    @classmethod
    def parse(cls, text: str) -> Goal:
        """``sqnr>=30`` → Goal("sqnr", 30.0)."""
        match = re.fullmatch(r"\s*(\w+)\s*(>=|<=)\s*([-+0-9.eE]+)\s*", text)
        if (
            not match
            or match.group(1) not in cls.METRICS
            or cls.METRICS[match.group(1)] != match.group(2)
        ):
            spelled = ", ".join(f"{k}{op}X" for k, op in cls.METRICS.items())
            raise GoalError(
                f"A goal reads one of {spelled} — sqnr in dB, top1_drop in points, "
                f"task figures as fractions (got '{text}')."
            )
        return cls(match.group(1), float(match.group(3)))

    def text(self) -> str:
        """``sqnr>=30``."""
        return f"{self.metric}{self.METRICS[self.metric]}{self.threshold:g}"

    def value(self, analysis: Analysis) -> float | None:
        """The candidate's figure for this goal (None when its analysis cannot say)."""
        if self.metric == "sqnr":
            values = [o.sqnr_db for o in analysis.outputs if o.sqnr_db is not None]
            return min(values) if values else None
        if self.metric == "max_abs":
            values = [o.max_abs for o in analysis.outputs if o.max_abs is not None]
            return max(values) if values else None
        if self.metric != "top1_drop":  # a task figure, when the analysis measured it
            figures = {f.key: f.value for f in (analysis.task.figures if analysis.task else [])}
            return figures.get(self.metric)
        accuracy = analysis.accuracy
        if accuracy is None or accuracy.float_top1 is None or accuracy.quant_top1 is None:
            return None
        return (accuracy.float_top1 - accuracy.quant_top1) * 100

    def met(self, value: float | None) -> bool:
        """True when ``value`` reaches the goal."""
        if value is None:
            return False
        return value >= self.threshold if self.higher_is_better else value <= self.threshold

    @property
    def higher_is_better(self) -> bool:
        """True for figures a goal wants at least (SQNR, agreements)."""
        return self.METRICS[self.metric] == ">="

    def better(self, a: float | None, b: float | None) -> bool:
        """True when ``a`` is closer to the goal than ``b``."""
        if a is None:
            return False
        if b is None:
            return True
        return a > b if self.higher_is_better else a < b


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
    seconds: float = 0.0  # from start to the end of its benchmark (or its failure)
    started: float = field(default_factory=time.monotonic, repr=False)
    resumed: bool = False  # measured by an earlier tune: taken from its summary

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
            "latency_ms": self.latency_ms,
            "quant_bytes": self.quant_bytes,
            "excluded": list(self.recipe.exclude),
            "int16": list(self.recipe.int16),
            "seconds": round(self.seconds, 2),
            "resumed": self.resumed,
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
        )
        candidate.goal_value = goal.value(analysis)
        candidate.met = goal.met(candidate.goal_value)
        return candidate


def recipe_key(recipe: QuantRecipe) -> str:
    """A recipe's identity in a tune: every choice except where its model is written."""
    data = to_json(recipe)
    for name in ("output", "overwrite"):
        data.pop(name, None)
    return json.dumps(data, sort_keys=True, default=str)


def first_recipes(
    base: QuantRecipe, space: SearchSpace, has_matmul: bool, opset: int | None
) -> list[tuple[QuantRecipe, str]]:
    """The sensible recipes to try first, most likely good and fast first; ones that break
    onnxruntime's rules are left out."""
    tries: list[tuple[dict[str, Any], str]] = []
    if "qdq" in space.modes:
        tries.append(({"mode": "qdq"}, "static QDQ defaults"))
        if True in space.per_channel:
            # by the gain measured on real models (README: keeping integer)
            tries.append(({"mode": "qdq", "per_channel": True}, "per-channel weights"))
            if "uint16" in space.activation_types:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "activation_type": "uint16"},
                        "16-bit activations (A16W8): accuracy first",
                    )
                )
            for placement in space.placements:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "placement": placement},
                        f"per-channel, quantizers on {placement.replace('-', ' ')} only",
                    )
                )
            tries.append(
                (
                    {"mode": "qdq", "per_channel": True, "adaptive_rounding": True},
                    "per-channel, Conv/MatMul/Gemm weights rounded adaptively (GPTQ)",
                )
            )
            if has_matmul and "compute-inputs" in space.placements:
                tries.append(
                    (
                        {
                            "mode": "qdq",
                            "per_channel": True,
                            "placement": "compute-inputs",
                            "smooth_quant": 0.5,
                        },
                        "per-channel, compute inputs, SmoothQuant α=0.5 (activation "
                        "outliers moved into the MatMul weights)",
                    )
                )
            if True in space.reduce_range:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "reduce_range": True},
                        "per-channel, reduce-range (no saturation without VNNI)",
                    )
                )
            if "percentile" in space.calib_methods:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "calib_method": "percentile"},
                        "per-channel, percentile calibration (outliers clipped)",
                    )
                )
    if "dynamic" in space.modes and has_matmul:
        tries.append(({"mode": "dynamic"}, "dynamic (MatMul-heavy models)"))
        if True in space.per_channel:
            tries.append(({"mode": "dynamic", "per_channel": True}, "dynamic, per-channel"))
    out = []
    for changes, why in tries:
        recipe = dataclasses.replace(base, **changes)
        if not QUANT_MODES[recipe.mode].calibrated:
            recipe = dataclasses.replace(recipe, calib=None)
        if check_rules(recipe, opset).ok:
            out.append((recipe, why))
    return out


def exclusion_step(
    best: Candidate, goal: Goal, tried: set[tuple[str, ...]], step: int
) -> tuple[QuantRecipe, str] | None:
    """The next exclusion to try from the closest candidate: its worst layers, doubling in
    number at each step (1, 2, 4, …) until one meets the goal."""
    if best.analysis is None:
        return None
    count = 2**step
    worst = best.analysis.worst_excludable(count, best.recipe.exclude)
    if not worst:
        return None
    exclude = tuple(sorted({*best.recipe.exclude, *worst}))
    if exclude in tried:
        return None
    tried.add(exclude)
    return (
        dataclasses.replace(best.recipe, exclude=exclude),
        f"#{best.number} without its {len(worst)} worst layer(s): {', '.join(worst[:3])}"
        + ("…" if len(worst) > 3 else ""),
    )


def int16_step_applies(recipe: QuantRecipe) -> bool:
    """Whether :func:`int16_step` can widen ``recipe``: an 8-bit QDQ one."""
    return recipe.mode == "qdq" and recipe.activation_type in ("uint8", "int8")


ROUNDED_CLOSEST = 2  # how many of the closest 8-bit recipes are tried again, rounded adaptively


def rounding_step(
    candidates: list[Candidate], goal: Goal, tried: set[tuple[str, ...]]
) -> tuple[QuantRecipe, str] | None:
    """One of the closest 8-bit QDQ recipes again, its Conv/MatMul/Gemm weights rounded
    adaptively (GPTQ) where it rounded them to nearest: the slower pass, tried last, on the
    placements and calibrations that came closest. PP-OCRv5 rec on 40 held-out lines:
    per-channel with quantizers on compute inputs read 97.5 % of the lines like float, rounded
    adaptively 100 % (with SmoothQuant, 97.5 % either way: so the closest two are tried)."""
    # rounded to nearest, 8-bit everywhere: a rounded candidate is a try, not a base
    eight_bit = [
        c
        for c in candidates
        if c.state == "done"
        and c.goal_value is not None
        and int16_step_applies(c.recipe)
        and not c.recipe.adaptive_rounding
        and not c.recipe.int16
    ]

    def closer(a: Candidate, b: Candidate) -> int:
        return (
            -1
            if goal.better(a.goal_value, b.goal_value)
            else int(goal.better(b.goal_value, a.goal_value))
        )

    for best in sorted(eight_bit, key=functools.cmp_to_key(closer))[:ROUNDED_CLOSEST]:
        recipe = best.recipe
        key = ("adaptive-rounding", recipe_key(recipe))
        if key in tried:
            continue
        tried.add(key)
        return (
            dataclasses.replace(recipe, adaptive_rounding=True),
            f"#{best.number} with its weights rounded adaptively (GPTQ)",
        )
    return None


def int16_step(
    best: Candidate, tried: set[tuple[str, ...]], step: int
) -> tuple[QuantRecipe, str] | None:
    """The next mixed-precision try from the closest 8-bit QDQ candidate: its worst layers in
    16-bit (the rest 8-bit, nothing in float), doubling in number at each step."""
    recipe = best.recipe
    if best.analysis is None or not int16_step_applies(recipe):
        return None
    worst = best.analysis.worst_excludable(2**step, (*recipe.exclude, *recipe.int16))
    if not worst:
        return None
    wide = tuple(sorted({*recipe.int16, *worst}))
    if ("int16", *wide) in tried:
        return None
    tried.add(("int16", *wide))
    return (
        dataclasses.replace(recipe, int16=wide),
        f"#{best.number} with its {len(worst)} worst layer(s) in 16-bit: "
        f"{', '.join(worst[:3])}" + ("…" if len(worst) > 3 else ""),
    )


def failure_cause(error: str) -> str:
    """What a failure says with its numbers, paths and quoted names taken out: two candidates
    with the same cause fail for the same reason."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|/\S+|\d+(\.\d+)?", "_", error)
    return re.sub(r"\s+", " ", text).strip()[:300]


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


def recovery_goal(analysis: Analysis | None) -> str:
    """The goal that recovering a run's accuracy aims at: its task's first figure at the bound
    the verdict calls good (``text_agreement>=0.98``), else output SQNR ≥ 30 dB."""
    task = analysis.task if analysis is not None else None
    for figure in task.figures if task is not None else []:
        op = ">=" if figure.higher_is_better else "<="
        if Goal.METRICS.get(figure.key) == op:
            # a goal's top1_drop is in points; the task figure is a fraction
            bound = figure.good * 100 if figure.key == "top1_drop" else figure.good
            return f"{figure.key}{op}{bound:g}"
    return "sqnr>=30"


def synthetic_goal_warning(data: Any, goal: Goal) -> str | None:
    """What a goal on synthetic data can and cannot say, before the tune starts."""
    if getattr(data, "kind", "") != "synthetic":
        return None
    return (
        f"The goal {goal.text()} will be judged on synthetic inputs: the tune then shows "
        "which recipes run and how far their numbers move on random data, not which one is "
        "accurate on yours. Give real samples with --data for a goal that means something."
    )


def pick_winner(candidates: list[Candidate], goal: Goal, objective: str) -> Candidate | None:
    """The candidate that meets the goal at the lowest objective; else the closest to it."""
    done = [c for c in candidates if c.state == "done"]
    meeting = [c for c in done if c.met and c.objective(objective) is not None]
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
    goal: Goal = field(default_factory=Goal)
    calib: Any = None  # a DataSource to calibrate on; None: the even half of ``data``
    # Declared once: the tune command's options and the tune window's fields follow.
    objective: str = option(
        "latency",
        "--objective",
        "what to minimise among the recipes that meet the goal",
        ("latency", "size"),
        label="Minimise:",
    )
    provider: str = "CPUExecutionProvider"
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
    ray_address: str | None = None
    base: QuantRecipe | None = None  # start from this recipe's choices (a run's context menu)
    shapes: tuple[str, ...] = ()  # input overrides for every candidate and its analysis
    ranges: tuple[str, ...] = ()
    # An earlier tune's summary (jobs.tuner.tuner_summary): its measured candidates are taken
    # as they are, not quantized, analysed and timed again
    resume: dict[str, Any] | None = None

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
