"""The target check reads the provider's own verdicts: its log's failed validations become
each node's reason, and where a node runs is onnxruntime's own assignment (a test against the
provider itself, where onnxruntime-qnn is installed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.serialise import from_json, to_json
from edgestudio.core.targets.qnn_htp import validations
from edgestudio.core.targets.target_recipe import (
    FOLDED,
    ON_CPU,
    ON_TARGET,
    NodePlacement,
    Placement,
    TargetCheck,
)
from edgestudio.jobs.runner import Job

LOG = """\
2026-12-05 13:11:11.41 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] \
Validation FAILED for 1 nodes in OrtNodeUnit (QuantizeLinear) :
\tOperator type: QuantizeLinear Node name: image_QuantizeLinear Node index: 6
\tREASON : Cannot get shape

2026-12-05 13:11:11.41 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] \
Validation PASSED for 2 nodes in OrtNodeUnit (Conv) :
\tOperator type: DequantizeLinear Node name: x DQ Node index: 11
\tOperator type: Conv Node name: /features/Conv Node index: 12

2026-12-05 13:11:11.42 [V:onnxruntime:, qnn_execution_provider.cc:1713 LogNodeSupport] \
Validation FAILED for 2 nodes in OrtNodeUnit (BatchNormalization) :
\tOperator type: BatchNormalization Node name: bn Node index: 14
\tOperator type: QuantizeLinear Node name: bn_q Node index: 15
\tREASON : QNN Batchnorm unsupported datatype on HTP
"""


def test_the_providers_log_gives_each_refused_node_its_reason() -> None:
    reasons, accepted = validations(LOG)
    assert reasons == {
        "image_QuantizeLinear": "Cannot get shape",
        "bn": "QNN Batchnorm unsupported datatype on HTP",
        "bn_q": "QNN Batchnorm unsupported datatype on HTP",
    }
    assert accepted == {"x DQ", "/features/Conv"}  # a name with a space is read whole


def test_a_node_missing_from_the_session_is_folded_unless_the_cpu_fused_it() -> None:
    """A Q the QDQ clean-up moved onto a graph input (no node of the model) is no fusion: the
    shape nodes the session dropped were folded; a CPU kernel of onnxruntime's own is one."""
    from edgestudio.core.targets.qnn_htp import EP_NAME, Kernel, placed

    graph = [
        ("shape", "Shape"),
        ("gather", "Gather"),
        ("conv", "Conv"),
        ("y_dq", "DequantizeLinear"),
    ]
    kernels = [
        Kernel("x_q", "QuantizeLinear", "CPUExecutionProvider"),
        Kernel("conv", "Conv", EP_NAME),
        Kernel("y_dq", "DequantizeLinear", "CPUExecutionProvider"),
    ]
    nodes = {n.node: n for n in placed(graph, kernels, {}, set())}
    assert [nodes[k].placed for k in ("shape", "gather", "conv")] == [FOLDED, FOLDED, ON_TARGET]
    assert nodes["y_dq"].placed == ON_CPU

    fused = [*kernels, Kernel("fused_gather", "FusedGather", "CPUExecutionProvider")]
    nodes = {n.node: n for n in placed(graph, fused, {}, set())}
    assert nodes["shape"].placed == ON_CPU and "fused there" in nodes["shape"].reason


def test_a_placement_counts_and_groups_the_reasons() -> None:
    placement = Placement(
        [
            NodePlacement("q", "QuantizeLinear", ON_CPU, "QNN EP is configured to not take Q"),
            NodePlacement("conv", "Conv", ON_TARGET),
            NodePlacement("bn", "BatchNormalization", ON_CPU, "unsupported datatype"),
        ]
    )
    assert placement.text() == "1 of 3 nodes on the target"
    assert placement.reasons() == {
        "QNN EP is configured to not take Q": 1,
        "unsupported datatype": 1,
    }
    assert [n.node for n in placement.by_design] == ["q"] and not placement.whole
    check = TargetCheck("m.onnx", "qnn-htp", "73", placement)
    again = from_json(TargetCheck, to_json(check))
    assert again == check and again.placement_map()["conv"] == ON_TARGET
    assert Placement(session_error="NHWC node not selected").text().startswith("no session")
    folded = Placement([*placement.nodes[1:2], NodePlacement("shape", "Shape", FOLDED, "folded")])
    assert (
        folded.text()
        == "1 of 2 nodes on the target, 1 folded away (constants once the sizes are fixed)"
    )
    assert folded.whole  # a folded node runs nowhere: it keeps no node off the target


