"""Verdicts: what a number means for the user, with the thresholds used and what to try next.

An analysis gets a verdict — good, acceptable or poor — only on representative data (the user's
own); on synthetic inputs it is a *pipeline check* with no verdict. The task metric decides
(:mod:`edgestudio.core.quant.task_metrics`: the text read, the class picked, the neighbour kept),
with output SQNR and cosine as diagnostics; without one, the worst output figure decides. A
benchmark calls a quantized model slower or faster than its float original only beyond the noise
(a bootstrap interval of the ratio of medians). Pure Python: the CLI, the GUI and reports share it.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edgestudio.core.inputs.data_source import DataProvenance
from edgestudio.core.quant.failed_modes import DYNAMIC, PER_CHANNEL, REDUCE_RANGE
from edgestudio.core.quant.headroom import doubled_figures, headroom_caution
from edgestudio.core.quant.sample_bounds import evidence_text
from edgestudio.core.quant.task_figures import TaskResult

LEVELS = ("good", "acceptable", "poor")

# (good at or above, acceptable at or above); below the second is poor.
SQNR_DB = (30.0, 20.0)
COSINE = (0.999, 0.99)
TOP1_AGREEMENT = (0.99, 0.95)
# Accuracy drop in percentage points: (good at or below, acceptable at or below).
TOP1_DROP_POINTS = (1.0, 3.0)
# Absolute SQNR colour scale of the per-layer plots (dB): the same thresholds, one legend.
SQNR_SCALE = (
    (SQNR_DB[0], "good", "#2e7d32"),
    (SQNR_DB[1], "acceptable", "#f9a825"),
    (float("-inf"), "poor", "#c62828"),
)


# The same bands in neutral greys, for figures on synthetic data: they show where the error is
# largest without a colour that reads as a verdict.
NEUTRAL_SQNR_SCALE = (
    (SQNR_DB[0], f"≥ {SQNR_DB[0]:g} dB", "#c5d3e6"),
    (SQNR_DB[1], f"{SQNR_DB[1]:g}–{SQNR_DB[0]:g} dB", "#7b93b3"),
    (float("-inf"), f"< {SQNR_DB[1]:g} dB", "#2f4360"),
)


def sqnr_bands(representative: bool) -> list[tuple[float, str, str]]:
    """(lower bound in dB, label, colour) per band, best first: the verdict's colours and words
    on the user's data, neutral greys and plain dB ranges on synthetic data."""
    if not representative:
        return list(NEUTRAL_SQNR_SCALE)
    labels = {
        "good": f"good ≥ {SQNR_DB[0]:g} dB",
        "acceptable": f"acceptable {SQNR_DB[1]:g}–{SQNR_DB[0]:g} dB",
        "poor": f"poor < {SQNR_DB[1]:g} dB",
    }
    return [(bound, labels[level], colour) for bound, level, colour in SQNR_SCALE]


def band_of(sqnr_db: float, bands: Sequence[tuple[float, str, str]]) -> tuple[float, str, str]:
    """The band ``sqnr_db`` falls in."""
    return next(b for b in bands if sqnr_db >= b[0])


