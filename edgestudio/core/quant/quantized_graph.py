"""Reading what quantization did to a graph (pure onnx).

Two questions the app must answer truthfully: which nodes of the float model a quantized model
really quantized (only those are worth excluding: excluding any other gives the same model
again), and whether a model is already quantized in any of the forms exporters and quantizers
write (quantizing it again would quantize rounding error).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from edgestudio.core.model.op_categories import QUANTIZED_OPS
from edgestudio.core.model.opsets import iter_nodes

# onnxruntime's quantizers name the node that replaces NAME "NAME_quant" (dynamic, QOperator).
REPLACED_SUFFIX = "_quant"
WEIGHT_ONLY_SUFFIX = "_Q4"  # MatMulNBits / GatherBlockQuantized replacing a MatMul / Gather
_WEIGHT_ONLY_OPS = frozenset(
    {
        "MatMulNBits",
        "GatherBlockQuantized",
        "DynamicQuantizeLSTM",
        "DynamicQuantizeMatMul",
        "MatMulInteger",
        "ConvInteger",
        "MatMulIntegerToFloat",
        "QGemm",
        "QAttention",
        "QOrderedMatMul",
    }
)
_INTEGER_WEIGHT_TYPES: dict[int, str] = {
    TensorProto.INT8: "int8",
    TensorProto.UINT8: "uint8",
    TensorProto.INT4: "int4",
    TensorProto.UINT4: "uint4",
    TensorProto.INT16: "int16",
    TensorProto.UINT16: "uint16",
}
_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
# What a de-quantized table feeds: arithmetic that applies its scale, or the layer itself.
_WEIGHT_USERS = frozenset(
    {
        "Mul",
        "Div",
        "Sub",
        "Add",
        "MatMul",
        "Gemm",
        "Conv",
        "Gather",
        "ConvTranspose",
        "LSTM",
        "GRU",
        "RNN",
    }
)
MIN_TABLE_ELEMENTS = 64  # smaller integer constants are shapes, indices, lookup flags


def quantized_nodes(float_model: onnx.ModelProto, quant_model: onnx.ModelProto) -> set[str]:
    """Names of the float model's nodes that ``quant_model`` quantized.

    QDQ keeps node names: a node is quantized when one of its outputs feeds a QuantizeLinear or
    one of its weights comes from a DequantizeLinear. Dynamic and QOperator replace the node by
    ``NAME_quant`` (ConvInteger, MatMulInteger, QLinearConv, …), 4-bit weight-only by
    ``NAME_Q4`` (MatMulNBits, GatherBlockQuantized). A node the quantizer folded
    into its quantized producer (QDQ drops a Conv's Relu; the Conv then writes the Relu's
    tensor) counts too: excluding it keeps it, which changes the model.
    """
    quant_names = {n.name for n in quant_model.graph.node}
    inits = {t.name for t in quant_model.graph.initializer}
    produced_by = {o: n for n in quant_model.graph.node for o in n.output}
    quantize_inputs = {
        n.input[0] for n in quant_model.graph.node if n.op_type == "QuantizeLinear" and n.input
    }
    found: set[str] = set()
    for node in float_model.graph.node:
        if not node.name:
            continue
        if node.name not in quant_names and (
            f"{node.name}{REPLACED_SUFFIX}" in quant_names
            or f"{node.name}{WEIGHT_ONLY_SUFFIX}" in quant_names
        ):
            found.add(node.name)
    for node in quant_model.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") or not node.name:
            continue
        weight_dq = any(
            (p := produced_by.get(t)) is not None
            and p.op_type == "DequantizeLinear"
            and p.input
            and p.input[0] in inits
            for t in node.input
        )
        if weight_dq or any(o in quantize_inputs for o in node.output):
            found.add(node.name)
    producers = {o: n.name for n in quant_model.graph.node for o in n.output}
    for node in float_model.graph.node:
        if (
            node.name
            and node.name not in quant_names
            and any(producers.get(o) in found for o in node.output)
        ):
            found.add(node.name)
    float_names = {n.name for n in float_model.graph.node}
    return found & float_names


# Operators that pass their input's quantization through (onnxruntime's QDQ gives their output
# the input's scale): their error is their producer's, and excluding them changes nothing.
_PASS_THROUGH = frozenset(
    {
        "MaxPool",
        "Flatten",
        "Reshape",
        "Transpose",
        "Squeeze",
        "Unsqueeze",
        "Identity",
        "Gather",
        "Slice",
        "Split",
        "Expand",
        "Tile",
        "DepthToSpace",
        "SpaceToDepth",
    }
)
# onnxruntime fuses these into their producer in a QDQ graph (no Q/DQ pair between them).
FUSED_ACTIVATIONS = frozenset({"Relu", "Clip"})


def fused_activations(graph: onnx.GraphProto) -> dict[str, str]:
    """Each Relu/Clip node that onnxruntime fuses into its producer (the producer's output is
    read by it alone) -> that producer's name: one quantization covers the pair, so acting on
    one side alone changes nothing."""
    producer = {o: n for n in graph.node for o in n.output}
    readers: dict[str, int] = {}
    for n in graph.node:
        for t in n.input:
            readers[t] = readers.get(t, 0) + 1
    pairs = {}
    for node in graph.node:
        source = producer.get(node.input[0]) if node.input else None
        if (
            node.op_type in FUSED_ACTIVATIONS
            and node.name
            and source is not None
            and source.name
            and readers.get(node.input[0], 0) == 1
        ):
            pairs[node.name] = source.name
    return pairs


def suggestion_targets(float_model: onnx.ModelProto, quantized: set[str]) -> dict[str, str]:
    """For each quantized node, the node a suggestion should name (exclude it, keep it in
    16-bit): itself; its producer for a Relu/Clip fused into it (acting on the Relu alone
    changes nothing); none ("") for an operator that passes its input's quantization through.
    Measured: the worst tensors by SQNR were 9 or 10 of 10 fused Relu/Clip outputs on two real
    models (DESIGN.md part 5)."""
    fused = {**folded_normalizations(float_model.graph), **fused_activations(float_model.graph)}
    # a Relu after a folded BatchNormalization stands for the Conv both fold into
    targets = {name: fused.get(producer, producer) for name, producer in fused.items()}
    return {
        node.name: "" if node.op_type in _PASS_THROUGH else targets.get(node.name, node.name)
        for node in float_model.graph.node
        if node.name in quantized
    }


def folded_normalizations(graph: onnx.GraphProto) -> dict[str, str]:
    """Each BatchNormalization that onnxruntime's pre-processing folds into the Conv (or Gemm,
    MatMul) before it -> that producer's name: it no longer exists in the model quantized."""
    producer = {o: n for n in graph.node for o in n.output}
    readers: dict[str, int] = {}
    for n in graph.node:
        for t in n.input:
            readers[t] = readers.get(t, 0) + 1
    return {
        node.name: source.name
        for node in graph.node
        if node.op_type == "BatchNormalization"
        and node.name
        and node.input
        and (source := producer.get(node.input[0])) is not None
        and source.name
        and source.op_type in ("Conv", "ConvTranspose", "Gemm", "MatMul")
        and readers.get(node.input[0], 0) == 1
    }


