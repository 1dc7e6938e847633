"""Upcasting a float16 model to float32 (#49 item 2): exact weights, the interface kept, and
what onnxruntime's quantizer then quantizes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from edgestudio.core.convert.convert_recipes import ConvertRecipe
from edgestudio.core.convert.float32 import computes_in_float16, upcast_float16
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models

SYNTHETIC = DataSource("synthetic", samples=4, seed=0)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


@pytest.mark.parametrize("half_interface", [False, True])
def test_upcast_keeps_the_interface_and_the_weights_exact(half_interface: bool) -> None:
    original = models.float16_compute(half_interface)
    model = models.float16_compute(half_interface)
    assert computes_in_float16(model)
    done = upcast_float16(model)
    onnx.checker.check_model(model, full_check=True)
    assert not computes_in_float16(model)
    assert done.weights == 3 and done.constants == 1
    stored = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for t in original.graph.initializer:
        assert stored[t.name].dtype == np.float32
        assert np.array_equal(stored[t.name], onnx.numpy_helper.to_array(t).astype(np.float32))
    io = np.float16 if half_interface else np.float32
    assert [v.type.tensor_type.elem_type for v in [*model.graph.input, *model.graph.output]] == [
        onnx.helper.np_dtype_to_tensor_dtype(np.dtype(io))
    ] * 2
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(io)
    want, got = _run(original, x), _run(model, x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), atol=2e-2, rtol=2e-2
    )
    # no Cast is left between the two precisions inside the graph: only the interface's own
    # (the one writing a graph output stays, a no-op)
    casts = {n.name for n in model.graph.node if n.op_type == "Cast"}
    assert casts == ({"x_float32_cast", "y_float32_cast"} if half_interface else {"to_float"})


def test_a_float32_model_is_left_alone() -> None:
    model = models.conv_relu_gemm()
    assert not computes_in_float16(model)
    assert not upcast_float16(model)


@pytest.mark.e2e
def test_convert_float32_is_checked_to_float16_precision(tmp_path: Path) -> None:
    src = models.save(models.float16_compute(), tmp_path / "m.onnx")
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "f32.onnx"
    job = run_job(ConvertRecipe(model=str(src), output=str(out), float32=True))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.check is not None
    assert job.report.check.passed
    assert "float16's precision" in job.report.result.upcast
    assert not computes_in_float16(onnx.load(str(out)))
    assert ConvertRecipe(model="m.onnx", float32=True).command_line().endswith(" --float32")
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["qdq", "dynamic"])
def test_quantizing_a_float16_model_upcasts_it_first(tmp_path: Path, mode: str) -> None:
    src = models.save(models.float16_compute(), tmp_path / "m.onnx")
    out = tmp_path / "q.onnx"
    job = run_job(QuantRecipe(model=str(src), output=str(out), mode=mode, calib=SYNTHETIC))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    notes = " ".join(job.report.result.notes)
    assert "computes in float16" in notes and "convert --float32" in notes
    result = onnx.load(str(out))
    ops = {n.op_type for n in result.graph.node}
    assert ops & {"ConvInteger", "DequantizeLinear"}, ops
    # both convolutions' weights are stored in 8 bits
    eight_bit = [
        t
        for t in result.graph.initializer
        if len(t.dims) == 4 and t.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    ]
    assert len(eight_bit) == 2, [t.name for t in result.graph.initializer]
