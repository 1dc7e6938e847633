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
    from edgestudio.jobs.runner import JobState, run_job
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
                "Adaptive rounding (GPTQ) of 3 MatMul/Gemm weight(s)" in n
                for n in job.report.details["notes"]
            )
            assert run_in_process(out, {"x": rng.standard_normal((1, 8, 16)).astype(np.float32)}).ok
    plain = {t.name: onnx.numpy_helper.to_array(t) for t in outs[False].graph.initializer}
    rounded = {t.name: onnx.numpy_helper.to_array(t) for t in outs[True].graph.initializer}
    assert set(plain) == set(rounded)
    ints = [n for n, v in plain.items() if v.dtype == np.int8 and v.ndim == 2]
    assert ints and any(not np.array_equal(plain[n], rounded[n]) for n in ints)
    scales = [n for n, v in plain.items() if v.dtype == np.float32 and n.endswith("_scale")]
    assert all(np.array_equal(plain[n], rounded[n]) for n in scales)  # same scales
