"""Each failure seen on real pretrained models, reproduced with a small model built in code:
results that do not load are never a success, jobs feed models inputs they accept, and a check
that could not run says so."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.model.result_gate import run_in_process, run_isolated
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models
from tests.cli.run import run_cli

SYNTHETIC = DataSource("synthetic", samples=4, seed=0)


@pytest.mark.e2e
def test_per_channel_qdq_on_opset_11_raises_the_opset_and_loads(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(opset=11), tmp_path / "m.onnx")
    out = tmp_path / "pc.onnx"
    job = run_job(
        QuantRecipe(model=str(src), output=str(out), mode="qdq", per_channel=True, calib=SYNTHETIC)
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.result.onnxruntime == "loads and runs"
    assert any("raised to opset 13" in n for n in job.report.result.notes)
    result = onnx.load(str(out))
    assert next(o.version for o in result.opset_import if o.domain in ("", "ai.onnx")) >= 13
    assert run_in_process(out, {"x": np.ones((1, 3, 8, 8), np.float32)}).ok


def _per_axis_dq_at_opset_11() -> onnx.ModelProto:
    """What ORT's quantizer wrote for per-channel QDQ at opset 11: a DequantizeLinear with an
    axis attribute, which that opset does not have ("Unrecognized attribute: axis")."""
    q = numpy_helper.from_array(np.ones((2, 3), np.int8), "q")
    scale = numpy_helper.from_array(np.ones(2, np.float32), "scale")
    zp = numpy_helper.from_array(np.zeros(2, np.int8), "zp")
    nodes = [
        helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["w"], axis=0),
        helper.make_node("MatMul", ["x", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "bad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [q, scale, zp],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 6
    return model


def test_the_result_gate_refuses_what_onnxruntime_cannot_load(tmp_path: Path) -> None:
    bad = models.save(_per_axis_dq_at_opset_11(), tmp_path / "bad.onnx")
    feeds = {"x": np.ones((1, 2), np.float32)}
    here = run_in_process(bad, feeds)
    assert not here.ok and "cannot load" in here.reason and "axis" in here.reason
    isolated = run_isolated(bad, feeds)
    assert not isolated.ok and not isolated.crashed and "axis" in isolated.reason
    good = models.save(models.state_input(), tmp_path / "good.onnx")
    feeds = {"x": np.ones((1, 16), np.float32), "state": np.zeros((2, 1, 128), np.float32)}
    assert run_isolated(good, feeds).ok
    assert run_isolated(good, feeds, extended_only=True).ok  # the diagnosis' level, too
    assert not run_isolated(bad, {"x": np.ones((1, 2), np.float32)}, extended_only=True).ok


@pytest.mark.e2e
def test_static_quantization_calibrates_a_state_input_model(tmp_path: Path) -> None:
    src = models.save(models.state_input(), tmp_path / "m.onnx")
    job = run_job(
        QuantRecipe(model=str(src), output=str(tmp_path / "q.onnx"), mode="qdq", calib=SYNTHETIC)
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    assert job.report.result.inputs["inputs"][1]["shape"] == [2, 1, 128]


@pytest.mark.e2e
def test_fp16_of_a_gru_model_is_proven_to_run(tmp_path: Path) -> None:
    src = models.save(models.gru_model(), tmp_path / "gru.onnx")
    out = tmp_path / "gru16.onnx"
    job = run_job(QuantRecipe(model=str(src), output=str(out), mode="fp16"))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.result.onnxruntime == "loads and runs"


def test_convert_whose_check_cannot_run_is_unchecked_not_failed(tmp_path: Path) -> None:
    src = models.save(models.odd_length(37), tmp_path / "m.onnx")
    out, report = tmp_path / "o.onnx", tmp_path / "r.json"
    proc = run_cli("convert", str(src), "-o", str(out), "--opset", "18", "--json", str(report))
    assert proc.returncode == 4, proc.stderr
    assert "converted, unchecked" in proc.stdout and "could not check" in proc.stdout
    data = json.loads(report.read_text())
    assert data["outcome"] == "unchecked" and data["check"]["status"] == "unchecked"
    assert out.exists()
    # Told the size, the same conversion is checked and passes.
    proc = run_cli(
        "convert", str(src), "-o", str(out), "--opset", "18", "--overwrite", "--shape", "x=1x37"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "equivalent" in proc.stdout


def test_convert_of_an_embedding_model_compares_real_numbers(tmp_path: Path) -> None:
    src = models.save(models.embedding_encoder(rows=30, types=2), tmp_path / "m.onnx")
    proc = run_cli("convert", str(src), "-o", str(tmp_path / "o.onnx"), "--opset", "19")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: equivalent" in proc.stdout and "batch=3" in proc.stdout


@pytest.mark.e2e
def test_bench_and_profile_take_shape_range_and_data(tmp_path: Path) -> None:
    src = models.save(models.embedding_encoder(rows=30), tmp_path / "m.onnx")
    report = tmp_path / "b.json"
    proc = run_cli(
        "bench",
        str(src),
        "--runs",
        "3",
        "--warmup",
        "1",
        "--shape",
        "ids=1x5",
        "--shape",
        "type_ids=1x5",
        "--shape",
        "mask=1x5",
        "--range",
        "ids=0:3",
        "--json",
        str(report),
    )
    assert proc.returncode == 0, proc.stderr
    row = json.loads(report.read_text())["results"][0]
    assert row["inputs"]["ids"] == [1, 5] and "median_ms" in row
    data = tmp_path / "d.npz"
    np.savez(
        data,
        ids=np.zeros((2, 9), np.int64),
        type_ids=np.ones((2, 9), np.int64),
        mask=np.ones((2, 9), np.int64),
    )
    proc = run_cli("profile", str(src), "--runs", "2", "--data", str(data))
    assert proc.returncode == 0, proc.stderr
    assert "placement:" in proc.stdout
    proc = run_cli("bench", str(src), "--runs", "2", "--shape", "nope=1x2")
    assert "No input called nope" in proc.stdout + proc.stderr


def test_fp16_keeps_ops_in_float32_when_onnxruntime_crashes_on_them(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """onnxruntime 1.32 segfaults opening some fp16 GRU models; the gate sees a crash, and the
    job converts again with the recurrent ops kept in float32 and says so."""
    from edgestudio.core.model.result_gate import GateResult
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.quant import fallbacks
    from edgestudio.core.quant import quant_proof as quantize_op

    def gate(path: Path, feeds: dict[str, np.ndarray]) -> GateResult:
        model = onnx.load(str(path))
        inits = {t.name: t.data_type for t in model.graph.initializer}
        fp16_gru = any(
            n.op_type == "GRU" and inits.get(n.input[1]) == TensorProto.FLOAT16
            for n in model.graph.node
        )
        return (
            GateResult(False, "onnxruntime crashed (SIGSEGV)", crashed=True)
            if fp16_gru
            else GateResult(True)
        )

    monkeypatch.setattr(quantize_op, "run_isolated", gate)

    monkeypatch.setattr(fallbacks, "run_isolated", gate)
    src = models.save(models.gru_model(), tmp_path / "gru.onnx")
    recipe = QuantRecipe(model=str(src), output=str(tmp_path / "o.onnx"), mode="fp16")
    notes: list[str] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        out, state, inspected, _ = quantize_op.quantize_and_prove(
            recipe, src, None, tmp_path, None, {}, RecordingReporter(), notes, pool
        )
    assert state == "loads and runs"
    result = onnx.load(str(out))
    assert inspected.model == result  # the result read back is the one that ran
    assert any("fp16 form of GRU" in n and "float32" in n for n in notes)
    gru = next(n for n in result.graph.node if n.op_type == "GRU")
    weights = {t.name: t.data_type for t in result.graph.initializer}
    assert weights[gru.input[1]] == TensorProto.FLOAT


def _float_only_ops_model() -> onnx.ModelProto:
    """MatMul → Celu (float-only operator) → Add, plus an unnamed IsInf (float-only before
    opset 20) feeding a Where: the fp16 converter turns them to float16 and onnxruntime
    rejects the result, naming the node (or, for the unnamed one, its operator)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    w = numpy_helper.from_array(
        np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32), "w"
    )
    b = numpy_helper.from_array(np.ones(8, np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
        helper.make_node("Celu", ["m"], ["c"], name="celu"),
        helper.make_node("Add", ["c", "b"], ["a"], name="add"),
        helper.make_node("IsInf", ["a"], ["inf"]),  # no name
        helper.make_node("Where", ["inf", "b", "a"], ["y"], name="where"),
    ]
    graph = helper.make_graph(nodes, "float_only", [x], [y], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.e2e
def test_fp16_keeps_only_the_nodes_onnxruntime_rejects_in_float32(tmp_path: Path) -> None:
    src = models.save(_float_only_ops_model(), tmp_path / "m.onnx")
    out = tmp_path / "o.onnx"
    job = run_job(QuantRecipe(model=str(src), output=str(out), mode="fp16"))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    notes = " ".join(job.report.result.notes)
    assert "Celu node 'celu'" in notes and "every IsInf node" in notes and "float32" in notes
    result = onnx.load(str(out))
    weights = {t.name: t.data_type for t in result.graph.initializer}
    assert weights["w"] == TensorProto.FLOAT16  # the rest is float16
    x = np.random.default_rng(1).normal(size=(2, 8)).astype(np.float32)
    assert run_in_process(out, {"x": x}).ok


@pytest.mark.e2e
def test_a_tree_ensemble_is_benchmarked_and_profiled_and_refused_for_quantization(
    tmp_path: Path,
) -> None:
    """A LightGBM-style model keeps its work in one node's attributes: quantization does not
    apply (said before any work, in every mode); bench and profile run it from its structure
    (the parsed attributes are released before the session is made)."""
    src = models.save(models.tree_ensemble(trees=1000, depth=6), tmp_path / "trees.onnx")
    for mode in ("dynamic", "qdq", "fp16", "int4"):
        calib = DataSource(kind="synthetic") if mode == "qdq" else None
        job = run_job(
            QuantRecipe(
                model=str(src), output=str(tmp_path / f"{mode}.onnx"), mode=mode, calib=calib
            )
        )
        assert job.state is JobState.FAILED
        assert "does not apply to this model" in job.error and "TreeEnsembleClassifier" in job.error
        assert not (tmp_path / f"{mode}.onnx").exists()
    proc = run_cli("bench", str(src), "--runs", "3", "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    assert "trees.onnx" in proc.stdout and "median" in proc.stdout
    proc = run_cli("profile", str(src), "--runs", "2")
    assert proc.returncode == 0, proc.stderr
    assert "TreeEnsembleClassifier" in proc.stdout


@pytest.mark.e2e
def test_fp16_keeps_an_operator_type_without_float16_kernels_in_float32(tmp_path: Path) -> None:
    """ScatterElements with reduction 'add' has no float16 kernel on the CPU: after the second
    such node fails, every node of the type is kept in float32 (a GNN has dozens of them)."""
    src = models.save(models.pooled_graph_network(), tmp_path / "gnn.onnx")
    out = tmp_path / "o.onnx"
    job = run_job(QuantRecipe(model=str(src), output=str(out), mode="fp16"))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    notes = " ".join(job.report.result.notes)
    assert "every ScatterElements node" in notes and "float32" in notes
    assert "Status Message" not in notes  # onnxruntime's cause, without its codes and paths
    kinds = {n.op_type: n for n in onnx.load(str(out)).graph.node}
    assert "ScatterElements" in kinds


@pytest.mark.e2e
@pytest.mark.parametrize("cache", ["on", "off"])
def test_a_tensor_with_a_nan_calibration_range_stays_in_float(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    """onnxruntime asserts "scale issue" on a NaN range (a NaN fill value behind a Where):
    the tensor's range is dropped, its nodes stay in float, and the job says so."""
    from edgestudio.core.quant.calib_cache import DISABLE_ENV

    if cache == "off":
        monkeypatch.setenv(DISABLE_ENV, "1")
    src = models.save(models.nan_fill_where(), tmp_path / "m.onnx")
    out = tmp_path / "q.onnx"
    job = run_job(
        QuantRecipe(
            model=str(src),
            output=str(out),
            mode="qdq",
            calib=DataSource(kind="synthetic", samples=4),
        )
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    notes = " ".join(job.report.result.notes)
    assert "no finite range for 'fill'" in notes and "'where'" in notes
    assert any(n.op_type == "DequantizeLinear" for n in onnx.load(str(out)).graph.node)


def test_an_fp16_crash_naming_nothing_is_bisected_to_the_types_kept_in_float32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An fp16 result onnxruntime crashes on, with no recurrent op to suspect (an unrolled
    segmenter): the job finds, by trying, the operator types to keep in float32 — here Relu,
    which the played crash needs in float16 — and keeps only those."""
    from edgestudio.core.model.result_gate import GateResult
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.quant import fallbacks
    from edgestudio.core.quant import quant_proof as quantize_op

    def relu_in_float16(path: Path) -> bool:
        model = onnx.load(str(path))
        producers = {o: n for n in model.graph.node for o in n.output}
        relu = next(n for n in model.graph.node if n.op_type == "Relu")
        before = producers.get(relu.input[0])
        return not (
            before is not None
            and before.op_type == "Cast"
            and before.attribute[0].i == TensorProto.FLOAT
        )

    tries: list[Path] = []

    def gate(path: Path, feeds: dict[str, np.ndarray]) -> GateResult:
        tries.append(path)
        if relu_in_float16(path):
            return GateResult(False, "onnxruntime crashed (SIGSEGV)", crashed=True)
        return GateResult(True)

    monkeypatch.setattr(quantize_op, "run_isolated", gate)

    monkeypatch.setattr(fallbacks, "run_isolated", gate)
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    recipe = QuantRecipe(model=str(src), output=str(tmp_path / "o.onnx"), mode="fp16")
    notes: list[str] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        out, state, _, _ = quantize_op.quantize_and_prove(
            recipe, src, None, tmp_path, None, {}, RecordingReporter(), notes, pool
        )
    assert state == "loads and runs"
    said = " ".join(notes)
    assert "keeping Relu in float32 makes it run" in said and "each in a child process" in said
    assert not relu_in_float16(out)
    weights = {t.name: t.data_type for t in onnx.load(str(out)).graph.initializer}
    assert weights["conv.w"] == TensorProto.FLOAT16  # the rest is float16
    assert len(tries) <= 10


def test_an_fp16_crash_that_keeping_everything_does_not_cure_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgestudio.core.model.result_gate import GateResult
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.quant import fallbacks
    from edgestudio.core.quant import quant_proof as quantize_op

    for module in (quantize_op, fallbacks):
        monkeypatch.setattr(
            module,
            "run_isolated",
            lambda path, feeds, **kw: GateResult(
                False, "onnxruntime crashed (SIGSEGV)", crashed=True
            ),
        )
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    recipe = QuantRecipe(model=str(src), output=str(tmp_path / "o.onnx"), mode="fp16")
    with (
        ThreadPoolExecutor(max_workers=1) as pool,
        pytest.raises(quantize_op.QuantizeError, match="unusable"),
    ):
        quantize_op.quantize_and_prove(
            recipe, src, None, tmp_path, None, {}, RecordingReporter(), [], pool
        )
