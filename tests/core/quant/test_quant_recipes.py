"""The quantization recipes' own rules: the analysis that follows a quantization."""

from __future__ import annotations

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe


def test_the_analysis_after_a_quantization_feeds_the_model_as_it_was_fed() -> None:
    """Window, auto-tune (local and Ray) and sensitivity ranking chain the same analysis: the
    float model the quantization read, its result, the evaluation data, and, for synthetic
    data, the input sizes and ranges the quantization was given."""
    quantization = QuantRecipe(
        model="/m/net.onnx", output="/m/q.onnx", shapes=("x=1x3x64x64",), ranges=("x=0:1",)
    )
    data = DataSource("npz", "/m/eval.npz", samples=8)
    analysis = AnalyzeRecipe.after(quantization, "/tmp/staged.onnx", data, metric="classification")
    assert analysis == AnalyzeRecipe(
        float_model="/m/net.onnx",
        quant_model="/tmp/staged.onnx",
        data=data,
        metric="classification",
        shapes=("x=1x3x64x64",),
        ranges=("x=0:1",),
    )
