"""Verdicts: what a number means for the user, with the thresholds used and what to try next.

An analysis is *good*, *acceptable* or *poor* by its output SQNR, cosine similarity and accuracy
figures (the worst of them decides); a benchmark says when a quantized model is slower than its
float original and names the likely cause. Pure Python: the CLI, the GUI and reports share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

LEVELS = ("good", "acceptable", "poor")

# (good at or above, acceptable at or above); below the second is poor.
SQNR_DB = (30.0, 20.0)
COSINE = (0.999, 0.99)
TOP1_AGREEMENT = (0.99, 0.95)
# Accuracy drop in percentage points: (good at or below, acceptable at or below).
TOP1_DROP_POINTS = (1.0, 3.0)
# Absolute SQNR colour scale of the per-layer plots (dB): the same thresholds, one legend.
SQNR_SCALE = ((SQNR_DB[0], "good", "#2e7d32"), (SQNR_DB[1], "acceptable", "#f9a825"),
              (float("-inf"), "poor", "#c62828"))


@dataclass
class Verdict:
    """A level, the figures that decided it, and what to try next."""

    level: str
    reasons: list[str] = field(default_factory=list)
    thresholds: str = ""
    suggestions: list[str] = field(default_factory=list)

    def text_lines(self) -> list[str]:
        """The verdict for a terminal or a report."""
        lines = [f"verdict: {self.level.upper()} — " + "; ".join(self.reasons)]
        lines.append(f"  thresholds: {self.thresholds}")
        lines += [f"  try: {s}" for s in self.suggestions]
        return lines

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"level": self.level, "reasons": self.reasons, "thresholds": self.thresholds,
                "suggestions": self.suggestions}


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


def analysis_verdict(outputs: Sequence[dict[str, Any]], accuracy: dict[str, Any] | None,
                     layers: Sequence[dict[str, Any]], quantized_ops: Sequence[str] = (),
                     per_channel: bool | None = None, has_matmul: bool = False,
                     warnings: Sequence[str] = ()) -> Verdict:
    """Judge a quantized model from its analysis figures (the worst criterion decides)."""
    judged: list[tuple[str, str]] = []
    for o in outputs:
        sqnr = o.get("sqnr_db")
        if isinstance(sqnr, float):
            judged.append((_level(sqnr, SQNR_DB), f"output '{o['output']}' SQNR {sqnr:.1f} dB"))
        cosine = o.get("cosine")
        if isinstance(cosine, float):
            judged.append((_level(cosine, COSINE), f"cosine {cosine:.4f}"))
    if accuracy:
        if "float_top1" in accuracy and "quant_top1" in accuracy:
            drop = 100 * (accuracy["float_top1"] - accuracy["quant_top1"])
            judged.append((_level(drop, TOP1_DROP_POINTS, higher_is_better=False),
                           f"top-1 {100 * accuracy['quant_top1']:.2f} % vs "
                           f"{100 * accuracy['float_top1']:.2f} % float ({drop:+.2f} points "
                           "drop)" if drop >= 0 else
                           f"top-1 {100 * accuracy['quant_top1']:.2f} % (no drop)"))
        elif "top1_agreement" in accuracy:
            agree = accuracy["top1_agreement"]
            judged.append((_level(agree, TOP1_AGREEMENT), f"top-1 agreement {100 * agree:.1f} %"))
    thresholds = (f"good: output SQNR ≥ {SQNR_DB[0]:g} dB, cosine ≥ {COSINE[0]}, top-1 drop ≤ "
                  f"{TOP1_DROP_POINTS[0]:g} point (agreement ≥ {100 * TOP1_AGREEMENT[0]:g} %); "
                  f"acceptable: ≥ {SQNR_DB[1]:g} dB, ≥ {COSINE[1]}, ≤ {TOP1_DROP_POINTS[1]:g} "
                  f"points (≥ {100 * TOP1_AGREEMENT[1]:g} %); poor below")
    if not judged:
        return Verdict("acceptable", ["no output figure could be judged (outputs all zero?)"],
                       thresholds)
    level = max((lv for lv, _ in judged), key=LEVELS.index)
    reasons = [text for lv, text in judged if lv == level] or [t for _, t in judged]
    verdict = Verdict(level, reasons, thresholds)
    if level != "good":
        verdict.suggestions = _suggestions(layers, quantized_ops, per_channel, has_matmul,
                                           warnings)
    return verdict


def _suggestions(layers: Sequence[dict[str, Any]], quantized_ops: Sequence[str],
                 per_channel: bool | None, has_matmul: bool,
                 warnings: Sequence[str]) -> list[str]:
    tips = []
    static = "QuantizeLinear" in quantized_ops or any(op.startswith("QLinear")
                                                      for op in quantized_ops)
    if per_channel is False:
        tips.append("per-channel weights (--per-channel): one scale per output channel")
    if any("simulated QDQ graph" in w for w in warnings):
        tips.append("reduce-range (--reduce-range): onnxruntime's x86 kernels saturate here")
    ranked = sorted((r for r in layers if isinstance(r.get("sqnr_db"), float)),
                    key=lambda r: r["sqnr_db"])[:3]
    if ranked:
        names = ", ".join(f"{r['node']} ({r['sqnr_db']:.1f} dB)" for r in ranked)
        tips.append(f"exclude the worst layers from quantization: {names}")
    if static and has_matmul:
        tips.append("dynamic quantization (--mode dynamic) for transformer-like models: "
                    "activations are quantized per run, not from calibrated ranges")
    if static:
        tips.append("another calibration method (percentile or entropy instead of minmax), "
                    "with real calibration data")
    return tips


def bench_verdicts(results: Sequence[dict[str, Any]]) -> list[str]:
    """For each quantized model slower than its float original (same provider and threads):
    the measured ratio and the likely cause."""
    floats = {(r["ep"], r["threads"]): r for r in results
              if "median_ms" in r and not r.get("quantized_ops")}
    lines = []
    for r in results:
        ops = r.get("quantized_ops") or []
        base = floats.get((r["ep"], r["threads"]))
        if not ops or "median_ms" not in r or base is None or base["median_ms"] <= 0:
            continue
        ratio = r["median_ms"] / base["median_ms"]
        name, original = r["model"].rsplit("/", 1)[-1], base["model"].rsplit("/", 1)[-1]
        if ratio <= 1.05:
            lines.append(f"{name} runs at {ratio:.2f}× the time of {original} "
                         f"({1 / ratio:.2f}× speed-up).")
            continue
        lines.append(f"{name} is SLOWER than its float original {original}: {ratio:.2f}× the "
                     f"median latency ({r['median_ms']:.3f} vs {base['median_ms']:.3f} ms). "
                     f"Likely cause: {slow_cause(ops, base['median_ms'])}")
    return lines


def slow_cause(quantized_ops: Sequence[str], float_ms: float) -> str:
    """The most likely reason a quantized model is slower, from the ops it contains."""
    ops = set(quantized_ops)
    if "ConvInteger" in ops:
        return ("dynamic quantization turned Conv into ConvInteger, which has no fast kernel in "
                "onnxruntime's CPU provider; quantize CNNs statically (QDQ), or quantize only "
                "MatMul (--op-type MatMul).")
    if ops & {"QLinearConv", "QLinearMatMul"}:
        return ("QOperator kernels with int8 activations (s8s8) are slow on x86; use uint8 "
                "activations, and note that without VNNI (AVX-VNNI/AVX512-VNNI) x86 gains "
                "little from int8.")
    if "DequantizeLinear" in ops:
        if float_ms < 0.5:
            return ("at this size the Quantize/DequantizeLinear of activations costs more than "
                    "the integer kernels save.")
        return ("QDQ pairs that onnxruntime does not fuse into integer kernels run as separate "
                "DequantizeLinear/QuantizeLinear nodes (profile the model to see them); on x86 "
                "without VNNI int8 kernels gain little.")
    if "DynamicQuantizeLinear" in ops:
        return ("dynamic quantization computes activation scales on every run; on small "
                "inputs or without VNNI that costs more than it saves.")
    return "the quantized kernels are not faster on this CPU (no VNNI?)."
