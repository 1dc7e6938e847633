"""A tune's goal: the figure a recipe must reach (the task's metric by default, never SQNR
when the task has one), how a candidate's analysis is scored against it, and how it is shown."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from edgestudio.core.quant.headroom import DECISION_FIGURES, falls_off
from edgestudio.core.quant.quant_results import Analysis


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

    def doubled(self, analysis: Analysis) -> float | None:
        """The goal's figure with the output error doubled (None when it is no decision
        figure, or the analysis did not measure it)."""
        if analysis.task is None or self.metric not in DECISION_FIGURES:
            return None
        return analysis.task.at_double_error.get(self.metric)

    def holds(self, analysis: Analysis, value: float | None) -> bool | None:
        """Whether a candidate meeting the goal keeps it with its error doubled (its decisions
        have headroom); None when that cannot be said (no decision figure, or not met)."""
        doubled = self.doubled(analysis)
        if doubled is None or value is None or not self.met(value):
            return None
        resolution = 1.0 / max(1, analysis.samples)
        return not falls_off(value, doubled, 1.0 - self.threshold, resolution)

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
