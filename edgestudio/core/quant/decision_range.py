"""Decisions a quantized model can no longer make.

A probability output (a Sigmoid's: speech or not, an object or not) is decided at 0.5. Static
quantization gives its tensor the range the calibration samples reached; when none of them was
a positive case (audio windows without speech), that range stops below 0.5 and the quantized
model can never say "yes", whatever it is fed: its F1 is 0 on any data. This is read from the
written model's own quantization parameters, so it holds by construction and costs no run.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper

DECISION = 0.5  # where a probability output is decided (the task metrics' threshold)
_QMAX: dict[int, int] = {
    onnx.TensorProto.UINT8: 255,
    onnx.TensorProto.INT8: 127,
    onnx.TensorProto.UINT16: 65535,
    onnx.TensorProto.INT16: 32767,
}


def _top(scale: onnx.TensorProto, zero_point: onnx.TensorProto | None) -> float:
    """The largest value a tensor quantized with ``scale`` and ``zero_point`` can hold."""
    kind = zero_point.data_type if zero_point is not None else onnx.TensorProto.UINT8
    zp = numpy_helper.to_array(zero_point).astype(np.float64) if zero_point is not None else 0.0
    s = numpy_helper.to_array(scale).astype(np.float64)
    return float(np.max((_QMAX.get(kind, 255) - zp) * s))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def unreachable_decisions(model: onnx.ModelProto) -> dict[str, float]:
    """Each graph output computed by a Sigmoid whose quantized range (its own, or its input's
    through the Sigmoid) stops below 0.5, with the top of that range: the quantized model never
    decides positive there. Outputs without constant quantization parameters are not judged."""
    inits = {t.name: t for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}

    def params(node: onnx.NodeProto, scale: int, zero: int) -> float | None:
        if len(node.input) <= scale or node.input[scale] not in inits:
            return None
        zp = inits.get(node.input[zero]) if len(node.input) > zero else None
        return _top(inits[node.input[scale]], zp)

    found: dict[str, float] = {}
    for output in model.graph.output:
        node, tops = producer.get(output.name), []
        if node is not None and node.op_type == "DequantizeLinear":
            tops.append(params(node, 1, 2))
            before = producer.get(node.input[0])
            if before is not None and before.op_type == "QuantizeLinear":
                before = producer.get(before.input[0])
            node = before
        if node is None:
            continue
        if node.op_type == "Sigmoid":  # QDQ: the float Sigmoid between its inputs' DQ and a Q
            feeding = producer.get(node.input[0])
            if feeding is not None and feeding.op_type == "DequantizeLinear":
                logit = params(feeding, 1, 2)
                tops.append(None if logit is None else _sigmoid(logit))
        elif node.op_type == "QLinearSigmoid":  # QOperator: X, X_scale, X_zp, Y_scale, Y_zp
            logit = params(node, 1, 2)
            tops += [None if logit is None else _sigmoid(logit), params(node, 3, 4)]
        else:
            continue
        known = [t for t in tops if t is not None]
        if known and min(known) < DECISION:
            found[output.name] = min(known)
    return found


def decision_warning(output: str, top: float) -> str:
    """What :func:`unreachable_decisions` found of ``output``, for the job's warnings."""
    return (
        f"Output '{output}' can no longer reach the {DECISION} it is decided at: calibration "
        f"left it a range up to {top:.3g}, so the quantized model never decides 'yes' on any "
        "input. None of the calibration samples was a positive case (audio windows without "
        "speech, images without the object): calibrate on samples that include it."
    )
