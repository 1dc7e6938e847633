"""Float vs de-quantized weights of a quantized model, a weight at a time (external weights read
from each model's folder as they are compared), with the S/2 bounds a per-tensor and a
per-channel scale would give: Q/DQ weights and 4-bit MatMulNBits blocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from edgestudio.core.quant.activation_match import DQ_SUFFIX, ErrorStats


def _array(tensor: TensorProto, folder: Path | None) -> np.ndarray:
    """One tensor's values, its external data read from ``folder`` (the model's)."""
    return numpy_helper.to_array(tensor, base_dir=str(folder) if folder else "")


def weight_errors(
    float_model: onnx.ModelProto,
    quant_model: onnx.ModelProto,
    float_dir: Path | None = None,
    quant_dir: Path | None = None,
) -> list[dict[str, object]]:
    """Float vs de-quantized weights, with the per-tensor and per-channel S/2 bounds (a weight
    at a time: external weights are read from ``float_dir`` / ``quant_dir`` as compared)."""
    float_inits = {t.name: t for t in float_model.graph.initializer}
    inits = {t.name: t for t in quant_model.graph.initializer}
    results = []
    for node in quant_model.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits:
            continue
        q_name = node.input[0]
        base = node.output[0][: -len(DQ_SUFFIX)] if node.output[0].endswith(DQ_SUFFIX) else q_name
        base = base[: -len("_quantized")] if base.endswith("_quantized") else base
        if base not in float_inits or len(node.input) < 2 or node.input[1] not in inits:
            continue
        q = _array(inits[q_name], quant_dir)
        if not np.issubdtype(q.dtype, np.integer):
            continue
        scale = _array(inits[node.input[1]], quant_dir).astype(np.float64)
        zp = (
            _array(inits[node.input[2]], quant_dir).astype(np.float64)
            if len(node.input) > 2 and node.input[2] in inits
            else np.zeros_like(scale)
        )
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        w = _array(float_inits[base], float_dir).astype(np.float64)
        if scale.size > 1:
            shape = [1] * q.ndim
            shape[axis] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        deq = (q.astype(np.float64) - zp) * scale
        if deq.shape != w.shape:
            continue
        stats = ErrorStats()
        stats.add(w, deq)
        bits = np.iinfo(q.dtype).bits
        levels = 2**bits - 1
        per_tensor = (w.max() - w.min()) / levels / 2 if w.size else 0.0
        channels = w.reshape(w.shape[0], -1) if w.ndim > 1 else w.reshape(1, -1)
        per_channel = (channels.max(axis=1) - channels.min(axis=1)) / levels / 2
        results.append(
            {
                "tensor": base,
                "node": next((n.name for n in float_model.graph.node if base in n.input), ""),
                **stats.figures(),
                "scale_bound": float(np.max(scale) / 2),
                "per_tensor_bound": float(per_tensor),
                "per_channel_bound_mean": float(per_channel.mean()),
                "per_channel": bool(np.asarray(scale).size > 1),
            }
        )
    results += _nbits_weight_errors(quant_model, float_inits, inits, float_dir, quant_dir)
    return results


def dequantize_nbits(
    node: onnx.NodeProto, inits: dict[str, TensorProto], folder: Path | None = None
) -> np.ndarray | None:
    """The [K, N] float weight a 4-bit MatMulNBits holds (None for other bit widths or a weight
    that is not a constant): each column's blocks of ``block_size`` values, two per byte, low
    nibble first, ``(q - zero point) · scale``; the zero point is 8 without a zero-point input."""
    attrs = {a.name: a.i for a in node.attribute}
    if attrs.get("bits", 4) != 4 or node.input[1] not in inits or node.input[2] not in inits:
        return None
    rows, cols, block = attrs["K"], attrs["N"], attrs["block_size"]
    packed = _array(inits[node.input[1]], folder).reshape(cols, -1)
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(cols, -1)
    blocks = nibbles.shape[1] // block
    scales = _array(inits[node.input[2]], folder).astype(np.float64).reshape(cols, blocks)
    zero = np.full((cols, blocks), 8.0)
    if len(node.input) > 3 and node.input[3] in inits:
        zp = _array(inits[node.input[3]], folder).reshape(cols, -1)
        zero = np.stack([zp & 0x0F, zp >> 4], axis=-1).reshape(cols, -1)[:, :blocks]
    # float32, as the kernel computes it (and half the temporaries of float64 on big weights)
    values = (
        nibbles.reshape(cols, blocks, block).astype(np.float32)
        - np.asarray(zero, np.float32)[:, :, None]
    ) * scales.astype(np.float32)[:, :, None]
    return values.reshape(cols, blocks * block)[:, :rows].T


def _nbits_weight_errors(
    quant_model: onnx.ModelProto,
    float_inits: dict[str, TensorProto],
    inits: dict[str, TensorProto],
    float_dir: Path | None,
    quant_dir: Path | None,
) -> list[dict[str, object]]:
    """Float vs de-quantized 4-bit MatMulNBits weights (blockwise: one scale per block)."""
    results = []
    for node in quant_model.graph.node:
        if node.op_type != "MatMulNBits":
            continue
        base = node.input[1][: -len("_Q4")] if node.input[1].endswith("_Q4") else ""
        deq = dequantize_nbits(node, inits, quant_dir)
        if base not in float_inits or deq is None:
            continue
        w = _array(float_inits[base], float_dir).astype(np.float32, copy=False)
        if deq.shape != w.shape:
            continue
        stats = ErrorStats()
        stats.add(w, deq)
        scales = _array(inits[node.input[2]], quant_dir).astype(np.float64)
        channels = w.T
        results.append(
            {
                "tensor": base,
                "node": node.name[: -len("_Q4")] if node.name.endswith("_Q4") else node.name,
                **stats.figures(),
                "scale_bound": float(np.max(np.abs(scales)) / 2),
                "per_tensor_bound": float(w.max() - w.min()) / 15 / 2 if w.size else 0.0,
                "per_channel_bound_mean": float(
                    (
                        (channels.max(axis=1).astype(np.float64) - channels.min(axis=1)) / 15 / 2
                    ).mean()
                ),
                "per_channel": True,  # blockwise: finer than per channel
            }
        )
    return results