qnn = pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed here")


@pytest.mark.e2e
def test_a_dynamic_model_is_refused_for_its_shapes_then_placed_wholly_once_fixed(
    tmp_path: Path,
) -> None:
    import onnxruntime as ort

    from edgestudio.core.targets import qnn_htp
    from edgestudio.core.targets.target_check import fixed_copy
    from edgestudio.core.targets.target_recipe import TargetCheckRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job
    from tests import models

    quant = models.quantized_sample(tmp_path)  # the digits sample, QDQ, dynamic batch
    job = run_job(TargetCheckRecipe(model=str(quant)))
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    check = job.report.result
    # a dynamic batch: the provider cannot get a shape, so it takes nothing, and says so
    assert check.before.on_target == 0
    assert set(check.before.reasons()) == {"Cannot get shape"}
    assert check.after is not None and check.after.whole, check.after.reasons()
    assert check.fixes == ["image fixed to 1x1x8x8"]
    assert check.after.on_target >= len(check.after.nodes) - 2  # the edge Q/DQ by design

    # against the provider itself: every node it assigned is placed where it assigned it
    fixed = tmp_path / "fixed.onnx"
    fixed_copy(quant, {"image": [1, 1, 8, 8]}, fixed)
    session = ort.InferenceSession(str(fixed), qnn_htp.session_options("73"))
    assigned = {
        n.name: sub.ep_name
        for sub in session.get_provider_graph_assignment_info()
        for n in sub.get_nodes()
    }
    placed = {n.node: n.placed for n in check.after.nodes}
    for name, ep in assigned.items():
        if name in placed:
            assert placed[name] == (ON_TARGET if ep == qnn_htp.EP_NAME else ON_CPU), name


def test_a_session_the_provider_cannot_build_is_a_verdict(tmp_path: Path) -> None:
    from edgestudio.core.targets import qnn_htp

    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07not a model")
    placement = qnn_htp.placement(broken, "73")
    assert placement.session_error and placement.nodes == []


@pytest.mark.e2e
def test_a_compiled_context_reloads_and_matches_the_emulated_run(tmp_path: Path) -> None:
    import onnxruntime as ort

    from edgestudio.core.targets import qnn_htp
    from edgestudio.core.targets.target_recipe import TargetCompileRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job
    from tests import models

    quant = models.quantized_sample(tmp_path)  # the digits sample, QDQ, dynamic batch
    out = tmp_path / "device" / "m_ctx.onnx"
    out.parent.mkdir()
    job = run_job(TargetCompileRecipe(model=str(quant), output=str(out)))
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    compiled = job.report.result
    binary = out.parent / compiled.binary
    assert binary.is_file() and binary.stat().st_size == compiled.binary_bytes > 0
    assert compiled.max_abs_difference == 0.0 and compiled.fixes == ["image fixed to 1x1x8x8"]
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, binary.name])
    # here, as a device would: the context model loads with the NPU alone and runs
    session = ort.InferenceSession(str(out), qnn_htp.session_options("73", fallback=False))
    (y,) = session.run(None, {"image": np.ones((1, 1, 8, 8), np.float32)})
    assert y.shape == (1, 10) and np.isfinite(y).all()


def _sigmoid_head() -> onnx.ModelProto:
    """x[1,4] → MatMul → Sigmoid → y: a head whose output range the NPU fixes."""
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
            helper.make_node("Sigmoid", ["m"], ["y"], name="sig"),
        ],
        "sigmoid_head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [numpy_helper.from_array(weight, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _output_scale(path: Path) -> float:
    model = onnx.load(str(path))
    stored = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == "y")
    return float(stored[dq.input[1]])


