"""Mixed precision and quantizer placement: which tensors a QDQ quantization puts in 16 bits,
where it puts quantizers at all, and what precision each tensor of a result ended up in.

onnxruntime does the work: per-tensor ``TensorQuantOverrides`` choose a 16-bit type, and its own
``MixedPrecisionTensorQuantOverridesFixer`` inserts the 8 ↔ 16-bit conversions at the boundaries
(a tensor read by an 8-bit node and a 16-bit one gets one of each). This module only chooses the
tensors from node names, and reads the result back.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import onnx

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.quant.quant_results import Precision, Quantization
from edgestudio.core.quant.quantized_graph import fused_activations

#: The operators whose integer kernels do the work (what a target's NPU or VNNI kernels run):
#: "compute" placement quantizes only these (measured: DESIGN.md part 5).
COMPUTE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm", "Attention", "LSTM", "GRU")

# Where each quantized operator reads its weight (and bias) and zero points.
_WEIGHT_INPUTS = {
    "DequantizeLinear": (0,),
    "QLinearConv": (3, 8),
    "QLinearMatMul": (0, 3),
    "ConvInteger": (1,),
    "MatMulInteger": (1,),
    "MatMulNBits": (1,),
    "GatherBlockQuantized": (0,),
}
_ZERO_POINT_INPUTS = {
    "QuantizeLinear": (2,),
    "DequantizeLinear": (2,),
    "QLinearConv": (2, 5, 7),
    "QLinearMatMul": (2, 5, 7),
    "ConvInteger": (2, 3),
    "MatMulInteger": (2, 3),
    "MatMulNBits": (3,),
}


class MixedPrecisionError(EdgeStudioError):
    """The 16-bit nodes asked for cannot be given to onnxruntime as overrides."""


def wide_type(activation_type: str) -> str:
    """The 16-bit type of the same signedness as ``activation_type``."""
    return "int16" if activation_type.startswith("int") else "uint16"


def nodes_to_widen(
    graph: onnx.GraphProto, names: tuple[str, ...]
) -> tuple[list[onnx.NodeProto], list[str]]:
    """The nodes that keep ``names`` in 16 bits, and the names ``graph`` does not have.

    A Relu/Clip that onnxruntime fuses into a named node goes with it, and a fused Relu/Clip
    named alone brings its producer: promoting one side of a fused pair changes nothing
    (DESIGN.md part 5)."""
    by_name = {n.name: n for n in graph.node if n.name}
    fused = fused_activations(graph)  # activation -> producer
    partner = {**fused, **{producer: act for act, producer in fused.items()}}
    missing = [name for name in names if name not in by_name]
    chosen = dict.fromkeys(
        n for name in names if name in by_name for n in (name, partner.get(name)) if n
    )
    return [by_name[n] for n in chosen], missing


def int16_overrides(
    model: onnx.ModelProto, nodes: tuple[str, ...], activation_type: str, symmetric: bool
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """onnxruntime's ``TensorQuantOverrides`` that run ``nodes`` with 16-bit inputs and outputs
    and every other node with ``activation_type``, conversions at the boundaries; and the names
    ``model`` lacks (fused away by pre-processing, say)."""
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization.execution_providers.qnn.mixed_precision_overrides_utils import (
        MixedPrecisionTensorQuantOverridesFixer,
    )
    from onnxruntime.quantization.tensor_quant_overrides import (
        QuantTypeInfo,
        TensorQuantOverridesHelper,
    )

    types = {
        "uint8": QuantType.QUInt8,
        "int8": QuantType.QInt8,
        "uint16": QuantType.QUInt16,
        "int16": QuantType.QInt16,
    }
    widened, missing = nodes_to_widen(model.graph, nodes)
    if not widened:
        return {}, missing
    wide = QuantTypeInfo(types[wide_type(activation_type)], symmetric)

    class NodeFixer(MixedPrecisionTensorQuantOverridesFixer):  # type: ignore[misc]  # untyped ORT
        # onnxruntime's fixer widens every node that touches an overridden tensor (the
        # producer and all readers); asked for nodes, only those nodes change, and the
        # tensors around them get conversions (its own per-node rule, applied to them alone).
        def get_desired_tensor_types(
            self, default_activation_qtype: Any, default_activation_symmetric: bool
        ) -> dict[str, Any]:
            requests: dict[str, Any] = {}
            for node in widened:
                self._add_type_requests_for_node(requests, wide, node)
            return requests

    helper = TensorQuantOverridesHelper({})
    try:
        # create_from_model builds the base class; its lookups are what the subclass needs
        base = NodeFixer.create_from_model(helper, model, types[activation_type])
        fixer = NodeFixer(
            base.overrides, base.producers, base.consumers, base.value_infos, base.initializers
        )
        fixer.apply(types[activation_type], symmetric)
    except (ValueError, KeyError) as exc:
        raise MixedPrecisionError(
            f"onnxruntime cannot give {', '.join(nodes)} 16-bit activations: {exc}"
        ) from exc
    return helper.get_dict(), missing


_NOT_COMPUTE = frozenset(
    {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "Constant",
        "Shape",
        "Identity",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "Cast",
        "Gather",
        "Concat",
        "Slice",
        "Split",
    }
)


def precision_of(model: onnx.ModelProto) -> Precision:
    """Count the precisions of ``model``'s quantized activations and weights, and the nodes that
    compute in float (none of their inputs dequantized or quantized; data movement left out)."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    dtype = {t.name: t.data_type for t in graph.initializer}
    name_of = onnx.helper.tensor_dtype_to_np_dtype
    activations: dict[str, str] = {}
    weights: dict[str, str] = {}
    zero_points = {
        n.input[i]
        for n in graph.node
        for i in _ZERO_POINT_INPUTS.get(n.op_type, ())
        if i < len(n.input)
    }
    dequantized = {o for n in graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    for node in graph.node:
        if node.op_type == "QuantizeLinear" and node.input[0] in dequantized:
            continue  # an 8 <-> 16-bit conversion: counted apart
        if node.op_type == "QuantizeLinear" and node.input[0] not in inits:
            zp = node.input[2] if len(node.input) > 2 else ""
            kind = str(name_of(dtype[zp])) if zp in dtype else "uint8"
            activations.setdefault(node.input[0], kind)
        elif node.op_type == "DynamicQuantizeLinear":
            activations.setdefault(node.input[0], "uint8")
        for i in _WEIGHT_INPUTS.get(node.op_type, ()):
            if i < len(node.input) and node.input[i] in inits and node.input[i] not in zero_points:
                weights.setdefault(node.input[i], str(name_of(dtype[node.input[i]])))
    # A node computes in integer when every activation it reads is quantized (comes through a
    # DequantizeLinear, or from a quantizing operator); otherwise it computes in float.
    quantizing = ("DequantizeLinear", "DynamicQuantizeLinear", "QuantizeLinear")
    quantized_values = {
        o
        for n in graph.node
        if n.op_type in quantizing or n.op_type.startswith("QLinear")
        for o in n.output
    }
    float_ops = Counter(
        n.op_type
        for n in graph.node
        if n.op_type not in _NOT_COMPUTE
        and not n.op_type.startswith(("QLinear", "QGemm"))
        and n.op_type not in _WEIGHT_INPUTS
        and any(t and t not in inits and t not in quantized_values for t in n.input)
    )
    conversions = sum(
        1 for n in graph.node if n.op_type == "QuantizeLinear" and n.input[0] in dequantized
    )
    return Precision(
        dict(Counter(activations.values())),
        dict(Counter(weights.values())),
        sum(float_ops.values()),
        dict(float_ops),
        conversions,
    )


def model_bytes(path: Path, model: onnx.ModelProto) -> int:
    """The bytes ``path`` takes on disk with its external data files."""
    from edgestudio.core.model.external_data import check_external_data

    return path.stat().st_size + sum(f.size_bytes for f in check_external_data(model, path.parent))


def quantized_elsewhere(float_model: Path, quant_model: Path) -> Quantization:
    """What can be said of a quantized model EdgeStudio did not write (an analysis from the
    command line of a file quantized elsewhere): its size beside the float model's, its
    precision and its quantized operators."""
    from edgestudio.core.model.opsets import quantized_ops_in

    quant = onnx.load(str(quant_model), load_external_data=False)
    original = onnx.load(str(float_model), load_external_data=False)
    return Quantization(
        float_bytes=model_bytes(float_model, original),
        quant_bytes=model_bytes(quant_model, quant),
        quantized_ops=quantized_ops_in(quant),
        precision=precision_of(quant),
        notes=[
            "Quantized outside EdgeStudio (analysed from the command line): "
            "sizes and precision read from the files."
        ],
    )
