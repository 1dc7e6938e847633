"""Recovery that holds, without a worker: the task metric right by construction (integer tags
judged identical over real positions, a small-alphabet CTC read as text with its blank first or
last, a Tanh vector judged as an embedding, every output that carries the task judged and the
worst named), the goal that follows the task, a search ladder that tries every family and ends
with A16W16, the calibration curve in words, and a sensitivity ranking that stops when the loss
is spread and claims no stability for a tie."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edgestudio.core.inputs.data_source import DataProvenance, DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.sensitivity import (
    EARLY_LOOK,
    LayerSensitivity,
    Sensitivity,
    loss_is_spread,
    rank_stability,
)
from edgestudio.core.quant.task_detection import TaskChoice, choose_tasks, detect_task, detect_tasks
from edgestudio.core.quant.task_metrics import TaskMeter
from edgestudio.core.quant.tune import (
    Candidate,
    SearchSpace,
    slower_than_float_text,
    speed_vs_float,
)
from edgestudio.core.quant.tune_goal import Goal, show_value
from edgestudio.core.quant.tune_ladder import combined_step, first_recipes, near_lossless_step
from edgestudio.core.quant.verdicts import analysis_verdict
from edgestudio.core.quant.winner_check import calibration_advice, calibration_subset, curve_points
from tests import models

REAL = DataProvenance("npz", 8, "/data/clips.npz")


# ----- the task metric ----------------------------------------------------------------------------
def test_integer_tags_are_judged_by_the_share_identical_over_real_positions() -> None:
    model = models.argmax_tagger()
    tags = np.array([[1, 2, 3, 4, 0, 0]], np.int64)
    choice = detect_task(model, {"tags": tags})
    assert choice.task == "ids" and "integers" in choice.why
    meter = TaskMeter(choice)
    mask = np.array([[1, 1, 1, 1, 0, 0]])
    # one real position differs, and both padding positions: 3 of 4 real tags identical
    meter.add(tags, np.array([[1, 2, 5, 4, 7, 7]], np.int64), mask)
    result = meter.result()
    (figure,) = result.figures
    assert figure.key == "identical_share" and figure.value == pytest.approx(3 / 4)
    assert "padding left out" in result.note
    assert result.examples == ["position (0, 2): 3 → 5"]
    # judged by identical tags, not by the relative error of the ids
    assert not any(f.key == "relative_error" for f in result.figures)


def test_a_small_alphabet_ctc_with_its_blank_last_is_read_as_text() -> None:
    model = models.digit_ctc()
    probs = np.zeros((1, 24, 11), np.float32)
    assert detect_task(model, {"probs": probs}).task == "tokens"  # 11 classes alone: unsure
    unsure = detect_task(model, {"probs": probs})
    assert "ctc" in unsure.alternatives and "--metric ctc" in unsure.unsure_text()
    choice = detect_task(model, {"probs": probs}, alphabet_size=10)
    assert choice.task == "ctc" and "dictionary" in choice.why

    def line(symbols: list[int]) -> np.ndarray:
        out = np.full((1, len(symbols), 11), 0.01, np.float32)
        for t, k in enumerate(symbols):
            out[0, t, k] = 1.0
        return out

    blank = 10
    meter = TaskMeter(choice, alphabet=list("0123456789"), spelled_by="digits.txt")
    meter.add(line([4, blank, 2, 2, blank, blank]), line([4, blank, 2, 2, blank, blank]))
    meter.add(line([7, blank, 1, blank, blank, blank]), line([7, blank, 7, blank, blank, blank]))
    result = meter.result()
    figures = {f.key: f.value for f in result.figures}
    assert figures["text_agreement"] == pytest.approx(0.5)  # "42" kept, "71" read as "77"
    assert figures["cer"] == pytest.approx(1 / 4)
    assert result.examples == ["line 1: '71' → '77'"]
    assert "characters of text" in result.note and "blank class 10" in result.note


def test_a_tanh_vector_is_an_embedding_not_300_classes() -> None:
    model = models.tanh_embedding()
    choice = detect_task(model, {"output": np.zeros((1, 300), np.float32)})
    assert choice.task == "embedding" and "Tanh" in choice.why
    assert choice.alternatives == ("classification",)  # said, with the way to choose it
    meter = TaskMeter(choice)
    rng = np.random.default_rng(0)
    for _ in range(4):
        f = np.tanh(rng.standard_normal((1, 300)))
        meter.add(f, f + 0.01 * rng.standard_normal((1, 300)))
    keys = [f.key for f in meter.result().figures]
    assert keys == ["cosine", "neighbour_agreement"]


def test_every_output_that_carries_the_task_is_judged_and_the_worst_named() -> None:
    model = models.three_frame_heads()
    outputs = {n: np.full((1, 40, 8), 0.5, np.float32) for n in ("onset", "frame", "offset")}
    choices = detect_tasks(model, outputs)
    assert [(c.output, c.task) for c in choices] == [
        ("onset", "multilabel"),
        ("frame", "multilabel"),
        ("offset", "multilabel"),
    ]
    # a recurrent state handed back is not judged; a user's --metric judges the first alone
    state = models.lstm_with_state()
    names = [o.name for o in state.graph.output]
    arrays = {n: np.zeros((1, 4, 12), np.float32) for n in names}
    assert all(c.output == names[0] for c in detect_tasks(state, arrays))
    assert len(choose_tasks(model, outputs, "signal")) == 1

    rng = np.random.default_rng(3)
    results = []
    for choice in choices:
        meter = TaskMeter(choice)
        for _ in range(4):
            f = rng.random((1, 40, 8))
            flips = 0.3 if choice.output == "offset" else 0.0  # the offset head loses most
            q = np.where(rng.random(f.shape) < flips, 1 - f, f)
            meter.add(f, q)
        results.append(meter.result())
    worst = max(results, key=lambda t: t.deciding_level())
    assert worst.output == "offset"
    verdict = analysis_verdict([], None, [], data=REAL, task=worst, tasks=results)
    assert verdict.level == "poor" and "'offset'" in verdict.task
    assert "worst of 3 outputs" in verdict.task
    assert any(r.startswith("offset: ") for r in verdict.reasons)


# ----- the goal and the search --------------------------------------------------------------------
def _analysis(task_choice: TaskChoice, figures: dict[str, float]) -> Analysis:
    meter = TaskMeter(task_choice)
    result = meter.result()
    from edgestudio.core.quant.task_figures import TaskFigure

    result.figures = [TaskFigure(k, k, v, 0.99, 0.95) for k, v in figures.items()]
    return Analysis("f.onnx", "q.onnx", 8, task=result, data=REAL)


def test_the_goal_follows_the_task_never_sqnr_when_a_task_figure_exists() -> None:
    assert Goal.parse("auto").is_auto and Goal.parse(" AUTO ").is_auto
    tags = _analysis(TaskChoice("ids", "tags", ""), {"identical_share": 0.998})
    assert Goal.for_task(tags).text() == "identical_share>=0.99"
    assert Goal.for_task(Analysis("f", "q", 1)).text() == "sqnr>=30"
    assert Goal.parse("auto").value(tags) is None  # not judged until fixed
    assert show_value(Goal.parse("identical_share>=0.99"), 0.9975) == "99.8 %"
    assert show_value(Goal.parse("top1_drop<=1"), 0.5) == "0.50 points"


def test_dynamic_is_tried_on_every_model_so_a_failing_static_family_is_not_the_end() -> None:
    base = QuantRecipe(model="m.onnx", calib=DataSource("npz", "d.npz"))
    conv = first_recipes(base, SearchSpace(), has_matmul=False, opset=17)
    modes = [r.mode for r, _ in conv]
    assert "dynamic" in modes and modes[0] == "qdq"  # a CNN: static first, dynamic after
    matmul = first_recipes(base, SearchSpace(), has_matmul=True, opset=17)
    assert matmul[0][0].mode == "dynamic"
    assert all(r.calib is None for r, _ in conv if r.mode == "dynamic")


def _done(number: int, recipe: QuantRecipe, value: float) -> Candidate:
    c = Candidate(number, recipe, "test", state="done", goal_value=value)
    return c


def test_the_ladder_combines_what_helped_then_ends_with_a16w16() -> None:
    goal = Goal.parse("text_agreement>=0.95")
    base = QuantRecipe(model="m.onnx", calib=DataSource("npz", "d.npz"))
    plain = dataclasses.replace(base, per_channel=True)
    placed = dataclasses.replace(plain, placement="compute-inputs")
    percentile = dataclasses.replace(plain, calib_method="percentile")
    candidates = [_done(1, plain, 0.25), _done(2, placed, 0.54), _done(3, percentile, 0.2)]
    tried: set[tuple[str, ...]] = set()
    step = combined_step(candidates, goal, tried, wide=True)
    assert step is not None
    recipe, why = step
    # the placement helped and is kept; percentile did not and is left out; 16-bit activations
    assert recipe.placement == "compute-inputs" and recipe.calib_method == "minmax"
    assert recipe.activation_type == "uint16" and recipe.per_channel
    assert "#2" in why
    assert combined_step(candidates, goal, tried, wide=True) is None  # not twice
    assert combined_step(candidates[:1], goal, set(), wide=False) is None  # nothing to combine

    last = near_lossless_step(candidates[1], base, set(), opset=17)
    assert last is not None
    assert last[0].weight_type == "int16" and last[0].activation_type == "uint16"
    assert last[0].per_channel and last[0].mode == "qdq" and "A16W16" in last[1]


def test_latency_against_float_is_said_and_a_slower_winner_in_words() -> None:
    assert speed_vs_float(0.62, 1.0) == "0.62× float"
    assert speed_vs_float(89.7, 60.9).endswith("(slower)")
    assert speed_vs_float(None, 1.0) == ""
    winner = Candidate(4, QuantRecipe(model="m.onnx"), "test", state="done")
    from edgestudio.core.perf.perf_results import LatencyRow

    winner.latency = LatencyRow(model="q", ep="CPUExecutionProvider", threads=1, median_ms=89.7)
    text = slower_than_float_text(winner, 60.9)
    assert "slower than the float model" in text and "89.700 vs 60.900 ms" in text
    assert slower_than_float_text(winner, 120.0) == ""


def test_the_calibration_curve_is_said_in_words() -> None:
    goal = Goal.parse("text_agreement>=0.95")
    rising = calibration_advice([(16, 0.71), (8, 0.54), (4, 0.3)], goal, "lines")
    assert rising.startswith("16 lines: 71.0 %; 8 lines: 54.0 %; 4 lines: 30.0 %")
    assert rising.endswith("more calibration data should help")
    flat = calibration_advice([(40, 0.99), (20, 0.99), (10, 0.99)], goal, "lines")
    assert "unlikely to help" in flat
    levels = calibration_advice([(32, 0.9), (16, 0.9), (8, 0.6)], goal)
    assert "levels off" in levels
    assert calibration_advice([(8, None), (16, 0.9)], goal) == ""
    assert curve_points(16) == [(4, "¼"), (8, "½")]
    assert curve_points(1) == []
    # as the tune calibrates: every other sample of the first 2·count when split
    even = DataSource("npz", "d.npz", part="even")
    assert calibration_subset(even, 4).samples == 7  # samples 0, 2, 4, 6
    assert calibration_subset(DataSource("npz", "d.npz", part="odd"), 4).samples == 8
    assert calibration_subset(DataSource("npz", "d.npz"), 4).samples == 4


# ----- sensitivity --------------------------------------------------------------------------------
def _layer(node: str, gain: float, halves: tuple[float, float]) -> LayerSensitivity:
    return LayerSensitivity(node, "Conv", 20.0, 0.5 + gain, gain, half_gains=halves)


def test_sensitivity_makes_no_stability_claim_about_a_tie_and_stops_when_spread() -> None:
    tied = [_layer(f"n{k}", 0.0, (0.0, 0.0)) for k in range(5)]
    rho, said = rank_stability(tied)
    assert rho is None and "no ranking" in said
    result = Sensitivity("top1_agreement", True, 0.9, "int16", "80 images", layers=tied)
    result.top_agreement = said
    assert "Spearman" not in result.stability_text()
    # four layers, none past the noise, more to try: stop
    assert loss_is_spread(tied[:EARLY_LOOK], noise=0.0125, planned=10)
    assert not loss_is_spread(tied[: EARLY_LOOK - 1], noise=0.0125, planned=10)
    helping = [*tied[: EARLY_LOOK - 1], _layer("big", 0.05, (0.04, 0.06))]
    assert not loss_is_spread(helping, noise=0.0125, planned=10)
    assert not loss_is_spread(tied[:EARLY_LOOK], noise=0.0125, planned=EARLY_LOOK)
    differing = [_layer(f"n{k}", 0.01 * k, (0.01 * k, 0.012 * k)) for k in range(5)]
    rho, _ = rank_stability(differing)
    assert rho == pytest.approx(1.0)


def test_the_last_rungs_are_kept_for_when_the_budget_is_nearly_spent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """With two candidates left and nothing meeting the goal, A16W16 comes before the rest of
    the queue: a search must not run out of budget before the near-lossless integer recipe."""
    from tests.sample_tuner import sample_tuner

    tuner = sample_tuner(tmp_path, "sqnr>=200", budget=4)
    queued = len(tuner.queue)
    assert tuner._next_recipe() is not None  # nothing done yet: the queue's first
    plain = dataclasses.replace(tuner.base, per_channel=True)
    tuner.candidates = [_done(1, plain, 40.0), _done(2, tuner.base, 39.0)]
    recipe, why = tuner._next_recipe() or (None, "")
    assert recipe is not None and recipe.weight_type == "int16" and "A16W16" in why
    assert len(tuner.queue) == queued - 1  # the rest of the queue waits
    tuner.cleanup()
