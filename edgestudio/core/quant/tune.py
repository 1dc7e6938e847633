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
from edgestudio.core.quant.quant_recipes import QUANT_MODES, QUANT_TARGETS, QuantRecipe, check_rules
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
        "identical_share": ">=",
        "next_token_agreement": ">=",
        "next_token_kl": "<=",
    }
    AUTO: ClassVar[str] = "auto"

    @classmethod
    def parse(cls, text: str) -> Goal:
        """``sqnr>=30`` → Goal("sqnr", 30.0); ``auto`` → the task's own figure at the bound its
        verdict calls good, fixed once the first candidate's analysis has detected the task."""
        if text.strip().lower() == cls.AUTO:
            return cls(cls.AUTO, 0.0)
        match = re.fullmatch(r"\s*(\w+)\s*(>=|<=)\s*([-+0-9.eE]+)\s*", text)
        if (
            not match
            or match.group(1) not in cls.METRICS
            or cls.METRICS[match.group(1)] != match.group(2)
        ):
            spelled = ", ".join(f"{k}{op}X" for k, op in cls.METRICS.items())
            raise GoalError(
                f"A goal reads 'auto' (the task's own figure) or one of {spelled} — sqnr in "
                f"dB, top1_drop in points, task figures as fractions (got '{text}')."
            )
        return cls(match.group(1), float(match.group(3)))

    @property
    def is_auto(self) -> bool:
        """True until the task's figure replaces ``auto`` (:meth:`for_task`)."""
        return self.metric == self.AUTO

    @classmethod
    def for_task(cls, analysis: Analysis | None) -> Goal:
        """The goal a task implies: its first figure at the bound its verdict calls good
        (``identical_share>=0.99`` for tags), output SQNR only when there is no task figure."""
        return cls.parse(recovery_goal(analysis))

    def text(self) -> str:
        """``sqnr>=30``."""
        if self.is_auto:
            return "auto (the task's own figure)"
        return f"{self.metric}{self.METRICS[self.metric]}{self.threshold:g}"

    def value(self, analysis: Analysis) -> float | None:
        """The candidate's figure for this goal (None when its analysis cannot say)."""
        if self.is_auto:
            return None
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
        return self.METRICS.get(self.metric, ">=") == ">="

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
    calibration_samples: int = 0  # how many samples calibrated it (0: dynamic, or unknown)
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
            "calibration_samples": self.calibration_samples,
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
    if "dynamic" in space.modes:
        # First on MatMul-heavy models, where it is the likeliest; on the others it still
        # comes before any escalation: when static quantization fails on an onnxruntime
        # error, dynamic is the family that may still run (an audio transcriber's did).
        dynamic: list[tuple[dict[str, Any], str]] = [
            ({"mode": "dynamic"}, "dynamic (activations quantized per run)")
        ]
        if True in space.per_channel:
            dynamic.append(({"mode": "dynamic", "per_channel": True}, "dynamic, per-channel"))
        tries = dynamic + tries if has_matmul else tries + dynamic
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


# One change from the per-channel recipe that may help, and how to spell it in a combination.
_COMBINABLE = ("placement", "calib_method", "smooth_quant", "reduce_range")


