"""Which tensor of a quantized model stands for each float activation, and the running sums
that compare them (the SQNR ``qdq_loss_debug`` computes, over all samples at once)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DQ_SUFFIX = "_DequantizeLinear_Output"
EDGESTUDIO_DQ = "_edgestudio_dequantized"
EPS = float(np.finfo(float).eps)
FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}


@dataclass
class ErrorStats:
    """Running sums for one compared tensor."""

    ref_sq: float = 0.0
    diff_sq: float = 0.0
    test_sq: float = 0.0
    dot: float = 0.0
    max_abs: float = 0.0
    count: int = 0
    clipped: int = 0
    non_finite: int = 0  # values inf or NaN in the tested tensor where the reference is finite

    def add(self, ref: np.ndarray, test: np.ndarray) -> None:
        """Fold one sample in (shapes must match).

        Per-sample sums use float32 BLAS dot products (10× faster than float64 here; relative
        error ~1e-6, far below the 0.01 dB we promise); sums across samples are float64.
        Only values finite on both sides are summed: where the tested side is inf or NaN and
        the reference is not (a Log or a Div fed a quantized zero) the error is counted in
        :attr:`non_finite` — no ratio can say how large it is — and where the reference itself
        is inf or NaN (a -inf log-probability, a mask) there is nothing to measure against.
        """
        r = np.ascontiguousarray(ref, dtype=np.float32).reshape(-1)
        t = np.ascontiguousarray(test, dtype=np.float32).reshape(-1)
        finite_r, finite_t = np.isfinite(r), np.isfinite(t)
        if not (finite_r.all() and finite_t.all()):
            self.non_finite += int(np.count_nonzero(finite_r & ~finite_t))
            both = finite_r & finite_t
            r, t = r[both], t[both]
        d = r - t
        self.ref_sq += float(r @ r)
        self.diff_sq += float(d @ d)
        self.test_sq += float(t @ t)
        self.dot += float(r @ t)
        if d.size:
            self.max_abs = max(self.max_abs, float(np.abs(d).max()))
        self.count += r.size

    def sqnr_db(self) -> float | None:
        """SQNR in dB as qdq_loss_debug computes it; None when the reference is all zeros or
        the tested side has inf/NaN values (:attr:`non_finite`: no finite ratio describes
        that, and one computed on the other values would hide it)."""
        if self.ref_sq == 0.0 or self.non_finite:
            return None
        signal = max(math.sqrt(self.ref_sq), EPS)
        noise = max(math.sqrt(self.diff_sq), EPS)
        return 20 * math.log10(signal / noise)

    def figures(self) -> dict[str, float | None]:
        """SQNR, MSE, max abs error, cosine similarity and the count of new inf/NaN values."""
        norm = math.sqrt(self.ref_sq) * math.sqrt(self.test_sq)
        return {
            "sqnr_db": self.sqnr_db(),
            "mse": self.diff_sq / self.count if self.count else None,
            "max_abs": self.max_abs,
            "cosine": self.dot / norm if norm > 0 else None,
            "non_finite": self.non_finite,
        }


@dataclass
class Match:
    """A float tensor and the quantized model's tensor that stands for it."""

    tensor: str
    quant_tensor: str
    node: str
    op_type: str
    qrange: tuple[float, float] | None = None  # representable range (QDQ activations)
    stats: ErrorStats = field(default_factory=ErrorStats)
    on_target: ErrorStats = field(default_factory=ErrorStats)  # the same, on the target