@dataclass
class Verdict:
    """A level, the figures that decided it, the data they were computed on, what to try next.

    ``level`` is None when the data cannot support a verdict (synthetic inputs): the figures
    are then a *pipeline check* and ``why`` says how to get a verdict.
    """

    level: str | None
    reasons: list[str] = field(default_factory=list)
    thresholds: str = ""
    suggestions: list[str] = field(default_factory=list)
    why: str = ""  # why there is no verdict (level None)
    data: str = ""  # what the figures were computed on, for a person
    task: str = ""  # the task metric that decided, in words
    diagnostics: list[str] = field(default_factory=list)  # figures shown, not deciding
    headroom: str = ""  # a caution: the decisions fall off with the error doubled
    # what a missing verdict is called: synthetic data's pipeline check, or real data that
    # cannot tell (the float model decided alike on every sample)
    unjudged: str = "Pipeline check"

    @property
    def label(self) -> str:
        """``Good`` … or, when there is no verdict, ``Pipeline check`` / ``Not judged``."""
        return self.level.capitalize() if self.level else self.unjudged

    def text_lines(self) -> list[str]:
        """The verdict for a terminal or a report."""
        if self.level is None:
            lines = [f"verdict: none — {self.unjudged.lower()}: " + "; ".join(self.reasons) + "."]
            lines.append(f"  why: {self.why}")
        else:
            lines = [f"verdict: {self.level.upper()} — " + "; ".join(self.reasons)]
        if self.data:
            lines.append(f"  data: {self.data}")
        if self.task:
            lines.append(f"  metric: {self.task}")
        lines += [f"  diagnostic: {d}" for d in self.diagnostics]
        if self.headroom:
            lines.append(f"  headroom: {self.headroom}")
        if self.level is not None:
            lines.append(f"  thresholds: {self.thresholds}")
        lines += [f"  try: {s}" for s in self.suggestions]
        return lines


VERDICT_COLOURS = {level: colour for _, level, colour in SQNR_SCALE}
NO_VERDICT_COLOUR = "#5f6b7a"


def verdict_html(verdict: Verdict) -> str:
    """The verdict (or the pipeline check) as HTML, with the data and the metric named beside
    it: the Quantization tab and the report show the same text."""
    grey = '<span style="color:#666">{}</span>'
    lines = [
        f'<b style="color:{VERDICT_COLOURS.get(verdict.level or "", NO_VERDICT_COLOUR)}">'
        f"{html.escape(verdict.label)}</b>: {html.escape('; '.join(verdict.reasons))}."
    ]
    if verdict.level is None:
        lines.append(html.escape(f"No verdict: {verdict.why}"))
    if verdict.data:
        lines.append(grey.format(html.escape(f"Data: {verdict.data}.")))
    if verdict.task:
        lines.append(grey.format(html.escape(f"Metric: {verdict.task}.")))
    if verdict.diagnostics:
        lines.append(
            grey.format(
                html.escape("Diagnostic (not deciding): " + "; ".join(verdict.diagnostics) + ".")
            )
        )
    if verdict.headroom:
        lines.append(f'<span style="color:#b26a00">{html.escape(verdict.headroom)}</span>')
    tips = "".join(f"<li>{html.escape(t)}</li>" for t in verdict.suggestions)
    if tips:
        lines.append(f"Try:<ul style='margin:0'>{tips}</ul>")
    if verdict.level is not None:
        lines.append(grey.format(html.escape(f"Thresholds — {verdict.thresholds}.")))
    return "<br>".join(lines)


def sqnr_level(sqnr_db: float | None) -> str | None:
    """``good``/``acceptable``/``poor`` for one SQNR (None: no signal to judge)."""
    if sqnr_db is None:
        return None
    return next(level for bound, level, _ in SQNR_SCALE if sqnr_db >= bound)


def _level(value: float, bounds: tuple[float, float], higher_is_better: bool = True) -> str:
    good, fair = bounds
    if higher_is_better:
        return "good" if value >= good else "acceptable" if value >= fair else "poor"
    return "good" if value <= good else "acceptable" if value <= fair else "poor"