def combined_step(
    candidates: list[Candidate], goal: Goal, tried: set[tuple[str, ...]], wide: bool
) -> tuple[QuantRecipe, str] | None:
    """What helped, together: the single changes that brought an 8-bit per-channel QDQ recipe
    closer to the goal than plain per-channel (a placement, a calibration, SmoothQuant), taken
    all at once, with 16-bit activations when 16 bits are allowed and they helped too (or
    nothing else did). None when there is nothing to combine."""
    done = [c for c in candidates if c.state == "done" and c.goal_value is not None]
    plain = next(
        (
            c
            for c in done
            if c.recipe.mode == "qdq"
            and c.recipe.per_channel
            and not any(_changed(c.recipe, k) for k in _COMBINABLE)
            and c.recipe.activation_type in ("uint8", "int8")
            and not (c.recipe.int16 or c.recipe.adaptive_rounding)
        ),
        None,
    )
    if plain is None:
        return None
    changes: dict[str, Any] = {}
    helped: list[str] = []
    for c in done:
        r = c.recipe
        if (
            r.mode != "qdq"
            or not r.per_channel
            or r.int16
            or not goal.better(c.goal_value, plain.goal_value)
        ):
            continue
        for key in _COMBINABLE:
            if _changed(r, key) and key not in changes:
                changes[key] = getattr(r, key)
                helped.append(f"#{c.number}")
        if r.activation_type in ("uint16", "int16") and "activation_type" not in changes:
            changes["activation_type"] = r.activation_type
            helped.append(f"#{c.number}")
    if wide:
        changes.setdefault("activation_type", "uint16")
    if len(changes) < 2:  # one change alone was tried already
        return None
    recipe = dataclasses.replace(plain.recipe, **changes)
    identity = ("combined", recipe_key(recipe))
    if identity in tried:
        return None
    tried.add(identity)
    said = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in changes.items())
    return recipe, f"what helped, together ({said}; from {', '.join(helped) or 'A16'})"


def near_lossless_step(
    best: Candidate | None,
    base: QuantRecipe,
    tried: set[tuple[str, ...]],
    opset: int | None,
    per_channel: bool = True,
) -> tuple[QuantRecipe, str] | None:
    """The last integer rung before "out of reach": 16-bit activations and 16-bit weights per
    channel (A16W16). On hidden text lines it read 100 % where every 8-bit-weight recipe, and
    16-bit layers added one by one, stopped at 71 % (DESIGN.md part 7)."""
    start = best.recipe if best is not None and best.recipe.mode == "qdq" else base
    recipe = dataclasses.replace(
        start,
        mode="qdq",
        per_channel=per_channel,
        activation_type="uint16",
        weight_type="int16",
        int16=(),
        adaptive_rounding=False,
    )
    key = ("a16w16", recipe_key(recipe))
    if key in tried or not check_rules(recipe, opset).ok:
        return None
    tried.add(key)
    how = " per channel" if per_channel else ""
    return recipe, f"16-bit activations and weights{how} (A16W16): near-lossless integer"


def _changed(recipe: QuantRecipe, key: str) -> bool:
    """True when ``recipe`` sets ``key`` away from QuantRecipe's default."""
    declared = next(f for f in dataclasses.fields(QuantRecipe) if f.name == key)
    # every combinable field has a plain default (a value, not a factory)
    return bool(getattr(recipe, key) != declared.default)


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


@dataclass
class WinnerCheck:
    """One re-judgement of a winner: on the data split the other way round (calibration and
    evaluation swapped), or calibrated on fewer of its samples (the calibration curve)."""

    candidate: int  # the candidate's number
    kind: str  # "swapped" | "calibration"
    label: str  # for a person: "calibration and evaluation swapped", "¼ of the calibration"
    calibration_samples: int = 0  # how many samples calibrated it (0: not calibrated)
    goal_value: float | None = None
    met: bool = False
    state: str = "pending"  # pending, running, done, failed
    error: str = ""


CURVE_FRACTIONS = ((4, "¼"), (2, "½"))  # the calibration curve's points below "all"


def swapped_split(settings: TuneSettings) -> tuple[Any, Any, str] | None:
    """The data split the other way round: what judged now calibrates and what calibrated now
    judges (None on synthetic data, where both are the same draw)."""
    data = settings.data
    if getattr(data, "kind", "") == "synthetic":
        return None
    if settings.calib is not None:
        return data, settings.calib, "calibration and evaluation data swapped"
    return (
        dataclasses.replace(data, part="odd"),
        dataclasses.replace(data, part="even"),
        "odd-numbered samples calibrate, even-numbered ones judge (the split swapped)",
    )


