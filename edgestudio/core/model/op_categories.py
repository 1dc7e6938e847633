"""Operator categories, used to colour nodes so the structure of a network reads at a glance."""

from __future__ import annotations

CATEGORIES: dict[str, tuple[str, ...]] = {
    "layer": (
        "Conv",
        "ConvTranspose",
        "ConvInteger",
        "Gemm",
        "MatMul",
        "MatMulInteger",
        "MatMulNBits",
        "Einsum",
        "LSTM",
        "GRU",
        "RNN",
        "Attention",
        "MultiHeadAttention",
        "QLinearConv",
        "QLinearMatMul",
        "QGemm",
        "DynamicQuantizeMatMul",
    ),
    "activation": (
        "Relu",
        "LeakyRelu",
        "PRelu",
        "Sigmoid",
        "Tanh",
        "Gelu",
        "FastGelu",
        "Elu",
        "Selu",
        "Softplus",
        "Softsign",
        "HardSigmoid",
        "HardSwish",
        "Mish",
        "Softmax",
        "LogSoftmax",
        "Clip",
        "ThresholdedRelu",
        "Celu",
        "QuickGelu",
    ),
    "normalization": (
        "BatchNormalization",
        "LayerNormalization",
        "InstanceNormalization",
        "GroupNormalization",
        "LpNormalization",
        "SimplifiedLayerNormalization",
        "SkipLayerNormalization",
        "RMSNormalization",
        "LRN",
    ),
    "pooling": (
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "LpPool",
        "MaxRoiPool",
        "RoiAlign",
        "MaxUnpool",
    ),
    "shape": (
        "Reshape",
        "Transpose",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "GatherElements",
        "GatherND",
        "Shape",
        "Expand",
        "Tile",
        "Pad",
        "Resize",
        "Size",
        "DepthToSpace",
        "SpaceToDepth",
        "ScatterND",
        "ScatterElements",
        "Identity",
        "Cast",
        "CastLike",
    ),
    "quantization": (
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "QLinearAdd",
        "QLinearMul",
        "QLinearSigmoid",
        "QLinearConcat",
    ),
    "control": ("If", "Loop", "Scan"),
    "constant": (
        "Constant",
        "ConstantOfShape",
        "Range",
        "EyeLike",
        "RandomNormal",
        "RandomUniform",
    ),
}

COLOURS: dict[str, str] = {
    "layer": "#3f7fbf",
    "activation": "#c0504d",
    "normalization": "#4f9d69",
    "pooling": "#2e8b8b",
    "shape": "#8c8c8c",
    "quantization": "#8064a2",
    "control": "#d9822b",
    "constant": "#b5b5b5",
    "math": "#6b8e9e",
    "input": "#2f3b45",
    "output": "#2f3b45",
}

_BY_OP = {op: cat for cat, ops in CATEGORIES.items() for op in ops}

# Operators that only a quantized model contains (the quantize job refuses such a model; the
# benchmark compares models that have them with their float original).
QUANTIZED_OPS = frozenset(
    {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "QLinearConv",
        "QLinearMatMul",
        "ConvInteger",
        "MatMulInteger",
        "MatMulNBits",
        "QGemm",
        "QLinearAdd",
        "QLinearMul",
        "DynamicQuantizeMatMul",
        "QAttention",
        "DynamicQuantizeLSTM",
    }
)


def category_of(op_type: str) -> str:
    """The category of an op type; ``"input"``/``"output"`` for graph I/O, ``"math"`` otherwise."""
    if op_type == "Input":
        return "input"
    if op_type == "Output":
        return "output"
    return _BY_OP.get(op_type, "math")


def colour_of(op_type: str) -> str:
    """The fill colour (hex) for nodes of ``op_type``."""
    return COLOURS[category_of(op_type)]
