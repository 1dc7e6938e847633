"""A choice that failed on a model is never suggested for it again: the quantization job
remembers it (per model file), the analysis's advice leaves it out and says why, and a later
success with it forgets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgestudio.core.inputs.data_source import DataProvenance, DataSource
from edgestudio.core.progress import RecordingReporter
from edgestudio.core.quant import quantize
from edgestudio.core.quant.failed_modes import failed_choices, remember_failure
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.verdicts import analysis_verdict

REAL = DataProvenance("images", 8, "/data/lines")
POOR = [{"output": "y", "sqnr_db": 5.0, "cosine": 0.9}]


def _recipe(model: Path, out: Path, **changes: object) -> QuantRecipe:
    return QuantRecipe(
        model=str(model),
        output=str(out),
        overwrite=True,
        mode="qdq",
        calib=DataSource("synthetic", samples=4),
        **changes,  # type: ignore[arg-type]
    )


def test_a_failed_per_channel_quantization_is_remembered_then_forgotten_on_success(
    conv_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*args: object, **kwargs: object) -> None:
        raise quantize.QuantizeError("operands could not be broadcast together")

    with monkeypatch.context() as patched:
        patched.setattr(quantize, "quantize_and_prove", fails)
        with pytest.raises(quantize.QuantizeError):
            quantize.run_quantize(
                _recipe(conv_model, tmp_path / "q.onnx", per_channel=True),
                RecordingReporter(),
                tmp_path,
            )
    assert failed_choices(conv_model) == {"per-channel": "operands could not be broadcast together"}
    # a per-channel quantization that works forgets the failure
    quantize.run_quantize(
        _recipe(conv_model, tmp_path / "q.onnx", per_channel=True), RecordingReporter(), tmp_path
    )
    assert failed_choices(conv_model) == {}


def test_the_advice_leaves_out_what_failed_and_says_why(conv_model: Path) -> None:
    advice = analysis_verdict(
        POOR, None, [], ["QuantizeLinear"], per_channel=False, has_matmul=True, data=REAL
    ).suggestions
    assert any(t.startswith("per-channel weights") for t in advice)
    assert any(t.startswith("dynamic quantization") for t in advice)
    remember_failure(conv_model, ["per-channel"], "ValueError: truth value is ambiguous")
    remember_failure(conv_model, ["dynamic", "per-channel"], "both at once: remembers neither")
    failed = failed_choices(conv_model)
    advice = analysis_verdict(
        POOR,
        None,
        [],
        ["QuantizeLinear"],
        per_channel=False,
        has_matmul=True,
        data=REAL,
        failed=failed,
    ).suggestions
    assert not any(t.startswith("per-channel weights") for t in advice)
    assert any(t.startswith("dynamic quantization") for t in advice)
    assert advice[-1] == (
        "per-channel is not suggested: it failed on this model before "
        "(ValueError: truth value is ambiguous)"
    )