def calibration_subset(source: Any, count: int) -> Any:
    """``source`` cut to its first ``count`` samples, as the tune calibrates on it: every other
    sample of the first ``2·count`` when it is one half of a split."""
    part = getattr(source, "part", "")
    cap = 2 * count - 1 if part == "even" else 2 * count if part == "odd" else count
    return dataclasses.replace(source, samples=cap)


def curve_points(samples: int) -> list[tuple[int, str]]:
    """The calibration curve's smaller sizes for a winner calibrated on ``samples``: ¼ and ½
    of them (each at least 1 and below the whole)."""
    points: list[tuple[int, str]] = []
    for divisor, word in CURVE_FRACTIONS:
        count = max(1, samples // divisor)
        if count < samples and count not in (c for c, _ in points):
            points.append((count, word))
    return points


def show_value(goal: Goal, value: float | None) -> str:
    """A goal's figure in its own unit: dB for SQNR, points for top1_drop, % for shares."""
    if value is None:
        return "-"
    if goal.metric == "sqnr":
        return f"{value:.1f} dB"
    if goal.metric == "top1_drop":
        return f"{value:.2f} points"
    if goal.metric in ("cosine", "max_abs", "next_token_kl"):
        return f"{value:.4g}"
    return f"{100 * value:.1f} %"


def calibration_advice(
    points: list[tuple[int, float | None]], goal: Goal, unit: str = "samples"
) -> str:
    """What the calibration curve says, in words: ``16 lines: 71 %; 8 lines: 54 % — more
    calibration data should help`` (``points``: calibration size → the goal's figure)."""
    known = sorted((n, v) for n, v in points if v is not None)
    if len(known) < 2:
        return ""
    said = "; ".join(f"{n} {unit}: {show_value(goal, v)}" for n, v in reversed(known))
    (n_small, v_small), (n_last, v_last), (n_all, v_all) = known[0], known[-2], known[-1]

    def gain(a: float, b: float) -> float:
        return (b - a) if goal.higher_is_better else (a - b)

    # a figure's resolution: one sample of the evaluation, or a decibel, or a point
    step = 1.0 if goal.metric in ("sqnr", "top1_drop") else 0.01
    if gain(v_last, v_all) > step:
        verdict = "more calibration data should help"
    elif gain(v_small, v_all) > step:
        verdict = (
            f"it gained from {n_small} to {n_last} and levels off by {n_all}: more data of "
            "the same kind is likely to help little; other kinds of sample may"
        )
    elif gain(v_small, v_all) < -step:
        verdict = "fewer samples did better: the calibration data may not match what judges"
    else:
        verdict = (
            f"flat from {n_small} to {n_all}: more calibration data of the same kind is "
            "unlikely to help"
        )
    return f"{said} — {verdict}"


def fold_text(candidate: Candidate, check: WinnerCheck, goal: Goal) -> str:
    """The winner on the other split, and whether it holds there."""
    if check.state == "failed":
        return f"#{candidate.number} with the split swapped could not be checked: {check.error}"
    spread = (
        abs(candidate.goal_value - check.goal_value)
        if candidate.goal_value is not None and check.goal_value is not None
        else None
    )
    shown = (
        f"{show_value(goal, candidate.goal_value)} as judged, "
        f"{show_value(goal, check.goal_value)} with the split swapped"
    )
    if spread is not None:
        spread_text = (
            f"{spread:.1f} dB"
            if goal.metric == "sqnr"
            else f"{spread:.2f} points"
            if goal.metric == "top1_drop"
            else f"{100 * spread:.1f} points"
            if goal.metric not in ("cosine", "max_abs", "next_token_kl")
            else f"{spread:.3g}"
        )
        shown += f" (spread {spread_text})"
    if candidate.met and not check.met:
        return f"#{candidate.number}: {shown} — it meets the goal on one split only: not crowned."
    if candidate.met:
        return f"#{candidate.number}: {shown} — it holds on both splits."
    return f"#{candidate.number}: {shown}."


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
    goal: Goal = field(default_factory=lambda: Goal(Goal.AUTO, 0.0))
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
