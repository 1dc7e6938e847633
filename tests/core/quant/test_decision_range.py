"""A probability output that calibration left unable to reach 0.5: found in the written
model's own parameters, said by the quantize job, carried by its result, and true (the
quantized model never decides 'yes', where the float one does)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.progress import RecordingReporter
from edgestudio.core.quant.decision_range import unreachable_decisions
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quantize import run_quantize


def _detector(path: Path) -> Path:
    """x[1, 8] → Gemm → Sigmoid → ``yes`` [1, 1]: positive where the features sum above 4."""
    weight = numpy_helper.from_array(np.full((8, 1), 1.0, np.float32), "w")
    bias = numpy_helper.from_array(np.array([-4.0], np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["logit"], name="gemm"),
            helper.make_node("Sigmoid", ["logit"], ["yes"], name="sigmoid"),
        ],
        "detector",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("yes", TensorProto.FLOAT, [1, 1])],
        [weight, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def _windows(path: Path, positives: bool, seed: int = 0) -> DataSource:
    """16 feature windows: all quiet (sum ≈ 0.8 → p ≈ 0.04), or half of them loud (sum ≈ 6)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 0.2, (16, 8)).astype(np.float32)
    if positives:
        x[::2] += 0.6
    np.savez(path, x=x)
    return DataSource(kind="npz", path=str(path))


def _quantize(tmp_path: Path, model: Path, calib: DataSource, name: str):  # type: ignore[no-untyped-def]
    staging = tmp_path / f"staging_{name}"
    staging.mkdir()
    recipe = QuantRecipe(model=str(model), output=str(tmp_path / f"{name}.onnx"), calib=calib)
    report = run_quantize(recipe, RecordingReporter(), staging)
    return report, staging / report.files[0]


def test_calibration_without_positives_is_said_and_is_true(tmp_path: Path) -> None:
    model = _detector(tmp_path / "detector.onnx")
    report, quantized = _quantize(tmp_path, model, _windows(tmp_path / "quiet.npz", False), "quiet")
    assert report.result.undecidable == ["yes"]
    warning = next(w for w in report.warnings if "can no longer reach the 0.5" in w)
    assert "'yes'" in warning and "calibrate on samples that include it" in warning
    top = unreachable_decisions(onnx.load(str(quantized)))["yes"]
    assert 0.0 < top < 0.5
    # and it is true: a loud window is a 'yes' in float, never in the quantized model
    loud = np.full((1, 8), 0.9, np.float32)
    float_p = ort.InferenceSession(str(model)).run(None, {"x": loud})[0].item()
    quant_p = ort.InferenceSession(str(quantized)).run(None, {"x": loud})[0].item()
    assert float_p > 0.9 and quant_p <= top + 1e-6 < 0.5


def test_calibration_with_positives_leaves_the_decision_reachable(tmp_path: Path) -> None:
    model = _detector(tmp_path / "detector.onnx")
    report, quantized = _quantize(tmp_path, model, _windows(tmp_path / "mixed.npz", True), "mixed")
    assert report.result.undecidable == []
    assert not [w for w in report.warnings if "can no longer reach" in w]
    assert unreachable_decisions(onnx.load(str(quantized))) == {}


def test_a_tune_says_which_candidates_can_never_decide_yes() -> None:
    from edgestudio.core.quant.tune import Candidate, no_positives_text

    recipe = QuantRecipe(model="m.onnx", output="q.onnx")
    quiet = Candidate(1, recipe, "8-bit", state="done", undecidable=["yes"])
    fine = Candidate(2, recipe, "16-bit", state="done")
    text = no_positives_text([quiet, fine])
    assert text.startswith("#1 can never decide 'yes' at 'yes'")
    assert "#2" not in text and "calibrate on samples that include it" in text
    assert no_positives_text([fine]) == ""
    assert quiet.summary()["undecidable"] == ["yes"]  # what a resumed tune takes back
