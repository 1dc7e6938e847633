"""What a share measured on a few samples can show: the exact lower bound (checked against the
binomial sums written out by hand), the samples a goal needs, and where the app says it — the
verdict's diagnostics on real data and the tune's winner."""

from __future__ import annotations

from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from edgestudio.core.inputs.data_source import DataProvenance, DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.sample_bounds import evidence_text, lower_bound, samples_to_show
from edgestudio.core.quant.task_figures import TaskFigure, TaskResult
from edgestudio.core.quant.tune import Candidate, TuneSettings
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.core.quant.verdicts import analysis_verdict

REAL = DataProvenance("npz", 24, "/data/held-out.npz")
SYNTHETIC = DataProvenance("synthetic", 24, "synthetic:24")


def _at_least(agree: int, n: int, p: Fraction) -> Fraction:
    """P(X ≥ agree), X ~ Binomial(n, p), exactly."""
    return sum((comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(agree, n + 1)), Fraction(0))


@pytest.mark.parametrize(("agree", "n"), [(24, 24), (23, 24), (39, 40), (5, 10), (1, 3)])
def test_the_bound_is_where_seeing_that_many_agree_becomes_unlikely(agree: int, n: int) -> None:
    bound = lower_bound(agree, n)
    assert 0.0 < bound <= agree / n
    # at the bound, seeing at least ``agree`` agree has a 5 % chance; just below, less
    at = _at_least(agree, n, Fraction(bound))
    assert abs(float(at) - 0.05) < 1e-6
    assert _at_least(agree, n, Fraction(bound - 1e-4)) < Fraction(5, 100)


def test_all_agreeing_has_a_closed_form_and_a_goal_a_sample_count() -> None:
    assert lower_bound(24, 24) == pytest.approx(0.05 ** (1 / 24))  # 88.3 %
    assert lower_bound(0, 10) == 0.0
    assert samples_to_show(0.99) == 299  # the "rule of three": about 3 / (1 − 0.99)
    assert lower_bound(299, 299) >= 0.99 > lower_bound(298, 298)
    with pytest.raises(ValueError):
        samples_to_show(1.0)


def test_the_sentence_says_what_the_samples_show_and_what_would_show_the_goal() -> None:
    said = evidence_text(1.0, 24, 0.99, "lines")
    assert said.startswith("all 24 lines agree with float")
    assert "at least 88.3 % of lines like them" in said and "299 lines" in said
    one_off = evidence_text(23 / 24, 24, 0.95, "lines")  # 95.8 %: meets 95 %, cannot show it
    assert one_off.startswith("23 of 24 lines") and "more where some differ" in one_off
    assert evidence_text(23 / 24, 24, 0.99, "lines") == ""  # short of 99 %: the figure says so
    assert evidence_text(1.0, 400, 0.99) == ""  # 400 of 400 show 99.3 %: nothing to add
    assert evidence_text(1.0, 0, 0.99) == ""  # not a share of samples


def _task(value: float, count: int) -> TaskResult:
    result = TaskResult("classification", "logits", "softmax", count)
    result.figures = [
        TaskFigure("top1_agreement", "top-1 agreement", value, 0.99, 0.95, count=count)
    ]
    return result


def test_the_verdict_says_it_beside_the_figure_on_real_data_only() -> None:
    out = [{"output": "logits", "sqnr_db": 40.0, "cosine": 0.9999}]
    verdict = analysis_verdict(out, None, [], data=REAL, task=_task(1.0, 24))
    assert verdict.level == "good"  # not deciding: a diagnostic beside the verdict
    assert any("top-1 agreement: all 24 samples" in d for d in verdict.diagnostics)
    assert not any(
        "samples like them" in d
        for d in analysis_verdict(out, None, [], data=SYNTHETIC, task=_task(1.0, 24)).diagnostics
    )
    many = analysis_verdict(out, None, [], data=REAL, task=_task(1.0, 1000))
    assert not any("samples like them" in d for d in many.diagnostics)


def test_the_tune_says_it_of_its_winner(tmp_path: Path) -> None:
    from edgestudio.jobs.scheduler import Scheduler
    from edgestudio.jobs.winner_judge import WinnerJudge

    goal = Goal.parse("top1_agreement>=0.99")
    winner = Candidate(1, QuantRecipe(model="m.onnx"), "test", state="done")
    winner.analysis = Analysis("f.onnx", "q.onnx", 24, task=_task(1.0, 24), data=REAL)
    data = DataSource("npz", "eval.npz")
    judge = WinnerJudge(Scheduler(max_parallel=1), tmp_path, data, data)
    note = judge.evidence_note(winner, TuneSettings(model="m.onnx", data=data, goal=goal))
    assert note.startswith("all 24 samples agree") and "299 samples" in note
    sqnr = TuneSettings(model="m.onnx", data=data, goal=Goal.parse("sqnr>=30"))
    assert judge.evidence_note(winner, sqnr) == ""  # SQNR is no share of samples