def producers(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    """Each tensor's producing node (main graph)."""
    return {out: node for node in model.graph.node for out in node.output}


def elem_types(model: onnx.ModelProto) -> dict[str, int]:
    """Each tensor's element type, inferred where onnx can (declared types otherwise)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # inference is a convenience here; fall back to declared types
        inferred = model
    types = {}
    for v in [*inferred.graph.input, *inferred.graph.output, *inferred.graph.value_info]:
        if v.type.HasField("tensor_type"):
            types[v.name] = v.type.tensor_type.elem_type
    # onnx infers nothing for com.microsoft's QuantizeLinear (16-bit QDQ below opset 21, what
    # onnxruntime's QNN config writes): its output has its zero point's type (uint8 without)
    zero_points = {t.name: t.data_type for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear" and not types.get(node.output[0]):
            zp = node.input[2] if len(node.input) > 2 else ""
            types[node.output[0]] = zero_points.get(zp, TensorProto.UINT8)
    return types


def _qrange(dq: onnx.NodeProto, inits: dict[str, TensorProto]) -> tuple[float, float] | None:
    """The float range a QuantizeLinear->DequantizeLinear pair can represent (per-tensor only)."""
    if len(dq.input) < 2 or dq.input[1] not in inits:
        return None
    scale = numpy_helper.to_array(inits[dq.input[1]]).astype(np.float64)
    if scale.size != 1:
        return None
    zp_tensor = inits.get(dq.input[2]) if len(dq.input) > 2 else None
    zp = numpy_helper.to_array(zp_tensor) if zp_tensor is not None else np.uint8(0)
    info = np.iinfo(zp.dtype) if np.issubdtype(zp.dtype, np.integer) else None
    if info is None:
        return None
    z = float(np.asarray(zp).reshape(-1)[0])
    s = float(scale.reshape(-1)[0])
    return (s * (info.min - z), s * (info.max - z))


def match_activations(float_model: onnx.ModelProto, quant_model: onnx.ModelProto) -> list[Match]:
    """Pair each float activation with its counterpart in the quantized model.

    QDQ models: the output of the DequantizeLinear that follows the tensor (what the next layer
    really sees). QOperator models: ``T_quantized`` de-quantized with ``T_scale`` and
    ``T_zero_point`` (a DequantizeLinear node is added to ``quant_model`` for it). Other formats:
    tensors with the same name in both models.
    """
    made_by = producers(float_model)
    float_types = elem_types(float_model)
    quant_types = elem_types(quant_model)
    graph_inputs = {v.name for v in float_model.graph.input}
    quant_inits = {t.name: t for t in quant_model.graph.initializer}
    matched: dict[str, Match] = {}

    def add(tensor: str, quant_tensor: str, qrange: tuple[float, float] | None) -> None:
        node = made_by.get(tensor)
        if node is None and tensor not in graph_inputs:
            return
        if float_types.get(tensor) not in FLOAT_TYPES:
            return
        matched[tensor] = Match(
            tensor,
            quant_tensor,
            node.name if node else f"input:{tensor}",
            node.op_type if node else "Input",
            qrange,
        )

    for node in quant_model.graph.node:
        if node.op_type == "DequantizeLinear" and node.input[0] not in quant_inits:
            out = node.output[0]
            if out.endswith(DQ_SUFFIX):
                add(out[: -len(DQ_SUFFIX)], out, _qrange(node, quant_inits))
    quant_outputs = {o for n in quant_model.graph.node for o in n.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in float_model.graph.node:
        for t in node.input:
            consumers.setdefault(t, []).append(node)
    for tensor in made_by:
        q_name, scale, zp = f"{tensor}_quantized", f"{tensor}_scale", f"{tensor}_zero_point"
        if tensor in matched or q_name not in quant_outputs or scale not in quant_inits:
            continue
        deq = f"{tensor}{EDGESTUDIO_DQ}"
        quant_model.graph.node.append(
            helper.make_node(
                "DequantizeLinear",
                [q_name, scale] + ([zp] if zp in quant_inits else []),
                [deq],
                name=deq,
            )
        )
        quant_types[deq] = TensorProto.FLOAT
        # The QOperator quantizer folds a following Relu/Clip into the layer: its quantized output
        # then stands for the activation's output, so compare against that.
        ref = tensor
        while (
            len(consumers.get(ref, [])) == 1
            and consumers[ref][0].op_type in ("Relu", "Clip")
            and consumers[ref][0].output[0] not in quant_outputs
        ):
            ref = consumers[ref][0].output[0]
        add(ref, deq, _qrange(quant_model.graph.node[-1], quant_inits))
    for tensor in made_by:
        # A type onnx cannot infer past a contrib operator (MatMulNBits) is the float one:
        # the same tensor, computed by the quantized model.
        if (
            tensor not in matched
            and tensor in quant_outputs
            and quant_types.get(tensor, float_types.get(tensor)) in FLOAT_TYPES
        ):
            add(tensor, tensor, None)
    order = {t: i for i, t in enumerate(made_by)}
    return sorted(matched.values(), key=lambda m: order.get(m.tensor, -1))
