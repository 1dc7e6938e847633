"""Headroom: a recipe whose decisions fall off with its error doubled is not crowned while one
that keeps them meets the goal, and the analysis says so (checked against hand-made margins)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from edgestudio.core.inputs.data_source import DataProvenance
from edgestudio.core.job_api.recipe import Tolerance
from edgestudio.core.quant.analyze import _OutputComparison
from edgestudio.core.quant.headroom import falls_off, headroom_caution, with_error_scaled
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.task_detection import TaskChoice
from edgestudio.core.quant.task_figures import TaskFigure, TaskResult
from edgestudio.core.quant.task_metrics import TaskMeter
from edgestudio.core.quant.tune import Candidate, headroom_text, pick_winner
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.core.quant.verdicts import analysis_verdict
from tests.sample_tuner import sample_tuner

REAL = DataProvenance("npz", 40, "/data/held-out.npz")


def test_a_loss_that_doubles_holds_and_one_that_leaps_falls_off() -> None:
    # 1 % lost, 2 % with the error doubled: decisions spread evenly near their boundary
    assert not falls_off(0.99, 0.98, allowance=0.01, resolution=0.0)
    # a little faster than the error where margins thicken away from the boundary (a VAD's
    # frames: 1.4 % → 3.0 %) still holds
    assert not falls_off(0.986, 0.970, allowance=0.01, resolution=0.001)
    # nothing lost, 35 % with the error doubled: the error has reached the bulk of the margins
    assert falls_off(1.0, 0.65, allowance=0.01, resolution=1 / 40)
    # one sample more on 40 is forgiven
    assert not falls_off(1.0, 0.975, allowance=0.01, resolution=1 / 40)
    assert falls_off(1.0, 0.925, allowance=0.01, resolution=1 / 40)
    np.testing.assert_allclose(
        with_error_scaled(np.array([1.0, 2.0]), np.array([1.5, 1.0])), [2.0, 0.0]
    )


def _classes(margins: np.ndarray, error: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-class scores whose float margin is ``margins`` and whose quantized copy moves each
    margin down by ``error`` (float picks class 0 on even samples, class 1 on odd ones)."""
    ref = np.stack([margins / 2, -margins / 2], axis=1)
    test = np.stack([(margins - error) / 2, -(margins - error) / 2], axis=1)
    ref[1::2], test[1::2] = ref[1::2, ::-1].copy(), test[1::2, ::-1].copy()
    return ref, test


def _compare(ref: np.ndarray, test: np.ndarray) -> TaskResult:
    comparison = _OutputComparison(["scores"], Tolerance())
    choice = TaskChoice("classification", "scores", "test")
    comparison.meters.append(TaskMeter(choice))
    comparison.stressed.append(TaskMeter(choice))
    for k in range(len(ref)):
        comparison.add({"scores": ref[k : k + 1]}, [test[k : k + 1]])
    (result,) = comparison.task_results()
    return result


def test_the_analysis_judges_its_decisions_again_at_doubled_error() -> None:
    """40 samples, margins from 1.2 to 3.1: an error of 1.0 flips none, doubled (2.0) flips the
    nine margins below 2 — the figure falls off; an error of 0.1 flips none either way."""
    margins = np.linspace(1.2, 3.1, 40)
    thin = _compare(*_classes(margins, 1.0))
    (top1,) = [f for f in thin.figures if f.key == "top1_agreement"]
    assert top1.value == 1.0
    flipped = int((margins < 2.0).sum())
    assert thin.at_double_error["top1_agreement"] == pytest.approx(1 - flipped / 40)
    assert "falls from 100.0 % to" in headroom_caution(thin)
    wide = _compare(*_classes(margins, 0.1))
    assert wide.at_double_error["top1_agreement"] == 1.0
    assert headroom_caution(wide) == ""

    verdict = analysis_verdict([], None, [], data=REAL, task=thin, tasks=[thin])
    assert verdict.level == "good" and "output error doubled" in verdict.headroom
    assert any("with the output error doubled" in d for d in verdict.diagnostics)
    assert "headroom:" in "\n".join(verdict.text_lines())


def test_integer_outputs_are_not_stressed() -> None:
    comparison = _OutputComparison(["tags"], Tolerance())
    choice = TaskChoice("ids", "tags", "test")
    comparison.meters.append(TaskMeter(choice))
    comparison.stressed.append(TaskMeter(choice))
    tags = np.array([[1, 2, 3]], np.int64)
    comparison.add({"tags": tags}, [tags])
    (result,) = comparison.task_results()
    assert result.at_double_error == {}  # ids have no error to double


def _candidate(number: int, ms: float, value: float, doubled: float) -> Candidate:
    from edgestudio.core.perf.perf_results import LatencyRow

    result = TaskResult("ctc", "probs", "", 40)
    result.figures = [TaskFigure("text_agreement", "reads", value, 0.99, 0.95)]
    result.at_double_error = {"text_agreement": doubled}
    c = Candidate(number, QuantRecipe(model="m.onnx"), "test", state="done")
    c.analysis = Analysis("f.onnx", "q.onnx", 40, task=result, data=REAL)
    c.latency = LatencyRow(model=f"q{number}", ep="CPUExecutionProvider", threads=1, median_ms=ms)
    c.judge(Goal.parse("text_agreement>=0.99"))
    return c


def test_the_fastest_recipe_with_headroom_wins_and_the_one_passed_over_is_named() -> None:
    goal = Goal.parse("text_agreement>=0.99")
    cliff = _candidate(1, 10.0, 1.0, 0.65)  # the corpus winner that read 42 % of other lines
    steady = _candidate(2, 30.0, 1.0, 1.0)  # A16W16
    assert cliff.met and cliff.holds is False and not cliff.settled
    assert steady.settled and steady.doubled_value == 1.0
    assert pick_winner([cliff, steady], goal, "latency") is steady
    said = headroom_text(steady, [cliff, steady], goal)
    assert "#1 (65.0 % at doubled error)" in said and "passed over" in said
    # nothing with headroom: the fastest that meets the goal wins, said to lack it
    assert pick_winner([cliff], goal, "latency") is cliff
    assert "without headroom" in headroom_text(cliff, [cliff], goal)
    # SQNR moves by a fixed 6 dB when its error doubles: no headroom test, nothing said
    sqnr = Goal.parse("sqnr>=30")
    assert sqnr.doubled(steady.analysis) is None  # type: ignore[arg-type]


def test_the_search_goes_on_past_a_winner_without_headroom(tmp_path: Path) -> None:
    tuner = sample_tuner(tmp_path, "text_agreement>=0.99", budget=12)
    try:
        tuner.queue = []
        cliff = _candidate(1, 10.0, 1.0, 0.65)
        cliff.recipe = dataclasses.replace(tuner.base, per_channel=True)
        tuner.candidates = [cliff]
        assert tuner.meets_word(cliff) == "no headroom"
        assert "without headroom" in tuner.verdict_of(cliff)
        step = tuner._next_recipe()  # met, but not with headroom: the ladder goes on
        assert step is not None and step[0].weight_type == "int16"
        steady = _candidate(2, 30.0, 1.0, 1.0)
        tuner.candidates.append(steady)
        assert tuner._next_recipe() is None  # met with headroom: the search may stop
        assert tuner.winner is steady and tuner.verdict_of(steady) == "meets the goal"
    finally:
        tuner.cleanup()