@pytest.mark.e2e
def test_quantizing_for_the_npu_follows_onnxruntimes_qnn_config(tmp_path: Path) -> None:
    """--target qnn-htp quantizes with onnxruntime's QNN config: with 16-bit activations a
    Sigmoid's output gets the NPU's fixed scale (1/65536), not the calibrated one."""
    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import QuantRecipe
    from edgestudio.core.quant.quant_rules import check_rules
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job

    src = tmp_path / "head.onnx"
    onnx.save(_sigmoid_head(), str(src))
    calib = DataSource("synthetic", samples=8, seed=0)
    scales = {}
    for target in ("cpu", "qnn-htp"):
        out = tmp_path / f"{target}.onnx"
        recipe = QuantRecipe(
            model=str(src),
            output=str(out),
            mode="qdq",
            calib=calib,
            activation_type="uint16",
            target=target,
        )
        job = run_job(recipe)
        assert job.state is JobState.SUCCEEDED, job.error
        scales[target] = _output_scale(out)
    assert scales["qnn-htp"] == pytest.approx(1 / 65536)
    assert scales["cpu"] != pytest.approx(1 / 65536)
    assert any("QNN config" in n for n in job.report.result.notes)  # type: ignore[union-attr]
    assert "--target qnn-htp" in recipe.command_line()
    # what the NPU cannot combine is refused before any work
    bad = QuantRecipe(model="m.onnx", mode="qdq", calib=calib, target="qnn-htp")
    assert not check_rules(replace(bad, activation_type="int8")).ok
    assert not check_rules(replace(bad, placement="compute")).ok
    assert check_rules(bad).ok


def _quantized_for(target: str, src: Path, out: Path, **options: object) -> Job:
    """A QDQ quantization of ``src`` for ``target`` (synthetic calibration) that succeeded."""
    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import QuantRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job

    recipe = QuantRecipe(
        model=str(src),
        output=str(out),
        mode="qdq",
        calib=DataSource("synthetic", samples=8, seed=0),
        target=target,
        **options,  # type: ignore[arg-type]
    )
    job = run_job(recipe)
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    return job


