"""Adaptive rounding of MatMul/Gemm weights in a QDQ model (GPTQ, Frantar et al., 2023).

Round-to-nearest makes every weight's error as small as it can be on its own; what matters is
the layer's *output* on real inputs. With ``H = XᵀX`` from the layer's inputs on the calibration
data, GPTQ rounds the weight's input rows one at a time and spreads each row's rounding error
over the rows not yet rounded, through the inverse Hessian — the output error ``‖X(W − Ŵ)‖``
drops, the scales and zero points onnxruntime chose stay as they are, and the model stays an
ordinary QDQ model (only int8 values change). Numpy only; deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

DAMPING = 0.01  # of the Hessian's mean diagonal, added to it (a dead input channel stays solvable)
MAX_INPUT_WIDTH = 8192  # wider inputs (an LM head over a vocabulary) are left to round-to-nearest


@dataclass(frozen=True)
class QuantizedWeight:
    """A MatMul/Gemm weight as the QDQ model stores it: int values, scale, zero point, axis."""

    node: str
    input_tensor: str  # the float model's tensor the layer reads (its X)
    values: str  # the integer initializer
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None  # per-channel axis of the stored weight (None: per-tensor)
    transposed: bool  # Gemm transB: stored [N, K]


@dataclass
class Rounding:
    """What adaptive rounding changed."""

    layers: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # and why, in words
    error_before: float = 0.0  # summed ‖X(W − Ŵ)‖² over the layers, round-to-nearest
    error_after: float = 0.0

    def note(self) -> str:
        """What a person reads in the job's notes."""
        if not self.layers:
            return (
                "Adaptive rounding (GPTQ) changed nothing: no MatMul/Gemm with an 8-bit "
                "stored weight"
                + (f" ({'; '.join(self.skipped[:2])})" if self.skipped else "")
                + "."
            )
        drop = (1 - self.error_after / self.error_before) if self.error_before else 0.0
        return (
            f"Adaptive rounding (GPTQ) of {len(self.layers)} MatMul/Gemm weight(s) on the "
            f"calibration inputs: their output error {drop:.0%} lower than "
            "round-to-nearest (same scales)."
        )


