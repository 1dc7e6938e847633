"""SmoothQuant: exact in float, folded where it can be, flatter MatMul inputs, one job option."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from edgestudio.core.quant.smooth_quant import channel_maxima, smooth, smoothing_targets
from tests import models


def _samples(count: int = 8) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [{"x": rng.standard_normal((1, 8, 16)).astype(np.float32)} for _ in range(count)]


def _run(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], outputs: list[str] | None = None
) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(outputs, feeds)  # type: ignore[no-any-return]


def test_smoothing_is_exact_in_float_and_folds_where_it_can(tmp_path: Path) -> None:
    original = models.outlier_block()
    model = onnx.ModelProto()
    model.CopyFrom(original)
    targets = smoothing_targets(model)
    assert sorted(targets) == ["h", "n"]
    maxima = channel_maxima(model, sorted(targets), _samples(), tmp_path)
    assert maxima["n"].argmax() == 3 and maxima["n"].shape == (16,)
    done = smooth(model, maxima, alpha=0.5)
    assert done.folded == ["n"]  # the LayerNorm's only readers are the two MatMuls
    assert done.inserted == ["h"]  # h also feeds the residual Add: a Mul before o_proj
    onnx.checker.check_model(model)
    for sample in _samples(3):
        np.testing.assert_allclose(
            _run(model, sample)[0], _run(original, sample)[0], rtol=1e-4, atol=1e-4
        )
    residual = next(n for n in model.graph.node if n.name == "residual")
    assert "h" in residual.input  # the residual path reads h itself, unsmoothed
    # the LayerNorm's output, as the MatMuls read it, lost its outlier channel
    probe = model.graph.output.add()
    probe.name = "n"
    smoothed_n = _run(model, _samples(1)[0], ["n"])[0]
    before, after = maxima["n"], np.abs(smoothed_n).reshape(-1, 16).max(axis=0)
    assert before.max() / np.median(before) > 20 > after.max() / np.median(after)


def test_smoothing_is_hand_computed(tmp_path: Path) -> None:
    """s_j = max|X_j|^α / max_n |W_jn|^(1−α), weights of both readers together."""
    model = models.outlier_block()
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    maxima = channel_maxima(model, ["n", "h"], _samples(), tmp_path)
    alpha = 0.7
    wmax = np.maximum(np.abs(weights["wq"]).max(axis=1), np.abs(weights["wk"]).max(axis=1))
    s = maxima["n"] ** alpha / wmax ** (1 - alpha)
    smooth(model, maxima, alpha)
    after = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_allclose(after["wq"], weights["wq"] * s[:, None], rtol=1e-5)
    np.testing.assert_allclose(after["ln.gamma"], weights["ln.gamma"] / s, rtol=1e-5)
    np.testing.assert_allclose(after["ln.beta"], weights["ln.beta"] / s, rtol=1e-5, atol=1e-7)