def _erf_gelu_block() -> onnx.ModelProto:
    """x[1,8] -> MatMul -> GELU as exported from PyTorch (x * 0.5 * (1 + Erf(x / sqrt 2))) ->
    MatMul -> y: the NPU has no Erf; onnxruntime-qnn's pre-processing makes it one Gelu."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    consts = {
        "w1": rng.standard_normal((8, 16)).astype(np.float32),
        "w2": rng.standard_normal((16, 4)).astype(np.float32),
        "sqrt2": np.array(np.sqrt(2.0), np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Div", ["h", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="add"),
        helper.make_node("Mul", ["h", "a"], ["m"], name="mul"),
        helper.make_node("Mul", ["m", "half"], ["g"], name="mul_half"),
        helper.make_node("MatMul", ["g", "w2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes,
        "erf_gelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.e2e
def test_an_erf_gelu_is_fused_for_the_npu_and_then_placed_wholly(tmp_path: Path) -> None:
    """Quantized for the NPU, a PyTorch-exported GELU becomes one Gelu node (onnxruntime-qnn's
    own pre-processing, past its metadata bug), the result is proven against the float model,
    and the NPU takes every compute node; quantized for the CPU, the Erf stays."""
    from edgestudio.core.targets.target_recipe import TargetCheckRecipe
    from edgestudio.jobs.scheduler import run_job

    src = tmp_path / "gelu.onnx"
    onnx.save(_erf_gelu_block(), str(src))
    ops = {}
    for target in ("cpu", "qnn-htp"):
        out = tmp_path / f"{target}.onnx"
        job = _quantized_for(target, src, out)
        assert job.report is not None and job.report.passed
        ops[target] = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert "Erf" in ops["cpu"] and "Gelu" not in ops["cpu"]
    assert "Gelu" in ops["qnn-htp"] and "Erf" not in ops["qnn-htp"]
    notes = job.report.result.notes
    assert any("pre-processing fused Gelu" in n for n in notes), notes
    check = run_job(TargetCheckRecipe(model=str(tmp_path / "qnn-htp.onnx")))
    assert check.report is not None, check.error
    assert check.report.result.final.whole


def _layernorm_block() -> onnx.ModelProto:
    """x[1,4,8] -> MatMul -> LayerNormalization(gamma, beta) -> MatMul -> y: a transformer's
    norm, whose gamma onnxruntime's QNN config quantizes as an int8 weight."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    consts = {
        "w1": rng.standard_normal((8, 8)).astype(np.float32),
        "gamma": (1 + 0.1 * rng.standard_normal(8)).astype(np.float32),
        "beta": (0.1 * rng.standard_normal(8)).astype(np.float32),
        "w2": rng.standard_normal((8, 4)).astype(np.float32),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["n"], name="norm", axis=-1),
        helper.make_node("MatMul", ["n", "w2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes,
        "layernorm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_layernorm_scale_is_quantized_with_the_sign_of_its_input(tmp_path: Path) -> None:
    from onnxruntime.quantization import QuantType

    from edgestudio.core.quant.qnn_config import layernorm_scales_signed_as_input

    src = tmp_path / "norm.onnx"
    onnx.save(_layernorm_block(), str(src))
    kept = {"gamma": [{"quant_type": QuantType.QInt8, "symmetric": True}]}
    assert layernorm_scales_signed_as_input(src, QuantType.QUInt8, {}) == {
        "gamma": [{"quant_type": QuantType.QUInt8}]
    }
    assert layernorm_scales_signed_as_input(src, QuantType.QUInt8, kept) == kept  # the user's
    assert layernorm_scales_signed_as_input(src, QuantType.QUInt16, {}) == {}  # 16-bit: either


@pytest.mark.e2e
def test_a_layernorm_quantized_for_the_npu_is_taken_by_it(tmp_path: Path) -> None:
    """With uint8 activations and int8 weights (the defaults) the HTP refuses a LayerNorm whose
    gamma is int8 ("Failed to add node"); quantized for it, gamma follows its input's sign and
    the NPU takes every compute node."""
    from edgestudio.core.targets.target_recipe import TargetCheckRecipe
    from edgestudio.jobs.scheduler import run_job

    src = tmp_path / "norm.onnx"
    onnx.save(_layernorm_block(), str(src))
    out = tmp_path / "norm_htp.onnx"
    job = _quantized_for("qnn-htp", src, out)
    assert job.report is not None and job.report.passed
    quantized = {i.name: i for i in onnx.load(str(out)).graph.initializer}
    assert quantized["gamma_quantized"].data_type == onnx.TensorProto.UINT8
    assert quantized["w1_quantized"].data_type == onnx.TensorProto.INT8  # weights stay int8
    check = run_job(TargetCheckRecipe(model=str(out)))
    assert check.report is not None, check.error
    final = check.report.result.final
    assert final.whole, final.reasons()


@pytest.mark.e2e
def test_a_model_with_external_weights_is_quantized_for_the_npu(tmp_path: Path) -> None:
    """Its working float copy is gone once quantized: what the notes compare with is the
    user's model (a corpus model with a .data file failed here)."""
    from tests.models import external_weights

    _quantized_for("qnn-htp", external_weights(tmp_path), tmp_path / "out.onnx")


@pytest.mark.e2e
def test_a_model_is_judged_in_the_npus_own_arithmetic_or_not_at_all(tmp_path: Path) -> None:
    """analyze --target qnn-htp measures the whole-model figures on the emulated NPU, with the
    CPU fallback off; a model it does not take whole fails the analysis with the reason,
    never a figure the CPU partly computed."""
    from onnx import TensorProto, helper

    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job
    from tests import models

    quant = models.quantized_sample(tmp_path)
    data = DataSource("synthetic", samples=4, seed=0)
    # the analysis that follows a quantization for the NPU is judged there
    quantized_for_npu = QuantRecipe(model=str(_sample()), mode="qdq", target="qnn-htp")
    job = run_job(AnalyzeRecipe.after(quantized_for_npu, str(quant), data))
    assert job.state is JobState.SUCCEEDED, job.error
    analysis = job.report.result  # type: ignore[union-attr]
    assert analysis.measured_on == "qnn-htp"
    assert any("Hexagon NPU" in w and "samples/s" in w for w in job.report.warnings)  # type: ignore[union-attr]
    # each quantized activation as the NPU computed it, beside the CPU's QDQ graph
    there = [layer for layer in analysis.layers if layer.sqnr_db_target is not None]
    assert len(there) >= len(analysis.layers) - 1, analysis.layers
    logits = next(layer for layer in there if layer.tensor == "logits")
    # the graph output's quantized value on the NPU is what the whole-model figure judged
    assert logits.sqnr_db_target == pytest.approx(analysis.outputs[0].sqnr_db, abs=0.01)
    assert all(abs(layer.target_gap_db() or 0.0) < 3.0 for layer in there)
    assert analysis.target_divergence().startswith("On the target (qnn-htp)")

    # Mod has no HTP kernel: the NPU does not take this model whole
    graph = helper.make_graph(
        [helper.make_node("Mod", ["x", "x"], ["y"], name="mod", fmod=1)],
        "mod",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "mod.onnx"
    onnx.save(model, str(path))
    refused = run_job(
        AnalyzeRecipe(float_model=str(path), quant_model=str(path), data=data, target="qnn-htp")
    )
    assert refused.state is JobState.FAILED
    assert "does not take this model whole" in (refused.error or "")
    assert "target check" in (refused.error or "")


@pytest.mark.e2e
def test_a_16_bit_model_for_the_npu_is_judged_on_the_cpu_and_on_the_npu(tmp_path: Path) -> None:
    """A16W8 for the NPU writes com.microsoft Q/DQ (opset below 21), whose types and shapes onnx
    cannot infer: the CPU's exposed outputs take the zero point's type, and the NPU's sized
    copy is made without onnx's model check refusing an output declared without a shape."""
    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import AnalyzeRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job

    out = tmp_path / "a16.onnx"
    _quantized_for("qnn-htp", _sample(), out, activation_type="uint16")
    assert any(n.domain == "com.microsoft" for n in onnx.load(str(out)).graph.node)
    data = DataSource("synthetic", samples=4, seed=0)
    for target in ("cpu", "qnn-htp"):
        recipe = AnalyzeRecipe(
            float_model=str(_sample()), quant_model=str(out), data=data, target=target
        )
        job = run_job(recipe)
        assert job.state is JobState.SUCCEEDED, (target, job.error)
        analysis = job.report.result  # type: ignore[union-attr]
        assert analysis.outputs[0].sqnr_db > 30, (target, analysis.outputs)


def test_a_dim_name_shared_by_two_sizes_is_fixed_where_it_stands(tmp_path: Path) -> None:
    """A Paddle export names every free dim "?": fixing H to 48 must not fix W with it."""
    from onnx import TensorProto, helper

    from edgestudio.core.targets.target_check import dynamic_inputs, fixed_copy

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "paddle",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3, "?", "?"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    src, out = tmp_path / "paddle.onnx", tmp_path / "fixed.onnx"
    onnx.save(model, str(src))
    assert dynamic_inputs(model) == ["x"]
    assert fixed_copy(src, {"x": [1, 3, 48, 192]}, out).fixes == ["x fixed to 1x3x48x192"]
    fixed = onnx.load(str(out)).graph
    for value in (fixed.input[0], fixed.output[0]):
        assert [d.dim_value for d in value.type.tensor_type.shape.dim] == [1, 3, 48, 192]


def _sample() -> Path:
    from edgestudio.resources import SAMPLE_MODEL

    return Path(SAMPLE_MODEL)


def test_a_quantized_activation_is_read_back_as_dequantize_linear_computes_it() -> None:
    """The NPU's per-layer values are integers read from its QuantizeLinear outputs: turned
    back into floats exactly as onnxruntime's DequantizeLinear does, per tensor and per axis."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from edgestudio.core.quant.deployed import QuantizedActivation

    rng = np.random.default_rng(0)
    values = rng.integers(0, 256, size=(2, 3, 4, 4), dtype=np.uint8)
    for scale, zero, axis in (
        (np.float32(0.02), np.uint8(128), 1),
        (np.array([0.01, 0.02, 0.05], np.float32), np.array([3, 128, 250], np.uint8), 1),
    ):
        node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis)
        graph = helper.make_graph(
            [node],
            "dq",
            [helper.make_tensor_value_info("q", TensorProto.UINT8, list(values.shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(values.shape))],
            [
                numpy_helper.from_array(np.asarray(scale), "s"),
                numpy_helper.from_array(np.asarray(zero), "z"),
            ],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        expected = session.run(None, {"q": values})[0]
        ours = QuantizedActivation("q", np.asarray(scale), np.asarray(zero), axis)
        np.testing.assert_array_equal(ours.dequantize(values), expected)
