"""A task figure and the figures of one analysis: what a quantized model got right for its
task, graded by the bounds a verdict uses (measured by :mod:`.task_metrics`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgestudio.core.quant.task_names import TASK_LABELS


@dataclass(frozen=True)
class TaskFigure:
    """One task figure with the bounds that grade it."""

    key: str  # top1_agreement, cer, …
    label: str  # "top-1 agreement"
    value: float
    good: float
    acceptable: float
    higher_is_better: bool = True
    unit: str = "%"  # "%" shows value × 100; "" shows it as it is
    deciding: bool = True  # False: shown beside the verdict, not judged (a mask's pixels)
    count: int = 0  # the independent decisions a share is over (0: not such a share)

    def text(self) -> str:
        """``97.5 %``, ``1.20 points`` or ``0.9991``."""
        if self.unit == "points":
            return f"{100 * self.value:.2f} points"
        return f"{100 * self.value:.1f} %" if self.unit == "%" else f"{self.value:.4f}"

    def level(self) -> str:
        """good / acceptable / poor by the bounds."""
        if self.higher_is_better:
            return (
                "good"
                if self.value >= self.good
                else "acceptable"
                if self.value >= self.acceptable
                else "poor"
            )
        return (
            "good"
            if self.value <= self.good
            else "acceptable"
            if self.value <= self.acceptable
            else "poor"
        )

    def bounds_text(self) -> str:
        """``good ≥ 99 %, acceptable ≥ 95 %``."""
        op = "≥" if self.higher_is_better else "≤"

        def show(v: float) -> str:
            if self.unit == "points":
                return f"{100 * v:.3g} point{'s' if v != 0.01 else ''}"
            return f"{100 * v:.3g} %" if self.unit == "%" else f"{v:.3g}"

        bounds = f"good {op} {show(self.good)}, acceptable {op} {show(self.acceptable)}"
        return bounds if self.deciding else f"not deciding ({bounds})"


@dataclass
class TaskResult:
    """The task figures of one analysis (the first figures decide the verdict)."""

    task: str
    output: str
    why: str
    samples: int
    figures: list[TaskFigure] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)  # a few disagreements, for a person
    chosen_by: str = "detected"
    note: str = ""  # what the figures cannot say (too few samples for a neighbour test, …)
    one_sided: bool = False  # the float model decided alike on every sample: no verdict
    alternatives: list[str] = field(default_factory=list)  # metrics that may fit better
    # decision figures judged again with the output error doubled (:mod:`.headroom`)
    at_double_error: dict[str, float] = field(default_factory=dict)

    def deciding_level(self) -> tuple[int, float]:
        """How badly this result fares, for naming the worst of several outputs: its level
        (0 good, 1 acceptable, 2 poor) and, within a level, how far its worst deciding figure
        lies past the bound that calls it good (a share of that bound)."""
        order = ("good", "acceptable", "poor")
        worst = (0, 0.0)
        for f in self.figures:
            if not f.deciding:
                continue
            gap = (f.good - f.value) if f.higher_is_better else (f.value - f.good)
            scale = abs(f.good) or 1.0
            worst = max(worst, (order.index(f.level()), gap / scale))
        return worst

    @property
    def label(self) -> str:
        """The task in words."""
        return TASK_LABELS.get(self.task, self.task)