def quantized_weights(model: onnx.ModelProto) -> list[QuantizedWeight]:
    """The MatMul/Gemm layers whose weight is a DequantizeLinear of a stored 8-bit tensor."""
    stored = {t.name: t for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    found = []
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2:
            continue
        dq = producers.get(node.input[1])
        if dq is None or dq.op_type != "DequantizeLinear" or dq.input[0] not in stored:
            continue
        values = stored[dq.input[0]]
        if (
            values.data_type not in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
            or len(values.dims) != 2
        ):
            continue
        act = producers.get(node.input[0])
        source = (
            act.input[0] if act is not None and act.op_type == "DequantizeLinear" else node.input[0]
        )
        q = producers.get(source)
        x = q.input[0] if q is not None and q.op_type == "QuantizeLinear" else source
        attrs = {a.name: a.i for a in node.attribute}
        axis = next((a.i for a in dq.attribute if a.name == "axis"), None)
        scale = numpy_helper.to_array(stored[dq.input[1]])
        zero = (
            numpy_helper.to_array(stored[dq.input[2]])
            if len(dq.input) > 2 and dq.input[2] in stored
            else np.zeros_like(scale, dtype=np.int8)
        )
        found.append(
            QuantizedWeight(
                node.name,
                x,
                values.name,
                scale,
                zero,
                axis if scale.size > 1 else None,
                node.op_type == "Gemm" and bool(attrs.get("transB", 0)),
            )
        )
    return found


def input_hessians(
    float_model: onnx.ModelProto,
    tensors: list[str],
    samples: Iterable[dict[str, np.ndarray]],
    folder: Path,
) -> dict[str, np.ndarray]:
    """``XᵀX`` of each tensor's rows (last axis the features) over every sample."""
    from edgestudio.core.quant.smooth_quant import probe_session

    session = probe_session(float_model, tensors, folder)
    hessians: dict[str, np.ndarray] = {}
    for sample in samples:
        for name, value in zip(tensors, session.run(tensors, sample), strict=True):
            x = np.asarray(value, np.float64)
            x = x.reshape(-1, x.shape[-1])
            hessians[name] = hessians.get(name, 0) + x.T @ x
    return hessians


def gptq_round(
    weight: np.ndarray,
    hessian: np.ndarray,
    scale: np.ndarray,
    zero: np.ndarray,
    qmin: int,
    qmax: int,
) -> np.ndarray:
    """GPTQ's integer values for ``weight`` [K, N] (rows meet the inputs), with ``scale`` and
    ``zero`` per output column (or one of each), minimising ``‖X(W − Ŵ)‖`` for ``XᵀX =
    hessian``."""
    w = weight.astype(np.float64).copy()
    k = w.shape[0]
    s = np.broadcast_to(np.asarray(scale, np.float64).reshape(-1), (w.shape[1],))
    z = np.broadcast_to(np.asarray(zero, np.float64).reshape(-1), (w.shape[1],))
    h = hessian.astype(np.float64).copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    w[dead, :] = 0.0
    h += DAMPING * np.mean(np.diag(h)) * np.eye(k)
    # the upper Cholesky factor of H⁻¹ (GPTQ's trick: row k's updates read its row)
    inverse = np.linalg.cholesky(np.linalg.inv(h)).T
    q = np.empty_like(w)
    for row in range(k):
        values = np.clip(np.round(w[row] / s + z), qmin, qmax)
        q[row] = values
        error = (w[row] - (values - z) * s) / inverse[row, row]
        w[row + 1 :] -= np.outer(inverse[row, row + 1 :], error)
    return q


def adaptive_rounding(
    quant_model: onnx.ModelProto,
    float_model: onnx.ModelProto,
    samples: Iterable[dict[str, np.ndarray]],
    folder: Path,
) -> Rounding:
    """Round every 8-bit MatMul/Gemm weight of ``quant_model`` adaptively, in place."""
    done = Rounding()
    layers = quantized_weights(quant_model)
    float_weights = {n.name: n for n in float_model.graph.node}
    stored = {t.name: t for t in float_model.graph.initializer}
    usable = []
    for layer in layers:
        original = float_weights.get(layer.node)
        weight = stored.get(original.input[1]) if original is not None else None
        if weight is None:
            done.skipped.append(f"{layer.node}: no float weight to start from")
        elif layer.axis not in (None, 0 if layer.transposed else 1):
            done.skipped.append(f"{layer.node}: its scales are not per output column")
        elif int(weight.dims[1 if layer.transposed else 0]) > MAX_INPUT_WIDTH:
            done.skipped.append(f"{layer.node}: {weight.dims} is too wide")
        else:
            usable.append((layer, numpy_helper.to_array(weight)))
    if not usable:
        return done
    hessians = input_hessians(
        float_model, sorted({layer.input_tensor for layer, _ in usable}), samples, folder
    )
    quant_stored = {t.name: t for t in quant_model.graph.initializer}
    for layer, weight in usable:
        w = weight.T if layer.transposed else weight  # [K, N]
        h = hessians.get(layer.input_tensor)
        values = quant_stored[layer.values]
        dtype = numpy_helper.to_array(values).dtype
        info = np.iinfo(dtype)
        if h is None or h.shape[0] != w.shape[0]:
            done.skipped.append(f"{layer.node}: its input was not seen")
            continue
        q = gptq_round(w, h, layer.scale, layer.zero_point, int(info.min), int(info.max))
        s = np.asarray(layer.scale, np.float64).reshape(1, -1)
        z = np.asarray(layer.zero_point, np.float64).reshape(1, -1)
        nearest = np.clip(np.round(w / s + z), info.min, info.max)
        done.error_before += float(_output_error(h, w, (nearest - z) * s))
        done.error_after += float(_output_error(h, w, (q - z) * s))
        stored_q = q.T if layer.transposed else q
        values.CopyFrom(numpy_helper.from_array(stored_q.astype(dtype), layer.values))
        done.layers.append(layer.node)
    return done


def _output_error(hessian: np.ndarray, w: np.ndarray, approx: np.ndarray) -> float:
    """``‖X(W − Ŵ)‖²`` from ``XᵀX``: ``trace(Dᵀ H D)``."""
    d = w.astype(np.float64) - approx
    return float(np.einsum("kn,kl,ln->", d, hessian, d))
