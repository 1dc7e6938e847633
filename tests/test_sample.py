"""The bundled sample is a real trained model: its accuracy is measured, not assumed."""

from __future__ import annotations

import numpy as np
import onnx

from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL


def test_sample_accuracy_matches_its_metadata() -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(str(SAMPLE_MODEL), providers=["CPUExecutionProvider"])
    data = np.load(SAMPLE_EVALUATION)
    logits = session.run(None, {"image": data["image"]})[0]
    accuracy = float((logits.argmax(axis=1) == data["labels"]).mean())
    recorded = float(
        {p.key: p.value for p in onnx.load(str(SAMPLE_MODEL)).metadata_props}["heldout_top1"]
    )
    assert accuracy > 0.95
    assert abs(accuracy - recorded) < 0.01


def test_sample_data_matches_model_inputs() -> None:
    calib = np.load(SAMPLE_CALIBRATION)
    evaluation = np.load(SAMPLE_EVALUATION)
    assert calib["image"].shape[1:] == (1, 8, 8) and calib["image"].dtype == np.float32
    assert len(evaluation["image"]) == len(evaluation["labels"]) == 360
    assert set(np.unique(evaluation["labels"])) == set(range(10))
