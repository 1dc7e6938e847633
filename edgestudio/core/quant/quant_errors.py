"""What quantizing raises: a rule broken, a model that cannot be quantized, or onnxruntime's
quantizer failing (with where)."""

from __future__ import annotations

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.quant.quantizer_fixes import (
    QuantizerFailure,
)


class QuantizeError(EdgeStudioError):
    """The recipe breaks a rule, the model cannot be quantized, or ORT's quantizer failed."""


class QuantizerError(QuantizeError):
    """onnxruntime's quantizer raised (``failure`` says what, and where)."""

    def __init__(self, failure: QuantizerFailure) -> None:
        super().__init__(f"onnxruntime's quantizer failed: {failure.cause}")
        self.failure = failure
