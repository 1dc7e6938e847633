"""Sensitivity by the task: each layer tried alone gives exactly the figure that quantizing
with that layer changed and analysing on the same data gives; the ranking is best gain first."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.sensitivity import Sensitivity, SensitivityRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL


@pytest.mark.e2e
def test_each_layer_is_measured_as_a_quantization_of_its_own_would_be(tmp_path: Path) -> None:
    base = QuantRecipe(
        model=str(SAMPLE_MODEL),
        mode="qdq",
        calib=DataSource("npz", str(SAMPLE_CALIBRATION), samples=64),
    )
    data = DataSource("npz", str(SAMPLE_EVALUATION), samples=96)
    recipe = SensitivityRecipe(base=base, data=data, metric="generic", top=2)
    job = run_job(recipe, timeout=600)
    assert job.state is JobState.SUCCEEDED, (job.error, job.stderr_tail)
    assert job.report is not None
    result = job.report.result
    assert result is not None and result.metric == "relative_error"
    assert len(result.layers) == 2 and result.base_value is not None
    gains = [r.gain for r in result.layers]
    assert all(g is not None for g in gains) and gains == sorted(gains, reverse=True)
    assert not any(r.op_type == "Relu" for r in result.layers)  # named by the fused producer
    # by hand: the same layer in 16-bit, quantized and analysed as jobs of their own
    first = result.layers[0]
    out = tmp_path / "by_hand.onnx"
    quantized = run_job(
        dataclasses.replace(base, int16=(first.node,), output=str(out)), timeout=300
    )
    assert quantized.state is JobState.SUCCEEDED, quantized.error
    halves = []  # measured on each half of the data apart (the ranking's stability), averaged
    for part in ("even", "odd"):
        analysed = run_job(
            AnalyzeRecipe(
                float_model=base.model,
                quant_model=str(out),
                data=dataclasses.replace(data, part=part),
                metric="generic",
            ),
            timeout=300,
        )
        assert analysed.report is not None
        analysis = analysed.report.result
        assert analysis is not None and analysis.task is not None
        halves.append(analysis.task.figures[0].value)
    assert sum(halves) / 2 == pytest.approx(first.value, rel=1e-6)
    assert None not in first.half_gains and result.layers[1].half_gains[0] is not None
    assert result.rank_agreement is None  # two layers: too few to rank
    assert "not measured" in result.stability_text()


def test_the_command_round_trips_its_recipe() -> None:
    from edgestudio.cli.main import build_parser
    from edgestudio.cli.sensitivity_cmd import recipe_from_args

    recipe = SensitivityRecipe(
        base=QuantRecipe(
            model="m.onnx", mode="qdq", per_channel=True, calib=DataSource("npz", "c.npz")
        ),
        data=DataSource("npz", "d.npz"),
        nodes=("a", "b"),
        top=3,
        way="float",
        metric="classification",
    )
    args = build_parser().parse_args(recipe.to_command()[1:])
    assert recipe_from_args(args) == recipe


def test_equal_gains_are_ranked_by_the_second_figure() -> None:
    from edgestudio.core.quant.sensitivity import LayerSensitivity

    rows = [
        LayerSensitivity("a", "Conv", 3.0, 0.0, 0.0, second_gain=0.01),
        LayerSensitivity("b", "Conv", 2.0, None, None, "failed"),
        LayerSensitivity("c", "Conv", 4.0, 0.0, 0.0, second_gain=0.2),
        LayerSensitivity("d", "Conv", 5.0, 0.1, 0.1, second_gain=-0.5),
    ]
    result = Sensitivity("text_agreement", True, 0.0, "int16", "", rows, "cer")
    assert [r.node for r in result.ranked()] == ["d", "c", "a", "b"]


def test_rank_stability_is_spearman_between_the_halves() -> None:
    from edgestudio.core.quant.sensitivity import LayerSensitivity, rank_stability

    def layer(name: str, a: float, b: float) -> LayerSensitivity:
        return LayerSensitivity(name, "Conv", None, None, None, half_gains=(a, b))

    same = [
        layer("a", 0.5, 0.4),
        layer("b", 0.3, 0.2),
        layer("c", 0.1, 0.05),
        layer("d", 0.0, -0.1),
    ]
    rho, said = rank_stability(same)
    assert rho == pytest.approx(1.0) and said == "the top 3 are the same on both halves"
    swapped = [
        layer("a", 0.5, 0.0),
        layer("b", 0.3, 0.1),
        layer("c", 0.1, 0.3),
        layer("d", 0.0, 0.5),
    ]
    rho, said = rank_stability(swapped)
    assert rho == pytest.approx(-1.0) and said == "2 of the top 3 are the same on both halves"
    assert rank_stability(same[:2]) == (None, "")
