"""Benchmark verdicts: how a quantized model's latency compares with its float original's,
said only outside the noise, with the likely cause when it is slower."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgestudio.core.perf.latency_stats import median_ratio_interval


def bench_verdicts(results: Sequence[dict[str, Any]]) -> list[str]:
    """How each quantized model compares with its float original (same provider and threads).

    "Slower" and "faster" are said only where the difference is outside the noise: the
    bootstrap interval of the ratio of medians over the measured runs excludes 1 (and the ratio
    is more than a few percent from it); otherwise "no measurable difference", with the
    interval. Rows without raw runs fall back to the medians alone and say so.
    """
    floats = {
        (r.get("device", ""), r["ep"], r["threads"]): r
        for r in results
        if r.get("median_ms") is not None and not r.get("quantized_ops")
    }
    lines = []
    for r in results:
        ops = r.get("quantized_ops") or []
        base = floats.get((r.get("device", ""), r["ep"], r["threads"]))
        if not ops or r.get("median_ms") is None or base is None or base["median_ms"] <= 0:
            continue
        name, original = r["model"].rsplit("/", 1)[-1], base["model"].rsplit("/", 1)[-1]
        if r.get("device"):
            name = f"{name} (on {r['device']})"
        if r.get("samples_ms") and base.get("samples_ms"):
            interval = median_ratio_interval(r["samples_ms"], base["samples_ms"])
        else:  # no raw runs to judge the spread: say the ratio, claim nothing
            ratio = r["median_ms"] / base["median_ms"]
            lines.append(
                f"{name} runs at {ratio:.2f}× the median time of {original} (no "
                "per-run timings kept, so no test against the noise)."
            )
            continue
        times = f"{r['median_ms']:.3f} vs {base['median_ms']:.3f} ms"
        if interval.slower:
            lines.append(
                f"{name} is SLOWER than its float original {original}: "
                f"{interval.text()} the median latency ({times}). "
                f"Likely cause: {slow_cause(ops, base['median_ms'])}"
            )
        elif interval.faster:
            lines.append(
                f"{name} is faster than {original}: {interval.text()} the median "
                f"latency ({times}; {1 / interval.ratio:.2f}× speed-up)."
            )
        else:
            lines.append(
                f"{name} and {original}: no measurable difference — {interval.text()} "
                f"the median latency ({times}); the run-to-run spread covers it."
            )
    return lines


def slow_cause(quantized_ops: Sequence[str], float_ms: float) -> str:
    """The most likely reason a quantized model is slower, from the ops it contains."""
    ops = set(quantized_ops)
    if "ConvInteger" in ops:
        return (
            "dynamic quantization turned Conv into ConvInteger, which has no fast kernel in "
            "onnxruntime's CPU provider; quantize CNNs statically (QDQ), or quantize only "
            "MatMul (--op-type MatMul)."
        )
    if ops & {"QLinearConv", "QLinearMatMul"}:
        return (
            "QOperator kernels with int8 activations (s8s8) are slow on x86; use uint8 "
            "activations, and note that without VNNI (AVX-VNNI/AVX512-VNNI) x86 gains "
            "little from int8."
        )
    if "DequantizeLinear" in ops:
        if float_ms < 0.5:
            return (
                "at this size the Quantize/DequantizeLinear of activations costs more than "
                "the integer kernels save."
            )
        return (
            "QDQ pairs that onnxruntime does not fuse into integer kernels run as separate "
            "DequantizeLinear/QuantizeLinear nodes (profile the model to see them); on x86 "
            "without VNNI int8 kernels gain little."
        )
    if "DynamicQuantizeLinear" in ops:
        return (
            "dynamic quantization computes activation scales on every run; on small "
            "inputs or without VNNI that costs more than it saves."
        )
    return "the quantized kernels are not faster on this CPU (no VNNI?)."
