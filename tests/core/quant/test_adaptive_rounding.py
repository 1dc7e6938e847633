"""Adaptive rounding (GPTQ): lower output error than round-to-nearest, against a hand-computed
reference; the same scales; a job option that keeps the model an ordinary, running QDQ model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.quant.adaptive_rounding import gptq_round


def _reference_gptq(w: np.ndarray, h: np.ndarray, s: np.ndarray) -> np.ndarray:
    """GPTQ written out the slow way: round row k, then re-solve the best float values of the
    rows left for the error so far (least squares on H), row by row."""
    k = w.shape[0]
    h = h + 0.01 * np.mean(np.diag(h)) * np.eye(k)
    q = np.zeros_like(w)
    target = w.copy()
    for row in range(k):
        q[row] = np.clip(np.round(target[row] / s), -128, 127)
        done = slice(0, row + 1)
        rest = slice(row + 1, k)
        if row + 1 < k:  # the rest minimises ‖X(W − [Q·s; V])‖ given the rows already fixed
            delta = w[done] - q[done] * s
            target[rest] = w[rest] + np.linalg.solve(h[rest, rest], h[rest, done] @ delta)
    return q


def test_gptq_equals_the_reference_and_lowers_the_output_error() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 12)) @ rng.standard_normal((12, 12))  # correlated inputs
    w = rng.standard_normal((12, 5)) * 0.3
    s = np.abs(w).max(axis=0) / 127
    h = x.T @ x
    q = gptq_round(w, h, s, np.zeros(5), -128, 127)
    np.testing.assert_array_equal(q, _reference_gptq(w, h, s))
    nearest = np.clip(np.round(w / s), -128, 127)

    def error(values: np.ndarray) -> float:
        return float(np.sum((x @ w - x @ (values * s)) ** 2))

    assert error(q) < 0.8 * error(nearest)
    assert np.abs(q - nearest).max() <= 2  # it moves roundings, not scales


@pytest.mark.e2e
def test_the_option_rounds_a_qdq_models_matmuls_and_the_model_runs(tmp_path: Path) -> None:
    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.model.result_gate import run_in_process
    from edgestudio.core.quant.quant_recipes import QuantRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job
    from tests import models

    src = models.save(models.outlier_block(), tmp_path / "m.onnx")
    rng = np.random.default_rng(3)
    calib = tmp_path / "c.npz"
    np.savez(calib, x=rng.standard_normal((16, 8, 16)).astype(np.float32))
    outs = {}
    for flag in (False, True):
        out = tmp_path / f"q{int(flag)}.onnx"
        job = run_job(
            QuantRecipe(
                model=str(src),
                output=str(out),
                mode="qdq",
                per_channel=True,
                calib=DataSource("npz", str(calib)),
                adaptive_rounding=flag,
            )
        )
        assert job.state is JobState.SUCCEEDED, job.error
        outs[flag] = onnx.load(str(out))
        if flag:
            assert job.report is not None
            assert any(
                "Adaptive rounding (GPTQ) of 3 MatMul weight(s)" in n
                for n in job.report.result.notes
            )
            assert run_in_process(out, {"x": rng.standard_normal((1, 8, 16)).astype(np.float32)}).ok
    plain = {t.name: onnx.numpy_helper.to_array(t) for t in outs[False].graph.initializer}
    rounded = {t.name: onnx.numpy_helper.to_array(t) for t in outs[True].graph.initializer}
    assert set(plain) == set(rounded)
    ints = [n for n, v in plain.items() if v.dtype == np.int8 and v.ndim == 2]
    assert ints and any(not np.array_equal(plain[n], rounded[n]) for n in ints)
    scales = [n for n, v in plain.items() if v.dtype == np.float32 and n.endswith("_scale")]
    assert all(np.array_equal(plain[n], rounded[n]) for n in scales)  # same scales


def _conv(w: np.ndarray, **attrs: object) -> onnx.ModelProto:
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", **attrs)],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w.astype(np.float32), "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run_conv(w: np.ndarray, x: np.ndarray, **attrs: object) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(
        _conv(w, **attrs).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return np.asarray(session.run(None, {"x": x.astype(np.float32)})[0], np.float64)


@pytest.mark.parametrize(
    "attrs",
    [
        {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2], "group": 2},
        {"pads": [1, 1, 1, 1], "group": 4},  # depthwise
        {},
    ],
)
def test_conv_patches_times_the_flattened_kernel_is_the_conv(attrs: dict[str, object]) -> None:
    from edgestudio.core.quant.adaptive_rounding import ConvShape

    rng = np.random.default_rng(1)
    group = int(attrs.get("group", 1))  # type: ignore[call-overload]
    w = rng.standard_normal((4, 4 // group, 3, 2))
    x = rng.standard_normal((2, 4, 9, 7))
    shape = ConvShape.of(_conv(w, **attrs).graph.node[0], (3, 2))
    assert isinstance(shape, ConvShape)
    y = _run_conv(w, x, **attrs)  # [N, OC, H', W']
    per = 4 // group
    for g in range(group):
        patches = shape.patches(x, slice(g * per, (g + 1) * per))
        block = w[g * per : (g + 1) * per].reshape(per, -1).T
        expected = y[:, g * per : (g + 1) * per].transpose(0, 2, 3, 1).reshape(-1, per)
        np.testing.assert_allclose(patches @ block, expected, rtol=1e-5, atol=1e-5)


def test_gptq_on_a_conv_lowers_its_output_error_measured_by_running_it() -> None:
    from edgestudio.core.quant.adaptive_rounding import ConvShape

    rng = np.random.default_rng(4)
    w = rng.standard_normal((8, 6, 3, 3)) * 0.2
    mix = rng.standard_normal((6, 6))
    x = np.einsum("nchw,cd->ndhw", rng.standard_normal((16, 6, 12, 12)), mix)  # correlated
    shape = ConvShape.of(_conv(w, pads=[1, 1, 1, 1]).graph.node[0], (3, 3))
    assert isinstance(shape, ConvShape)
    patches = shape.patches(x, slice(0, 6))
    h = patches.T @ patches
    flat = w.reshape(8, -1).T
    s = np.abs(flat).max(axis=0, keepdims=True) / 127
    q = gptq_round(flat, h, s, np.zeros_like(s), -128, 127)
    nearest = np.clip(np.round(flat / s), -128, 127)
    y = _run_conv(w, x, pads=[1, 1, 1, 1])

    def error(values: np.ndarray) -> float:
        approx = (values * s).T.reshape(w.shape)
        return float(np.sum((y - _run_conv(approx, x, pads=[1, 1, 1, 1])) ** 2))

    assert error(q) < 0.8 * error(nearest)


def _qdq_matmul(width: int = 8) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """x[1, width] @ W[width, 4]: the float model and its QDQ form (W stored in int8)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    w = rng.standard_normal((width, 4)).astype(np.float32)
    scale = np.float32(np.abs(w).max() / 127)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    float_model = helper.make_model(
        helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
            "f",
            [x],
            [y],
            [numpy_helper.from_array(w, "w")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    quant_model = helper.make_model(
        helper.make_graph(
            [
                helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["wd"], name="dq"),
                helper.make_node("MatMul", ["x", "wd"], ["y"], name="mm"),
            ],
            "q",
            [x],
            [y],
            [
                numpy_helper.from_array(np.round(w / scale).astype(np.int8), "wq"),
                numpy_helper.from_array(scale, "s"),
                numpy_helper.from_array(np.int8(0), "z"),
            ],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    return float_model, quant_model


@pytest.mark.parametrize(
    ("limit", "value", "said"),
    [("MAX_INPUT_WIDTH", 4, "too wide"), ("HESSIAN_BUDGET_BYTES", 100, "MiB budget")],
)
def test_layers_too_costly_to_round_are_left_to_nearest_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, value: int, said: str
) -> None:
    from edgestudio.core.quant import adaptive_rounding as ar

    float_model, quant_model = _qdq_matmul(8)
    samples = [{"x": np.ones((1, 8), np.float32)}]
    assert ar.adaptive_rounding(quant_model, float_model, samples, tmp_path).layers == ["mm"]
    monkeypatch.setattr(ar, limit, value)
    done = ar.adaptive_rounding(quant_model, float_model, samples, tmp_path)
    assert done.layers == [] and said in done.skipped[0]