def _output_figures(outputs: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    judged: list[tuple[str, str]] = []
    for o in outputs:
        sqnr = o.get("sqnr_db")
        if o.get("non_finite"):
            judged.append(
                (
                    "poor",
                    f"output '{o['output']}' has {o['non_finite']:,} inf/NaN "
                    "values where the float model's are finite",
                )
            )
        elif isinstance(sqnr, float):
            judged.append((_level(sqnr, SQNR_DB), f"output '{o['output']}' SQNR {sqnr:.1f} dB"))
        cosine = o.get("cosine")
        if isinstance(cosine, float):
            judged.append((_level(cosine, COSINE), f"cosine {cosine:.4f}"))
    return judged


def _accuracy_figure(accuracy: dict[str, Any]) -> tuple[str, str] | None:
    if "float_top1" in accuracy and "quant_top1" in accuracy:
        drop = 100 * (accuracy["float_top1"] - accuracy["quant_top1"])
        return (
            _level(drop, TOP1_DROP_POINTS, higher_is_better=False),
            f"top-1 {100 * accuracy['quant_top1']:.2f} % vs "
            f"{100 * accuracy['float_top1']:.2f} % float ({drop:+.2f} points drop)"
            if drop >= 0
            else f"top-1 {100 * accuracy['quant_top1']:.2f} % (no drop)",
        )
    if "top1_agreement" in accuracy:
        agree = accuracy["top1_agreement"]
        return _level(agree, TOP1_AGREEMENT), f"top-1 agreement {100 * agree:.1f} %"
    return None


SQNR_THRESHOLDS = (
    f"good: output SQNR ≥ {SQNR_DB[0]:g} dB, cosine ≥ {COSINE[0]}, top-1 drop ≤ "
    f"{TOP1_DROP_POINTS[0]:g} point (agreement ≥ {100 * TOP1_AGREEMENT[0]:g} %); "
    f"acceptable: ≥ {SQNR_DB[1]:g} dB, ≥ {COSINE[1]}, ≤ {TOP1_DROP_POINTS[1]:g} "
    f"points (≥ {100 * TOP1_AGREEMENT[1]:g} %); poor below"
)


def analysis_verdict(
    outputs: Sequence[dict[str, Any]],
    accuracy: dict[str, Any] | None,
    layers: Sequence[dict[str, Any]],
    quantized_ops: Sequence[str] = (),
    per_channel: bool | None = None,
    has_matmul: bool = False,
    warnings: Sequence[str] = (),
    *,
    data: DataProvenance,
    task: TaskResult | None = None,
    tasks: Sequence[TaskResult] = (),
    excludable: Collection[str] | None = None,
    failed: Mapping[str, str] | None = None,
) -> Verdict:
    """Judge a quantized model from its analysis figures.

    The task metric decides when there is one (the text read, the class picked, the nearest
    neighbour kept); output SQNR and cosine then stay diagnostics. Without one the worst of
    the output figures decides. On synthetic ``data`` there is no verdict at all: the figures
    are a pipeline check. ``excludable``: the nodes the quantized model really quantized (the
    only ones worth excluding). ``failed``: choices that already failed on this model (see
    :mod:`failed_modes`), never suggested again.
    """
    output_figures = _output_figures(outputs)
    judged: list[tuple[str, str]] = []
    thresholds = SQNR_THRESHOLDS
    task_text = ""
    deciding = [f for f in task.figures if f.deciding] if task is not None else []
    if deciding and task is not None and task.task not in ("generic",):
        # Several outputs carry the task: each is judged, the worst decides and is named.
        each = [t for t in tasks if any(f.deciding for f in t.figures)] or [task]
        named = len(each) > 1
        judged = [
            (f.level(), f"{f'{t.output}: ' if named else ''}{f.label} {f.text()}")
            for t in each
            for f in t.figures
            if f.deciding
        ]
        thresholds = "; ".join(
            dict.fromkeys(
                f"{f.label}: {f.bounds_text()}" for t in each for f in t.figures if f.deciding
            )
        )
        task_text = f"{task.label} on output '{task.output}' — {task.why}" + (
            f" (the worst of {len(each)} outputs judged: "
            + ", ".join(f"'{t.output}' by {t.task}" for t in each)
            + ")"
            if named
            else ""
        )
        diagnostics = [f"{f.label} {f.text()}" for f in task.figures if not f.deciding]
        diagnostics += [
            f"{f.label} with the output error doubled {100 * v:.1f} %"
            for f, v in doubled_figures(task)
        ]
        if data.representative:  # what so few samples can show of a share (not deciding)
            diagnostics += [
                f"{f.label}: {said}"
                for f in task.figures
                if f.deciding and f.higher_is_better
                if (said := evidence_text(f.value, f.count, f.good))
            ]
        diagnostics += [text for _, text in output_figures]
    else:
        judged = list(output_figures)
        extra = _accuracy_figure(accuracy) if accuracy else None
        if extra is not None:
            judged.append(extra)
        diagnostics = []
    verdict = Verdict(
        None, [], thresholds, data=data.text(), task=task_text, diagnostics=diagnostics
    )
    if not data.representative:
        verdict.reasons = [text for _, text in judged] or ["no figure could be computed"]
        verdict.why = (
            "computed on synthetic inputs: this proves the quantized model runs and "
            "how far its numbers move on random data, not how accurate it is on "
            "yours. Evaluate on real samples of every input (images, audio, text, "
            ".npz or test_data_set_* folders) to get a verdict."
        )
        return verdict
    if task is not None and task.one_sided:
        verdict.reasons = [text for _, text in judged]
        verdict.unjudged = "Not judged"
        verdict.why = f"{task.note} Agreement on such data would call any model good."
        return verdict
    if not judged:
        verdict.reasons = ["no output figure could be judged (outputs all zero?)"]
        verdict.why = "nothing to judge"
        return verdict
    level = max((lv for lv, _ in judged), key=LEVELS.index)
    verdict.level = level
    verdict.headroom = headroom_caution(task) if task is not None and deciding else ""
    verdict.reasons = [text for lv, text in judged if lv == level] or [t for _, t in judged]
    if level != "good":
        verdict.suggestions = _suggestions(
            layers, quantized_ops, per_channel, has_matmul, warnings, excludable, failed or {}
        )
    return verdict


def _suggestions(
    layers: Sequence[dict[str, Any]],
    quantized_ops: Sequence[str],
    per_channel: bool | None,
    has_matmul: bool,
    warnings: Sequence[str],
    excludable: Collection[str] | None,
    failed: Mapping[str, str],
) -> list[str]:
    """What to try next; never what the run already did, never a change that changes nothing,
    never a choice that already failed on this model (said instead, with its cause)."""
    tips = []
    static = "QuantizeLinear" in quantized_ops or any(
        op.startswith("QLinear") for op in quantized_ops
    )
    if per_channel is False and PER_CHANNEL not in failed:
        tips.append("per-channel weights (--per-channel): one scale per output channel")
    if any("simulated QDQ graph" in w for w in warnings) and REDUCE_RANGE not in failed:
        tips.append("reduce-range (--reduce-range): onnxruntime's x86 kernels saturate here")
    # Only nodes the run quantized: excluding any other one gives the same model again.
    # A mapping names the node to act on for each (a fused Relu's producer; "" for none).
    targets = excludable if isinstance(excludable, Mapping) else None
    ranked: list[dict[str, Any]] = []
    for r in sorted(
        (
            r
            for r in layers
            if (isinstance(r.get("sqnr_db"), float) or r.get("non_finite"))
            and (excludable is None or r.get("node") in excludable)
        ),
        key=lambda r: (not r.get("non_finite"), r.get("sqnr_db") or 0.0),
    ):
        node = targets.get(r["node"], r["node"]) if targets is not None else r.get("node")
        if node and node not in {x["node"] for x in ranked}:
            ranked.append({**r, "node": node})
        if len(ranked) == 3:
            break
    if ranked:
        names = ", ".join(
            f"{r['node']} (inf/NaN)"
            if r.get("non_finite")
            else f"{r['node']} ({r['sqnr_db']:.1f} dB)"
            for r in ranked
        )
        tips.append(f"exclude the worst quantized layers from quantization: {names}")
    if static and has_matmul and DYNAMIC not in failed:
        tips.append(
            "dynamic quantization (--mode dynamic) for transformer-like models: "
            "activations are quantized per run, not from calibrated ranges"
        )
    if static:
        tips.append(
            "another calibration method (percentile or entropy instead of minmax), "
            "with real calibration data"
        )
    tips += [
        f"{choice} is not suggested: it failed on this model before ({cause[:160]})"
        for choice, cause in sorted(failed.items())
    ]
    return tips
