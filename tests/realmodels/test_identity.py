"""The accelerated quantizer writes the same bytes as stock onnxruntime on every real corpus model,
for dynamic and static QDQ, from the model the quantize job feeds it (after ORT's pre-processing).

Two calibration samples keep it to ~30 s for the whole corpus; skipped, with the reason, while
the corpus cache is empty. Where stock onnxruntime itself cannot quantize a model, the
accelerated path must fail the same way; models the quantize job refuses before onnxruntime
sees them (already quantized, nothing the mode changes) are skipped, saying so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.inputs.input_probe import resolve_inputs
from edgestudio.core.quant.accel import accelerator as quant_accel
from edgestudio.core.quant.accel import ort_guard
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quantize import _nothing_to_quantize
from edgestudio.core.quant.quantized_graph import existing_quantization
from tests.realmodels.corpus import CORPUS, SKIP_REASON, RealModel

# The real-model corpus: end to end, in `make test-e2e` (and CI), not the fast tier.
pytestmark = pytest.mark.e2e

SAMPLES = 2


class _Reader:
    def __init__(self, samples: list[dict[str, np.ndarray]]) -> None:
        self.samples, self.k = samples, 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        self.k += 1
        return self.samples[self.k - 1] if self.k <= len(self.samples) else None

    def rewind(self) -> None:
        self.k = 0


def _quantize(
    src: Path, out: Path, mode: str, samples: list[dict[str, np.ndarray]], accelerate: bool
) -> bytes | str:
    """The result's bytes, or the exception's type and first line when onnxruntime fails."""
    from onnxruntime.quantization import QuantFormat, quantize_dynamic, quantize_static

    try:
        if accelerate:
            with quant_accel.accelerated() as used:
                assert used
                _run(quantize_dynamic, quantize_static, QuantFormat, src, out, mode, samples)
        else:
            _run(quantize_dynamic, quantize_static, QuantFormat, src, out, mode, samples)
    except Exception as exc:  # stock and accelerated must fail alike
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return onnx.load(str(out)).SerializeToString()


def _run(
    dynamic: object,
    static: object,
    formats: object,
    src: Path,
    out: Path,
    mode: str,
    samples: list[dict[str, np.ndarray]],
) -> None:
    if mode == "dynamic":
        dynamic(str(src), str(out))  # type: ignore[operator]
    else:
        static(
            str(src),
            str(out),
            _Reader(samples),  # type: ignore[operator]
            quant_format=formats.QDQ,
        )  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["dynamic", "qdq"])
@pytest.mark.parametrize("model", CORPUS, ids=lambda m: m.name)
def test_accelerated_quantizer_matches_stock_on_real_models(model: RealModel, mode: str) -> None:
    if not model.path.is_file():
        pytest.skip(reason=SKIP_REASON)
    if reason := ort_guard.unsupported_reason():
        pytest.skip(reason=f"accelerated path off: {reason}")
    from onnxruntime.quantization.shape_inference import quant_pre_process

    proto = onnx.load(str(model.path))
    if existing_quantization(proto):
        pytest.skip(reason="already quantized: the quantize job refuses it before onnxruntime")
    if why := _nothing_to_quantize(proto, QuantRecipe(model=str(model.path), mode=mode)):
        pytest.skip(reason=f"the quantize job refuses it before onnxruntime: {why[:80]}…")
    resolved = resolve_inputs(model.path)
    samples = [resolved.spec.feeds(seed) for seed in range(SAMPLES)]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "pre.onnx"
        try:  # as the quantize job does: pre-processed where ORT can
            quant_pre_process(str(model.path), str(src), skip_symbolic_shape=True)
        except Exception:
            src = model.path
        stock = _quantize(src, Path(tmp) / "stock.onnx", mode, samples, accelerate=False)
        fast = _quantize(src, Path(tmp) / "fast.onnx", mode, samples, accelerate=True)
    if isinstance(stock, str) or isinstance(fast, str):
        assert stock == fast, "stock and accelerated onnxruntime must fail alike"
        return
    assert stock == fast, f"{model.name} {mode}: the accelerated result differs from stock's"
