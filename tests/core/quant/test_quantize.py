"""Quantization: every mode, ORT's rules enforced first, data checks, warnings, and per-layer
numbers that agree with onnxruntime's own qdq_loss_debug."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.inputs.calib_data import DataError, open_samples
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.progress import RecordingReporter
from edgestudio.core.quant.analyze import run_analyze
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_rules import check_rules
from edgestudio.core.serialise import to_json
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests import models


def _calib(tmp: Path, x: np.ndarray, name: str = "x") -> DataSource:
    path = tmp / f"calib_{abs(hash(x.tobytes()))}.npz"
    np.savez(path, **{name: x})
    return DataSource("npz", str(path))


@pytest.fixture
def conv_calib(tmp_path: Path) -> DataSource:
    return _calib(
        tmp_path, np.random.default_rng(0).standard_normal((16, 3, 8, 8)).astype(np.float32)
    )


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["dynamic", "qdq", "qoperator", "fp16"])
def test_each_mode_produces_a_model_ort_runs(
    tmp_path: Path, conv_calib: DataSource, mode: str
) -> None:
    import onnxruntime as ort

    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    out = tmp_path / f"{mode}.onnx"
    recipe = QuantRecipe(
        model=str(src),
        output=str(out),
        mode=mode,
        calib=conv_calib if mode in ("qdq", "qoperator") else None,
    )
    job = run_job(recipe, timeout=300)
    assert job.state is JobState.SUCCEEDED, (job.error, job.stderr_tail)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    feed = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    (y,) = session.run(None, {"x": feed})
    assert y.shape == (2, 10) and np.isfinite(y).all()
    assert job.report is not None and job.report.result.quant_bytes > 0


@pytest.mark.e2e
def test_int4_rewrites_matmuls(tmp_path: Path) -> None:
    src = models.save(models.matmul_model(), tmp_path / "mm.onnx")
    out = tmp_path / "int4.onnx"
    job = run_job(
        QuantRecipe(model=str(src), output=str(out), mode="int4", block_size=16), timeout=300
    )
    assert job.state is JobState.SUCCEEDED, job.error
    ops = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert "MatMulNBits" in ops


@pytest.mark.e2e
def test_already_quantized_model_is_refused(tmp_path: Path, conv_calib: DataSource) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    first = tmp_path / "q.onnx"
    assert (
        run_job(QuantRecipe(model=str(src), output=str(first), mode="dynamic")).state
        is JobState.SUCCEEDED
    )
    job = run_job(QuantRecipe(model=str(first), output=str(tmp_path / "qq.onnx"), mode="dynamic"))
    assert job.state is JobState.FAILED and "already quantized" in (job.error or "")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mode": "dynamic", "activation_type": "int8"}, "always uses uint8 activations"),
        ({"mode": "dynamic", "weight_type": "int16"}, "int8 or uint8 weights"),
        (
            {"mode": "qdq", "activation_type": "int8", "weight_type": "uint8"},
            "rejects int8 activations with uint8 weights",
        ),
        ({"mode": "qoperator", "activation_type": "int16"}, "need the QDQ format"),
        ({"mode": "qdq", "activation_type": "int4"}, "4-bit activations"),
        ({"mode": "qdq", "calib": None}, "needs calibration data"),
        ({"mode": "qdq", "calib_method": "percentile", "percentile": 0}, "percentile must be"),
        ({"mode": "int4", "block_size": 24}, "power of two"),
        ({"mode": "nonsense"}, "Unknown mode"),
    ],
)
def test_rules_reject_invalid_recipes(changes: dict[str, object], message: str) -> None:
    base = {"model": "m.onnx", "output": "o.onnx", "calib": DataSource("synthetic")}
    check = check_rules(QuantRecipe(**{**base, **changes}))  # type: ignore[arg-type]
    assert not check.ok
    assert any(message in e for e in check.errors), check.errors


def test_sixteen_bit_warns_about_opset() -> None:
    check = check_rules(
        QuantRecipe(model="m", mode="qdq", activation_type="uint16", calib=DataSource("synthetic")),
        model_opset=17,
    )
    assert check.ok and any("opset 21" in w for w in check.warnings)


def test_an_exclusion_the_model_does_not_have_is_refused_with_the_names_it_may_mean() -> None:
    names = {"/features/features.3/Conv", "/features/features.7/Conv", "loop/body/MatMul"}
    base = QuantRecipe(model="m", mode="dynamic")
    check = check_rules(replace(base, exclude=("/features/features.3/conv",)), None, names)
    assert not check.ok
    assert check.errors == [
        "No node named '/features/features.3/conv' to exclude in this model "
        "(did you mean '/features/features.3/Conv' or "
        "'/features/features.7/Conv'?)."
    ]
    check = check_rules(replace(base, exclude=("zzz",)), None, names)
    assert check.errors == ["No node named 'zzz' to exclude in this model."]
    # a node inside a subgraph counts (the job passes every node's name, bodies included)
    assert check_rules(replace(base, exclude=("loop/body/MatMul",)), None, names).ok


@pytest.mark.e2e
def test_rejected_recipe_fails_before_writing(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    job = run_job(
        QuantRecipe(
            model=str(src),
            output=str(tmp_path / "o.onnx"),
            mode="qdq",
            activation_type="int8",
            weight_type="uint8",
            calib=DataSource("synthetic"),
        )
    )
    assert job.state is JobState.FAILED and "uint8 weights" in (job.error or "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


@pytest.mark.e2e
@pytest.mark.parametrize(("values", "words"), [(np.nan, "NaN"), (np.inf, "inf")])
def test_nan_and_inf_calibration_data_fail_before_output(
    tmp_path: Path, values: float, words: str
) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    x = np.ones((4, 3, 8, 8), np.float32)
    x[1, 0, 0, 0] = values
    job = run_job(
        QuantRecipe(
            model=str(src), output=str(tmp_path / "o.onnx"), mode="qdq", calib=_calib(tmp_path, x)
        )
    )
    assert job.state is JobState.FAILED and words in (job.error or "")
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.e2e
def test_all_zero_and_constant_calibration_warn(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    job = run_job(
        QuantRecipe(
            model=str(src),
            output=str(tmp_path / "o.onnx"),
            mode="qdq",
            calib=_calib(tmp_path, np.zeros((4, 3, 8, 8), np.float32)),
        )
    )
    assert job.state is JobState.SUCCEEDED
    text = " ".join(job.warnings)
    assert "all zeros" in text
    assert "scale is exactly 1.0" in text  # ORT's silent fallback for collapsed ranges, named


@pytest.mark.parametrize(
    ("array", "words"),
    [
        (np.ones((4, 3, 9, 9), np.float32), "has shape [1, 3, 9, 9]"),
        (np.ones((4, 3, 8, 8), np.int64), "is int64, the model expects float32"),
    ],
)
def test_data_mismatch_lists_both_sides(tmp_path: Path, array: np.ndarray, words: str) -> None:
    samples = open_samples(_calib(tmp_path, array), models.conv_relu_gemm())
    with pytest.raises(DataError) as info:
        samples.validate()
    assert words in str(info.value) and "x float32 [batch, 3, 8, 8]" in str(info.value)


def test_wrong_names_list_expected_inputs(tmp_path: Path) -> None:
    with pytest.raises(DataError) as info:
        open_samples(
            _calib(tmp_path, np.ones((2, 3, 8, 8), np.float32), name="input"),
            models.conv_relu_gemm(),
        )
    assert "has arrays input" in str(info.value) and "x float32 [batch, 3, 8, 8]" in str(info.value)


def test_replay_gives_the_same_samples_every_pass() -> None:
    samples = open_samples(DataSource("synthetic", samples=5, seed=3), models.conv_relu_gemm())
    first = [s["x"].copy() for s in samples]
    second = [s["x"] for s in samples]
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


@pytest.mark.e2e
def test_per_layer_sqnr_agrees_with_qdq_loss_debug(tmp_path: Path) -> None:
    from onnxruntime.quantization import qdq_loss_debug as dbg

    quant = tmp_path / "qdq.onnx"
    job = run_job(
        QuantRecipe(
            model=str(SAMPLE_MODEL),
            output=str(quant),
            mode="qdq",
            per_channel=True,
            calib=DataSource("npz", str(SAMPLE_CALIBRATION)),
        )
    )
    assert job.state is JobState.SUCCEEDED, job.error
    data = DataSource("npz", str(SAMPLE_EVALUATION), samples=24)
    ours = run_analyze(
        AnalyzeRecipe(float_model=str(SAMPLE_MODEL), quant_model=str(quant), data=data),
        RecordingReporter(),
        tmp_path,
    )
    layers = {layer["tensor"]: layer for layer in to_json(ours.result)["layers"]}

    float_aug, quant_aug = tmp_path / "float_aug.onnx", tmp_path / "quant_aug.onnx"
    dbg.modify_model_output_intermediate_tensors(str(SAMPLE_MODEL), str(float_aug))
    dbg.modify_model_output_intermediate_tensors(str(quant), str(quant_aug))

    class Reader:
        def __init__(self) -> None:
            images = np.load(SAMPLE_EVALUATION)["image"][:24]
            self.it = iter([{"image": images[i : i + 1]} for i in range(len(images))])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

        def __iter__(self):  # type: ignore[no-untyped-def]
            return self.it

    float_acts = dbg.collect_activations(str(float_aug), Reader())
    quant_acts = dbg.collect_activations(str(quant_aug), Reader())
    errors = dbg.compute_activation_error(dbg.create_activation_matching(quant_acts, float_acts))
    compared = 0
    for tensor, err in errors.items():
        if "xmodel_err" not in err or tensor not in layers:
            continue
        assert layers[tensor]["sqnr_db"] == pytest.approx(err["xmodel_err"], abs=0.01), tensor
        compared += 1
    assert compared >= 8
    # whole-model figures by hand: top-1 on the labelled evaluation data
    accuracy = to_json(ours.result)["accuracy"]
    import onnxruntime as ort

    images = np.load(SAMPLE_EVALUATION)["image"][:24]
    labels = np.load(SAMPLE_EVALUATION)["labels"][:24]
    by_hand = (
        ort.InferenceSession(str(quant), providers=["CPUExecutionProvider"])
        .run(None, {"image": images})[0]
        .argmax(1)
    )
    assert accuracy["quant_top1"] == pytest.approx(float((by_hand == labels).mean()))


def test_all_zero_reference_is_not_a_number(tmp_path: Path) -> None:
    from edgestudio.core.quant.analyze import ErrorStats

    stats = ErrorStats()
    stats.add(np.zeros(5), np.zeros(5))
    assert stats.figures()["sqnr_db"] is None
    stats = ErrorStats()
    stats.add(np.array([3.0, 4.0]), np.array([3.0, 4.5]))
    assert stats.figures()["sqnr_db"] == pytest.approx(20 * np.log10(5.0 / 0.5))
    assert stats.figures()["mse"] == pytest.approx(0.125)


def test_inf_or_nan_where_the_float_side_is_finite_is_counted_not_averaged() -> None:
    """A Log fed a quantized zero gives -inf where the float model is finite: that is counted
    (and is the worst error there is), not folded into a sum that turns inf or NaN; values
    inf on both sides alike, or inf in the float reference, are left out of the sums."""
    from edgestudio.core.quant.analyze import ErrorStats
    from edgestudio.core.quant.quant_results import sqnr_text

    stats = ErrorStats()
    ref = np.array([3.0, 4.0, -np.inf, 1.0, 2.0], np.float32)
    stats.add(ref, np.array([3.0, 4.5, -np.inf, -np.inf, np.nan], np.float32))
    figures = stats.figures()
    assert figures["non_finite"] == 2 and figures["sqnr_db"] is None
    assert figures["mse"] == pytest.approx(0.125)  # over the two values finite on both sides
    assert sqnr_text(figures["sqnr_db"], 2) == "inf/NaN ×2"
    clean = ErrorStats()
    clean.add(ref, np.array([3.0, 4.5, -np.inf, 1.0, 2.0], np.float32))  # the float's own -inf
    assert clean.figures()["non_finite"] == 0
    assert clean.figures()["sqnr_db"] == pytest.approx(20 * np.log10(np.sqrt(30) / 0.5), rel=1e-5)
    gone = ErrorStats()  # every value inf on the quantized side: counted, nothing summed
    gone.add(np.ones(4, np.float32), np.full(4, -np.inf, np.float32))
    assert gone.figures() == {
        "sqnr_db": None,
        "mse": None,
        "max_abs": 0.0,
        "cosine": None,
        "non_finite": 4,
    }


@pytest.mark.e2e
def test_a_layer_that_turns_inf_heads_the_analysis_and_the_verdict(tmp_path: Path) -> None:
    """x·1000 + 0.001 quantized to 8 bits rounds its small values to 0, and Log(0) = -inf
    where the float model computes log(0.001…): the analysis ranks that layer worst, and the
    verdict says the output's inf values."""
    from onnx import TensorProto, helper, numpy_helper

    consts = [
        numpy_helper.from_array(np.array(1000.0, np.float32), "k"),
        numpy_helper.from_array(np.array(0.001, np.float32), "b"),
    ]
    graph = helper.make_graph(
        [
            helper.make_node("Mul", ["x", "k"], ["scaled"], name="scale"),
            helper.make_node("Add", ["scaled", "b"], ["shifted"], name="shift"),
            helper.make_node("Log", ["shifted"], ["y"], name="log"),
        ],
        "log_of_small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    src = models.save(model, tmp_path / "m.onnx")
    rng = np.random.default_rng(0)
    data = tmp_path / "d.npz"
    np.savez(data, x=rng.random((16, 64), dtype=np.float32))  # 0…1: many below 1/255·1000
    quant = tmp_path / "q.onnx"
    job = run_job(
        QuantRecipe(
            model=str(src), output=str(quant), mode="qdq", calib=DataSource("npz", str(data))
        ),
        timeout=300,
    )
    assert job.state is JobState.SUCCEEDED, job.error
    job = run_job(
        AnalyzeRecipe(
            float_model=str(src), quant_model=str(quant), data=DataSource("npz", str(data))
        ),
        timeout=300,
    )
    assert job.state is JobState.SUCCEEDED, job.error  # it was "math domain error"
    assert job.report is not None
    analysis = job.report.result
    output = analysis.outputs[0]
    assert output.non_finite > 0 and output.sqnr_db is None
    worst = analysis.layers_worst_first()[0]
    assert worst.non_finite > 0 and worst.node == "log"
    verdict = analysis.verdict
    assert verdict is not None and verdict.level == "poor", verdict
    # the task metric decides (top-1 of the log-values here); the inf values are said beside it
    said = [*verdict.reasons, *verdict.diagnostics]
    assert any("inf/NaN" in line for line in said), said
    # Log itself is not quantized (excluding it changes nothing): the tip names the Add whose
    # quantized output rounds to zero
    tips = " ".join(verdict.suggestions)
    assert "shift" in tips and "log" not in tips.replace("calibration", ""), tips


@pytest.mark.e2e
def test_image_folder_calibration_with_preprocessing(tmp_path: Path) -> None:
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(5)
    for i in range(6):
        Image.fromarray(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    source = DataSource("images", str(folder), size=(8, 8), mean=(0.5,), std=(0.25,))
    samples = open_samples(source, models.conv_relu_gemm())
    batch = list(samples)
    assert len(batch) == 6 and batch[0]["x"].shape == (1, 3, 8, 8)
    assert batch[0]["x"].dtype == np.float32
    assert batch[0]["x"].min() >= -2.01 and batch[0]["x"].max() <= 2.01  # (x/255 - .5)/.25
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    job = run_job(
        QuantRecipe(model=str(src), output=str(tmp_path / "q.onnx"), mode="qdq", calib=source),
        timeout=300,
    )
    assert job.state is JobState.SUCCEEDED, job.error


def test_images_that_do_not_fit_propose_the_flags_that_do(tmp_path: Path) -> None:
    from PIL import Image

    from edgestudio.core.inputs.calib_data import image_flags
    from edgestudio.core.inputs.input_spec import InputSpecError

    folder = tmp_path / "images"
    folder.mkdir()
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(folder / "0.png")
    model = models.conv_relu_gemm()  # x [batch, 3, 8, 8]
    for value in model.graph.input[0].type.tensor_type.shape.dim:
        value.ClearField("dim_param")
    dims = model.graph.input[0].type.tensor_type.shape.dim
    for d, n in zip(dims, (1, 8, 8, 3), strict=True):  # as an NHWC export declares it
        d.dim_value = n
    with pytest.raises(
        (DataError, InputSpecError), match=r"--image-size 8x8 --image-layout NHWC \(the data form"
    ):
        list(open_samples(DataSource("images", str(folder)), model))
    assert image_flags((1, 1, 28, 28)) == "--image-size 28x28 --image-layout NCHW --image-colour L"
    assert image_flags(("batch", 3, "h", "w")) == "--image-layout NCHW"
    assert image_flags((1, 16000)) == ""


@pytest.mark.e2e
def test_a_weight_with_inf_values_stays_in_float(tmp_path: Path) -> None:
    """An embedding table with a -inf entry (an attention-bias row meaning "no path", as in a
    real molecule model): a scale over an infinite range would make every output NaN, so the
    nodes reading it stay in float, the job says so, and the rest is quantized."""
    from onnx import TensorProto, helper, numpy_helper

    table = np.array([[0.5, 0.1, 1.0], [0.2, 0.3, 0.4], [0.5, -np.inf, 1.0]], np.float32)
    weight = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "ids"], ["bias"], name="lookup"),
            helper.make_node("Softmax", ["bias"], ["probs"], name="softmax", axis=-1),
            helper.make_node("MatMul", ["probs", "w"], ["y"], name="project"),
        ],
        "inf_table",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    src = models.save(model, tmp_path / "m.onnx")
    job = run_job(
        QuantRecipe(model=str(src), output=str(tmp_path / "q.onnx"), mode="dynamic"), timeout=300
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    notes = " ".join(job.report.result.notes)
    assert "'table' holds inf or NaN values" in notes and "'lookup'" in notes, notes
    assert job.report.result.command.count("--exclude") == 0  # the user's recipe, as given
    quantized = onnx.load(str(tmp_path / "q.onnx"))
    assert any(n.op_type == "MatMulInteger" for n in quantized.graph.node)  # the rest is
    assert any(n.op_type == "Gather" and n.input[0] == "table" for n in quantized.graph.node)


def test_an_fp16_crash_is_diagnosed_by_optimisation_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime 1.32 segfaults optimising some float16 graphs at its default level (a real
    traffic-signal model); when the same result loads and runs optimised up to 'extended',
    the refusal says so. Other failures, and other modes, get no such line."""
    from edgestudio.core.model.result_gate import GateResult
    from edgestudio.core.quant import quant_proof as quantize_module

    asked: list[bool] = []

    def isolated(path: Path, feeds: object, extended_only: bool = False) -> GateResult:
        asked.append(extended_only)
        return GateResult(True)

    monkeypatch.setattr(quantize_module, "run_isolated", isolated)
    fp16 = QuantRecipe(model="m.onnx", mode="fp16")
    crash = ["onnxruntime crashed (SIGSEGV) loading or running it"]
    said = quantize_module.crash_diagnosis(fp16, tmp_path / "q.onnx", {}, crash)
    assert "ORT_ENABLE_EXTENDED" in said and asked == [True]
    assert quantize_module.crash_diagnosis(fp16, tmp_path / "q.onnx", {}, ["it does not run"]) == ""
    dynamic = QuantRecipe(model="m.onnx", mode="dynamic")
    assert quantize_module.crash_diagnosis(dynamic, tmp_path / "q.onnx", {}, crash) == ""
    assert asked == [True]  # only the fp16 crash was looked into
    assert "a crash names none" in quantize_module.what_to_try(fp16, crash)


@pytest.mark.e2e
def test_a_classifier_with_a_zipmap_is_analysed_on_its_probabilities(tmp_path: Path) -> None:
    # skl2onnx's classifiers: labels first (int64), then a sequence of maps. The analysis
    # failed in onnxruntime (a Reshape of a seq(map) to save it), then asked the shipped model
    # for a tensor that is no graph output; and its verdict read the labels' "relative error".
    model = models.save(models.zipmap_classifier(features=16, classes=5), tmp_path / "m.onnx")
    rng = np.random.default_rng(0)
    calib = _calib(tmp_path, rng.standard_normal((32, 16)).astype(np.float32))
    evaluation = tmp_path / "eval.npz"
    np.savez(evaluation, x=rng.standard_normal((64, 16)).astype(np.float32))
    quantized = tmp_path / "q.onnx"
    done = run_job(QuantRecipe(model=str(model), output=str(quantized), calib=calib), timeout=300)
    assert done.state is JobState.SUCCEEDED, done.error
    analysed = run_job(
        AnalyzeRecipe(
            float_model=str(model),
            quant_model=str(quantized),
            data=DataSource("npz", str(evaluation)),
        ),
        timeout=300,
    )
    assert analysed.state is JobState.SUCCEEDED, analysed.error
    assert analysed.report is not None

    analysis = analysed.report.result
    assert [o.output for o in analysis.outputs] == ["label", "probabilities"]
    assert analysis.task is not None and analysis.task.task == "classification"
    assert analysis.task.output == "probabilities"


@pytest.mark.e2e
def test_a_quantized_model_declares_only_the_domains_its_nodes_use(tmp_path: Path) -> None:
    for mode, calib in (("qdq", DataSource("npz", str(SAMPLE_CALIBRATION))), ("dynamic", None)):
        out = tmp_path / f"{mode}.onnx"
        job = run_job(QuantRecipe(model=str(SAMPLE_MODEL), output=str(out), mode=mode, calib=calib))
        assert job.state is JobState.SUCCEEDED, job.error
        result = onnx.load(str(out))
        used = {n.domain for n in result.graph.node} | {""}
        declared = {o.domain for o in result.opset_import}
        assert declared <= used, declared - used  # no training, preview or NCHWc domains
