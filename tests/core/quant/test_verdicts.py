"""Verdicts on analyses and benchmarks, top-1 only for class scores, and the profile's mapping
of fused kernels back to the nodes they stand for."""

from __future__ import annotations

import numpy as np

from edgestudio.core.inputs.data_source import DataProvenance
from edgestudio.core.perf.bench_verdicts import bench_verdicts
from edgestudio.core.perf.profile_parse import GraphNode, summarize_profile
from edgestudio.core.quant.analyze import is_class_scores
from edgestudio.core.quant.verdicts import analysis_verdict, sqnr_level

REAL = DataProvenance("npz", 100, "eval.npz")


def _out(sqnr: float, cosine: float) -> dict[str, object]:
    return {"output": "y", "sqnr_db": sqnr, "cosine": cosine}


def test_analysis_verdict_levels_and_thresholds() -> None:
    good = analysis_verdict([_out(38.0, 0.9999)], None, [], data=REAL)
    assert good.level == "good" and not good.suggestions
    assert "≥ 30 dB" in good.thresholds
    fair = analysis_verdict([_out(24.0, 0.995)], None, [], data=REAL)
    assert fair.level == "acceptable"
    layers = [{"node": "attn", "sqnr_db": 3.0}, {"node": "fc", "sqnr_db": 25.0}]
    poor = analysis_verdict(
        [_out(1.8, 0.71)],
        None,
        layers,
        quantized_ops=["DequantizeLinear", "QuantizeLinear"],
        per_channel=False,
        has_matmul=True,
        data=REAL,
    )
    assert poor.level == "poor"
    assert "1.8 dB" in poor.reasons[0]
    tips = " ".join(poor.suggestions)
    assert "--per-channel" in tips and "attn (3.0 dB)" in tips and "--mode dynamic" in tips


def test_accuracy_drop_decides_when_it_is_worst() -> None:
    acc = {"float_top1": 0.90, "quant_top1": 0.85, "top1_agreement": 0.9, "samples": 100}
    verdict = analysis_verdict([_out(35.0, 0.9999)], acc, [], data=REAL)
    assert verdict.level == "poor" and "5.00 points drop" in verdict.reasons[0]


def test_sqnr_colour_scale_is_absolute() -> None:
    assert [sqnr_level(v) for v in (45.0, 30.0, 25.0, 19.9)] == [
        "good",
        "good",
        "acceptable",
        "poor",
    ]
    assert sqnr_level(None) is None


def test_bench_names_a_slower_quantized_model_and_its_cause() -> None:
    def runs(median: float) -> list[float]:  # a tight spread: the ratios are beyond noise
        return [median * (1 + d) for d in (-0.02, -0.01, 0.0, 0.0, 0.01, 0.02)]

    rows = [
        {
            "model": "/m/cnn.onnx",
            "ep": "CPUExecutionProvider",
            "threads": 1,
            "median_ms": 2.0,
            "quantized_ops": [],
            "samples_ms": runs(2.0),
        },
        {
            "model": "/m/cnn_dyn.onnx",
            "ep": "CPUExecutionProvider",
            "threads": 1,
            "median_ms": 16.0,
            "quantized_ops": ["ConvInteger", "DynamicQuantizeLinear"],
            "samples_ms": runs(16.0),
        },
        {
            "model": "/m/cnn_qdq.onnx",
            "ep": "CPUExecutionProvider",
            "threads": 1,
            "median_ms": 1.0,
            "quantized_ops": ["DequantizeLinear", "QuantizeLinear"],
            "samples_ms": runs(1.0),
        },
    ]
    lines = bench_verdicts(rows)
    assert "cnn_dyn.onnx is SLOWER" in lines[0] and "8.00×" in lines[0]
    assert "ConvInteger" in lines[0]
    assert "2.00× speed-up" in lines[1]


def test_top1_is_only_for_class_scores() -> None:
    assert is_class_scores(np.zeros((1, 10)))
    assert not is_class_scores(np.zeros((1, 1)))  # one score (a VAD probability)
    assert not is_class_scores(np.zeros((1, 84, 2100)))  # a detector's boxes


def test_fused_kernels_are_mapped_by_whole_names_only() -> None:
    # A tensor called "1" and a node called "x" must not match every kernel whose name
    # contains those characters; a Constant feeding weights is not an activation.
    graph = [
        GraphNode("x", "Conv", ("image", "w0"), ("1",)),
        GraphNode("w1", "Constant", (), ("w1_out",)),
        GraphNode("conv_12", "Conv", ("1", "w1_out"), ("c12",)),
        GraphNode("bn_12", "BatchNormalization", ("c12", "s", "b", "m", "v"), ("bn12.tmp_1",)),
        GraphNode("relu", "Relu", ("bn12.tmp_1",), ("r",)),
    ]
    events = [
        {
            "cat": "Node",
            "name": f"{k}_kernel_time",
            "dur": 10,
            "args": {"op_name": "Conv", "provider": "CPUExecutionProvider"},
        }
        for k in ("bn12.tmp_1_nchwc", "1_nchwc", "ReorderOutput_token_12")
    ]
    summary = summarize_profile(events, graph, runs=1)
    covers = {n["node"]: n["covers"] for n in summary["nodes"]}
    assert covers["bn12.tmp_1_nchwc"] == ["bn_12", "conv_12"]
    assert covers["1_nchwc"] == ["x"]
    assert covers["ReorderOutput_token_12"] == []


def test_a_check_that_compared_only_some_cases_says_so() -> None:
    from edgestudio.core.job_api.report import CheckCase, EquivalenceCheck, OutputCheck

    ok = CheckCase("batch=1", [OutputCheck("y", 1e-6, 1e-6, True, [1, 10])])
    skipped = CheckCase("batch=3", skipped="the model fixes its batch")
    partial = EquivalenceCheck(1e-3, 1e-3, True, "", True, "", [ok, skipped])
    assert partial.status() == "passed"
    assert partial.verdict() == "equivalent on 1 of 2 input cases (1 could not be checked)"
    whole = EquivalenceCheck(1e-3, 1e-3, True, "", True, "", [ok])
    assert whole.verdict() == "equivalent"


def test_a_verdict_not_given_is_a_sentence() -> None:
    from edgestudio.core.quant.verdicts import Verdict

    unjudged = Verdict(
        None, ["top-1 agreement 100.0 %"], why="one class only", unjudged="Not judged"
    )
    first = unjudged.text_lines()[0]
    assert first == "verdict: none — not judged: top-1 agreement 100.0 %."