def quantization_mode(model: onnx.ModelProto) -> str:
    """Which of our modes wrote ``model``, read from its operators (a model quantized
    elsewhere): int4, qoperator, qdq, dynamic or fp16; "" for a float32 model."""
    ops = {n.op_type for n in iter_nodes(model.graph)}
    if ops & {"MatMulNBits", "GatherBlockQuantized"}:
        return "int4"
    if any(op.startswith("QLinear") for op in ops):
        return "qoperator"
    if "QuantizeLinear" in ops:
        return "qdq"
    if ops & {
        "DynamicQuantizeLinear",
        "MatMulInteger",
        "ConvInteger",
        "DynamicQuantizeMatMul",
        "DynamicQuantizeLSTM",
    }:
        return "dynamic"
    if any(t.data_type == TensorProto.FLOAT16 for t in model.graph.initializer):
        return "fp16"
    return ""


def existing_quantization(model: onnx.ModelProto) -> list[str]:
    """How ``model`` is already quantized, one finding per form (empty for a float model).

    Quantized operators (QDQ pairs, QOperator, ConvInteger/MatMulInteger, Dynamic*), weight-only
    operators (MatMulNBits, GatherBlockQuantized) and weight-only integer tables de-quantized in
    the graph (an int8 initializer → Cast → Mul, as some exporters write embeddings).
    """
    findings: list[str] = []
    ops = sorted(
        {
            n.op_type
            for n in iter_nodes(model.graph)
            if n.op_type in QUANTIZED_OPS
            or n.op_type in _WEIGHT_ONLY_OPS
            or n.op_type.startswith("QLinear")
        }
    )
    if ops:
        findings.append(f"quantized operators: {', '.join(ops)}")
    findings += _weight_only_tables(model)
    return findings


def _integer_constants(model: onnx.ModelProto) -> dict[str, TensorProto]:
    found = {t.name: t for t in model.graph.initializer if t.data_type in _INTEGER_WEIGHT_TYPES}
    for node in iter_nodes(model.graph):
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if (
                    attr.name == "value"
                    and attr.HasField("t")
                    and attr.t.data_type in _INTEGER_WEIGHT_TYPES
                ):
                    found[node.output[0]] = attr.t
    return found


def _weight_only_tables(model: onnx.ModelProto) -> list[str]:
    """Integer tables turned into floats by a Cast and then scaled or used as weights."""
    tables = {
        name: t
        for name, t in _integer_constants(model).items()
        if int(np.prod(t.dims)) >= MIN_TABLE_ELEMENTS
    }
    if not tables:
        return []
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in iter_nodes(model.graph):
        for t in node.input:
            consumers.setdefault(t, []).append(node)
    found: list[tuple[str, str]] = []
    for name, tensor in tables.items():
        for cast in consumers.get(name, []):
            to = next((a.i for a in cast.attribute if a.name == "to"), None)
            if cast.op_type != "Cast" or to not in _FLOAT_TYPES:
                continue
            users = [
                n.op_type for n in consumers.get(cast.output[0], []) if n.op_type in _WEIGHT_USERS
            ]
            if users:
                dims = "×".join(map(str, tensor.dims))
                found.append(
                    (
                        _INTEGER_WEIGHT_TYPES[tensor.data_type],
                        f"'{name}' [{dims}] → Cast → {users[0]}",
                    )
                )
                break
    return _summarised(found)


def _summarised(tables: list[tuple[str, str]], listed: int = 2) -> list[str]:
    """One finding per table when there are few, else one per type that counts them and names
    ``listed`` (a real model had 38: the refusal was a 3 KB line)."""
    if len(tables) <= listed:
        return [f"weight-only {kind} table {what}" for kind, what in tables]
    by_kind: dict[str, list[str]] = {}
    for kind, what in tables:
        by_kind.setdefault(kind, []).append(what)
    return [
        f"{len(whats)} weight-only {kind} table{'s' if len(whats) > 1 else ''} "
        f"de-quantized in the graph, e.g. {'; '.join(whats[:listed])}"
        for kind, whats in by_kind.items()
    ]
