"""Data files shipped with EdgeStudio (installed as the ``edgestudio.resources`` package)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent
SAMPLE_MODEL = ROOT / "samples" / "digits_cnn.onnx"
SAMPLE_CALIBRATION = ROOT / "samples" / "digits_calib.npz"
SAMPLE_EVALUATION = ROOT / "samples" / "digits_eval.npz"
ICON_SVG = ROOT / "icons" / "edgestudio.svg"
