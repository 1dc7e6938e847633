"""Recovering accuracy automatically: calibration and evaluation never share a sample, the
worst layers go to 16-bit before any goes to float (never with --integer-only), a suggestion
names the node that acting on changes the model, and a mode failing twice for one cause is not
tried again."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.inputs.calib_data import open_samples
from edgestudio.core.inputs.data_source import DataSource, parse_data_source
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, LayerError
from edgestudio.core.quant.quantized_graph import suggestion_targets
from edgestudio.core.quant.tune import Candidate, SearchSpace, TuneSettings
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.core.quant.tune_ladder import failure_cause, int16_step, recipe_key, rounding_step
from edgestudio.jobs.tuner import Tuner
from edgestudio.resources import SAMPLE_EVALUATION, SAMPLE_MODEL
from tests import models


def test_the_two_halves_of_a_data_set_are_disjoint_and_cover_it(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    model = models.residual_block()
    name = model.graph.input[0].name
    x = np.random.default_rng(0).standard_normal((7, 4, 8, 8)).astype(np.float32)
    np.savez(path, **{name: x}, labels=np.arange(7))
    every = [s[name] for s in open_samples(DataSource("npz", str(path)), model)]
    halves = {
        part: open_samples(DataSource("npz", str(path), part=part), model)
        for part in ("even", "odd")
    }
    assert (len(halves["even"]), len(halves["odd"])) == (4, 3)
    got = {part: [s[name] for s in samples] for part, samples in halves.items()}
    assert all(np.array_equal(a, b) for a, b in zip(got["even"], every[0::2], strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(got["odd"], every[1::2], strict=True))
    assert list(halves["odd"].labels) == [1, 3, 5]  # type: ignore[arg-type]
    source = DataSource("npz", str(path), part="odd")
    assert source.to_cli() == [str(path), "--part", "odd"]
    assert parse_data_source(str(path), part="odd") == source
    assert "odd-numbered" in source.describe()


@pytest.mark.e2e
def test_tune_calibrates_and_judges_on_different_samples(tmp_path: Path) -> None:
    data = DataSource("npz", str(SAMPLE_EVALUATION))
    calib, judge, said = TuneSettings(model=str(SAMPLE_MODEL), data=data).split()
    assert (calib.part, judge.part) == ("even", "odd") and "split in two" in said
    own = DataSource("npz", str(tmp_path / "calib.npz"))
    calib, judge, said = TuneSettings(model=str(SAMPLE_MODEL), data=data, calib=own).split()
    assert calib == own and judge == data and "calibrated on" in said
    tuner = Tuner(TuneSettings(model=str(SAMPLE_MODEL), data=data, budget=1))
    try:
        assert all(r.calib is None or r.calib.part == "even" for r, _ in tuner.queue)
        assert tuner.eval_data.part == "odd"
    finally:
        tuner.cleanup()


def test_a_fused_relu_is_named_by_its_producer_and_pass_throughs_not_at_all() -> None:
    model = models.residual_block()
    quantized = {"c1", "r1", "c2", "add", "mul", "gap", "flat", "fc"}
    targets = suggestion_targets(model, quantized)
    assert targets["r1"] == "c1" and targets["c2"] == "c2" and targets["flat"] == ""
    layers = [
        LayerError(t, n, op, sqnr, None, None, None)
        for t, n, op, sqnr in (
            ("r1_out", "r1", "Relu", 5.0),
            ("flat_out", "flat", "Flatten", 6.0),
            ("c1_out", "c1", "Conv", 7.0),
            ("c2_out", "c2", "Conv", 9.0),
        )
    ]
    analysis = Analysis(
        "f", "q", 1, layers=layers, quantized_nodes=sorted(quantized), targets=targets
    )
    assert analysis.worst_excludable(3) == ["c1", "c2"]
    assert analysis.worst_excludable(3, already=("c1",)) == ["c2"]


def _candidate(recipe: QuantRecipe) -> Candidate:
    layers = [
        LayerError(f"{n}_out", n, "Conv", s, None, None, None)
        for n, s in (("a", 3.0), ("b", 4.0), ("c", 5.0))
    ]
    return Candidate(
        1,
        recipe,
        "t",
        analysis=Analysis("f", "q", 1, layers=layers, quantized_nodes=["a", "b", "c"]),
    )


def test_int16_steps_grow_and_never_repeat() -> None:
    tried: set[tuple[str, ...]] = set()
    base = QuantRecipe(mode="qdq")
    first = int16_step(_candidate(base), tried, 0)
    assert first is not None and first[0].int16 == ("a",) and first[0].exclude == ()
    second = int16_step(_candidate(base), tried, 1)
    assert second is not None and second[0].int16 == ("a", "b")
    assert int16_step(_candidate(base), tried, 0) is None  # tried already
    wide = dataclasses.replace(base, activation_type="uint16")
    assert int16_step(_candidate(wide), set(), 0) is None  # nothing to widen
    assert int16_step(_candidate(dataclasses.replace(base, mode="dynamic")), set(), 0) is None


def test_the_two_closest_8_bit_recipes_are_tried_again_rounded_adaptively() -> None:
    # PP-OCRv5 rec: the closest 8-bit recipe (with SmoothQuant) gained nothing from adaptive
    # rounding; the next closest (quantizers on compute inputs) read every line like float.
    goal = Goal.parse("text_agreement>=0.99")
    recipes = {
        "smooth": QuantRecipe(mode="qdq", placement="compute-inputs", smooth_quant=0.5),
        "inputs": QuantRecipe(mode="qdq", placement="compute-inputs"),
        "plain": QuantRecipe(mode="qdq"),
        "wide": QuantRecipe(mode="qdq", activation_type="uint16"),
    }
    figures = {"smooth": 0.975, "inputs": 0.95, "plain": 0.3, "wide": 1.0}
    candidates = []
    for number, (name, recipe) in enumerate(recipes.items(), 1):
        candidate = _candidate(recipe)
        candidate.number, candidate.state, candidate.goal_value = number, "done", figures[name]
        candidates.append(candidate)
    tried: set[tuple[str, ...]] = set()
    first = rounding_step(candidates, goal, tried)
    second = rounding_step(candidates, goal, tried)
    assert first is not None and second is not None
    assert first[0] == dataclasses.replace(recipes["smooth"], adaptive_rounding=True)
    assert second[0] == dataclasses.replace(recipes["inputs"], adaptive_rounding=True)
    assert "#2 with its weights rounded adaptively" in second[1]
    assert rounding_step(candidates, goal, tried) is None  # the closest two only, once each
    # the first rounded one came out as close as its base: the next closest is still tried
    again = _candidate(first[0])
    again.number, again.state, again.goal_value = 5, "done", 0.975
    tried = {("adaptive-rounding", recipe_key(recipes["smooth"]))}
    step = rounding_step([*candidates, again], goal, tried)
    assert step is not None and step[0].placement == "compute-inputs" and not step[0].smooth_quant
    # a 16-bit recipe is not an 8-bit one to round; a rounded one is not rounded again
    rounded = _candidate(first[0])
    rounded.state, rounded.goal_value = "done", 0.99
    assert rounding_step([rounded, candidates[3]], goal, set()) is None


def test_failure_causes_match_across_names_and_numbers() -> None:
    a = failure_cause("onnxruntime's quantizer failed: node '/a/Conv' at 12 in /tmp/x/q1.onnx")
    b = failure_cause("onnxruntime's quantizer failed: node '/b/Conv' at 7 in /tmp/y/q2.onnx")
    assert a == b and a != failure_cause("The quantized model is unusable")


@pytest.mark.e2e
def test_integer_only_never_excludes_and_recovers_with_16_bit(tmp_path: Path) -> None:
    for f in (SAMPLE_MODEL, SAMPLE_EVALUATION):
        shutil.copy(f, tmp_path / f.name)
    model = tmp_path / SAMPLE_MODEL.name
    data = DataSource("npz", str(tmp_path / SAMPLE_EVALUATION.name), samples=64)
    space = SearchSpace(
        modes=("qdq",),
        per_channel=(False,),
        reduce_range=(False,),
        activation_types=("uint8", "uint16"),
        calib_methods=("minmax",),
    )
    probe = Tuner(
        TuneSettings(
            model=str(model),
            data=data,
            goal=Goal("sqnr", 200),
            space=dataclasses.replace(space, activation_types=("uint8",)),
            budget=1,
            bench_runs=3,
        )
    )
    first = probe.run()
    probe.cleanup()
    assert first is not None and first.goal_value is not None
    tuner = Tuner(
        TuneSettings(
            model=str(model),
            data=data,
            integer_only=True,
            budget=6,
            goal=Goal("sqnr", first.goal_value + 3),
            space=space,
            bench_runs=5,
        )
    )
    tuner.queue = tuner.queue[:1]  # the defaults only: then the search escalates
    winner = tuner.run()
    assert all(not c.recipe.exclude for c in tuner.candidates)
    # the first rung is whole-model: 16-bit activations and weights, still integer
    escalated = tuner.candidates[1]
    assert escalated.recipe.activation_type == "uint16"
    assert escalated.recipe.weight_type == "int16" and "A16W16" in escalated.why
    assert winner is not None and winner.met and not winner.recipe.exclude
    onnx.checker.check_model(str(winner.recipe.output))
    tuner.cleanup()

    # with 16-bit weights already tried, the worst layers go to 16-bit one rung at a time
    layered = Tuner(
        TuneSettings(
            model=str(model),
            data=data,
            integer_only=True,
            budget=4,
            goal=Goal("sqnr", 400),  # out of reach: the ladder is walked to its end
            space=space,
            bench_runs=3,
            check_winner=False,
        )
    )
    layered.queue = layered.queue[:1]
    layered.run()
    widened = [c for c in layered.candidates if c.recipe.int16]
    assert widened and all("16-bit" in c.why for c in widened)
    assert all(not c.recipe.exclude for c in layered.candidates)
    layered.cleanup()


def test_the_recovery_goal_is_the_task_figure_at_its_good_bound() -> None:
    from edgestudio.core.quant.task_figures import TaskFigure, TaskResult
    from edgestudio.core.quant.tune_goal import recovery_goal

    def analysis(*figures: TaskFigure) -> Analysis:
        return Analysis("f", "q", 1, task=TaskResult("t", "y", "", 1, figures=list(figures)))

    assert recovery_goal(None) == "sqnr>=30"
    drop = TaskFigure("top1_drop", "drop", 0.05, 0.01, 0.03, higher_is_better=False)
    assert recovery_goal(analysis(drop)) == "top1_drop<=1"  # goals count points
    text = TaskFigure("text_agreement", "read alike", 0.5, 0.98, 0.9)
    assert Goal.parse(recovery_goal(analysis(text))) == Goal("text_agreement", 0.98)


def test_a_folded_batch_normalization_is_named_by_its_conv() -> None:
    from onnx import TensorProto, helper, numpy_helper

    c = 2
    inits = [numpy_helper.from_array(np.ones((c, c, 1, 1), np.float32), "w")] + [
        numpy_helper.from_array(np.ones(c, np.float32), n) for n in ("s", "b", "m", "v")
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
        helper.make_node("Relu", ["n"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 4, 4])],
        inits,
    )
    model = helper.make_model(graph)
    assert suggestion_targets(model, {"conv", "bn", "relu"}) == {
        "conv": "conv",
        "bn": "conv",
        "relu": "conv",
    }


def test_many_weight_only_tables_are_counted_not_listed() -> None:
    from onnx import TensorProto, helper, numpy_helper

    from edgestudio.core.quant.quantized_graph import existing_quantization

    nodes, inits, outputs = [], [], []
    for k in range(38):
        inits.append(numpy_helper.from_array(np.ones((8, 8), np.int8), f"table_{k}"))
        nodes += [
            helper.make_node("Cast", [f"table_{k}"], [f"f{k}"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"f{k}", "x"], [f"y{k}"]),
        ]
        outputs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [8, 8]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])], outputs, inits
    )
    found = existing_quantization(helper.make_model(graph))
    assert len(found) == 1 and found[0].startswith("38 weight-only int8 tables")
    assert "'table_0' [8×8] → Cast → Mul" in found[0] and len(found[0]) < 200
    one = helper.make_graph(nodes[:2], "g", graph.input, outputs[:1], inits[:1])
    assert existing_quantization(helper.make_model(one)) == [
        "weight-only int8 table 'table_0' [8×8] → Cast → Mul"
    ]


@pytest.mark.e2e
def test_the_16_bit_escalation_widens_the_closest_8_bit_candidate() -> None:
    # PP-OCRv4 det: A16W8 came closest (98.6 % mask IoU); with it as the base nothing was left
    # to widen and the tune stopped after its first recipes
    data = DataSource("npz", str(SAMPLE_EVALUATION))
    goal = Goal.parse("top1_agreement>=0.99")
    tuner = Tuner(TuneSettings(model=str(SAMPLE_MODEL), data=data, goal=goal, integer_only=True))
    try:
        eight, sixteen = (
            _candidate(QuantRecipe(mode="qdq", activation_type=a)) for a in ("uint8", "uint16")
        )
        for number, (candidate, value) in enumerate(((eight, 0.9), (sixteen, 0.98)), 1):
            candidate.number, candidate.state, candidate.goal_value = number, "done", value
        tuner.queue, tuner.candidates = [], [eight, sixteen]
        step = tuner._next_recipe()
        assert step is not None and step[0].int16 == ("a",)
        assert step[0].activation_type == "uint8"
    finally:
        tuner.cleanup()
