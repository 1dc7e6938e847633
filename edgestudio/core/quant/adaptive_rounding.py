"""Adaptive rounding of MatMul/Gemm/Conv weights in a QDQ model (GPTQ, Frantar et al., 2023).

Round-to-nearest makes every weight's error as small as it can be on its own; what matters is
the layer's *output* on real inputs. With ``H = XᵀX`` from the layer's inputs on the calibration
data, GPTQ rounds the weight's input rows one at a time and spreads each row's rounding error
over the rows not yet rounded, through the inverse Hessian — the output error ``‖X(W − Ŵ)‖``
drops, the scales and zero points onnxruntime chose stay as they are, and the model stays an
ordinary QDQ model (only int8 values change). Numpy only; deterministic.

A Conv is the same problem once its input is cut into the patches each output position reads
(im2col): ``X`` holds one row per position and sample, ``W`` is the kernel flattened to
[in-channels·kernel, out-channels]; each group of a grouped (depthwise) Conv is rounded apart,
on the patches of its own input channels.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

DAMPING = 0.01  # of the Hessian's mean diagonal, added to it (a dead input channel stays solvable)
# Each layer's XᵀX is K × K, inverted once and walked row by row (K³ and K²·N work): wider
# inputs (an LM head over a vocabulary, an unrolled LSTM's 4096-wide gates) and Hessians past
# the memory budget are left to round-to-nearest, said in the note.
MAX_INPUT_WIDTH = 2048
HESSIAN_BUDGET_BYTES = 1 << 30  # every rounded layer's XᵀX is held until the data is read


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
    conv: ConvShape | None = None  # a Conv's geometry (None: MatMul/Gemm)


@dataclass(frozen=True)
class ConvShape:
    """What a Conv does with its input's positions: the patches its kernel reads."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads: tuple[int, ...]  # begins then ends, as ONNX writes them
    dilations: tuple[int, ...]
    group: int

    @classmethod
    def of(cls, node: onnx.NodeProto, kernel: tuple[int, ...]) -> ConvShape | str:
        """The geometry of ``node``, or why it is not rounded (an auto_pad left to the
        runtime)."""
        attrs = {a.name: a for a in node.attribute}
        pad_mode = attrs["auto_pad"].s.decode() if "auto_pad" in attrs else "NOTSET"
        if pad_mode not in ("NOTSET", "VALID"):
            return f"auto_pad {pad_mode}"
        rank = len(kernel)

        def ints(name: str, default: int, count: int) -> tuple[int, ...]:
            return tuple(attrs[name].ints) if name in attrs else (default,) * count

        return cls(
            kernel,
            ints("strides", 1, rank),
            ints("pads", 0, 2 * rank),
            ints("dilations", 1, rank),
            attrs["group"].i if "group" in attrs else 1,
        )

    def patches(self, x: np.ndarray, channels: slice) -> np.ndarray:
        """[positions, channels·kernel] of ``x`` [N, C, *spatial]: what each output position
        reads from ``channels``, in the order the kernel's weights are stored."""
        rank = len(self.kernel)
        part = x[:, channels]
        widths = [(0, 0), (0, 0)] + [(self.pads[i], self.pads[i + rank]) for i in range(rank)]
        part = np.pad(part, widths)
        spans = tuple((k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations, strict=True))
        axes = tuple(range(2, 2 + rank))
        windows = np.lib.stride_tricks.sliding_window_view(part, spans, axis=axes)
        steps = (slice(None), slice(None))
        steps += tuple(slice(None, None, s) for s in self.strides)
        steps += tuple(slice(None, None, d) for d in self.dilations)
        windows = windows[steps]  # [N, C, *out, *kernel]
        order = (0, *range(2, 2 + rank), 1, *range(2 + rank, 2 + 2 * rank))
        return windows.transpose(order).reshape(-1, part.shape[1] * int(np.prod(self.kernel)))


@dataclass
class Rounding:
    """What adaptive rounding changed."""

    layers: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # and why, in words
    error_before: float = 0.0  # summed ‖X(W − Ŵ)‖² over the layers, round-to-nearest
    error_after: float = 0.0
    kinds: set[str] = field(default_factory=set)  # the op types rounded

    def note(self) -> str:
        """What a person reads in the job's notes."""
        if not self.layers:
            return (
                "Adaptive rounding (GPTQ) changed nothing: no MatMul/Gemm/Conv with an "
                "8-bit stored weight"
                + (f" ({'; '.join(self.skipped[:2])})" if self.skipped else "")
                + "."
            )
        drop = (1 - self.error_after / self.error_before) if self.error_before else 0.0
        left = (
            f" {len(self.skipped)} left to round-to-nearest ({'; '.join(self.skipped[:2])}"
            + ("; …" if len(self.skipped) > 2 else "")
            + ")."
            if self.skipped
            else ""
        )
        return (
            f"Adaptive rounding (GPTQ) of {len(self.layers)} {self._kinds()} weight(s) on the "
            f"calibration inputs: their output error {drop:.0%} lower than "
            f"round-to-nearest (same scales).{left}"
        )

    def _kinds(self) -> str:
        return "/".join(sorted(self.kinds)) or "MatMul/Gemm/Conv"


def quantized_weights(model: onnx.ModelProto) -> list[QuantizedWeight]:
    """The MatMul/Gemm/Conv layers whose weight is a DequantizeLinear of a stored 8-bit
    tensor."""
    stored = {t.name: t for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    found = []
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm", "Conv") or len(node.input) < 2:
            continue
        dq = producers.get(node.input[1])
        if dq is None or dq.op_type != "DequantizeLinear" or dq.input[0] not in stored:
            continue
        values = stored[dq.input[0]]
        conv: ConvShape | str | None = None
        if node.op_type == "Conv" and len(values.dims) >= 3:
            conv = ConvShape.of(node, tuple(int(d) for d in values.dims[2:]))
        if (
            values.data_type not in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
            or (node.op_type == "Conv") != isinstance(conv, ConvShape)
            or (conv is None and len(values.dims) != 2)
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
                conv if isinstance(conv, ConvShape) else None,
            )
        )
    return found


def input_hessians(
    float_model: onnx.ModelProto,
    layers: list[QuantizedWeight],
    samples: Iterable[dict[str, np.ndarray]],
    folder: Path,
) -> dict[tuple[str, int], np.ndarray]:
    """``XᵀX`` over every sample, by (layer, group): a MatMul/Gemm's input rows (last axis the
    features, one matrix per input tensor, shared), a Conv's patches per group."""
    from edgestudio.core.quant.smooth_quant import probe_session

    tensors = sorted({layer.input_tensor for layer in layers})
    session = probe_session(float_model, tensors, folder)
    hessians: dict[tuple[str, int], np.ndarray] = {}

    def add(key: tuple[str, int], rows: np.ndarray) -> None:
        rows = rows.astype(np.float64)
        hessians[key] = hessians.get(key, 0) + rows.T @ rows

    shared = sorted({layer.input_tensor for layer in layers if layer.conv is None})
    for sample in samples:
        values = dict(zip(tensors, session.run(tensors, sample), strict=True))
        for name in shared:
            add((name, 0), values[name].reshape(-1, values[name].shape[-1]))
        for layer in layers:
            if layer.conv is not None:
                x = np.asarray(values[layer.input_tensor])
                width = x.shape[1] // layer.conv.group
                for g in range(layer.conv.group):
                    add((layer.node, g), layer.conv.patches(x, slice(g * width, (g + 1) * width)))
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
    """Round every 8-bit MatMul/Gemm/Conv weight of ``quant_model`` adaptively, in place."""
    done = Rounding()
    layers = quantized_weights(quant_model)
    float_weights = {n.name: n for n in float_model.graph.node}
    stored = {t.name: t for t in float_model.graph.initializer}
    usable: list[tuple[QuantizedWeight, np.ndarray]] = []
    held = 0  # bytes of the Hessians the usable layers need
    for layer in layers:
        original = float_weights.get(layer.node)
        weight = stored.get(original.input[1]) if original is not None else None
        if weight is None:
            done.skipped.append(f"{layer.node}: no float weight to start from")
        elif layer.axis not in (None, _output_axis(layer)):
            done.skipped.append(f"{layer.node}: its scales are not per output channel")
        elif _input_width(layer, weight) > MAX_INPUT_WIDTH:
            done.skipped.append(f"{layer.node}: {list(weight.dims)} is too wide")
        elif held + _hessian_bytes(layer, weight, usable) > HESSIAN_BUDGET_BYTES:
            done.skipped.append(f"{layer.node}: past the {HESSIAN_BUDGET_BYTES >> 20} MiB budget")
        else:
            held += _hessian_bytes(layer, weight, usable)
            usable.append((layer, numpy_helper.to_array(weight)))
    if not usable:
        return done
    hessians = input_hessians(float_model, [layer for layer, _ in usable], samples, folder)
    quant_stored = {t.name: t for t in quant_model.graph.initializer}
    for layer, weight in usable:
        values = quant_stored[layer.values]
        dtype = numpy_helper.to_array(values).dtype
        info = np.iinfo(dtype)
        blocks = _blocks(layer, weight)
        if any(_hessian(hessians, layer, g, w) is None for g, w, _ in blocks):
            done.skipped.append(f"{layer.node}: its input was not seen")
            continue
        rounded = []
        outputs = blocks[-1][2].stop
        scales = np.broadcast_to(np.asarray(layer.scale, np.float64).reshape(-1), (outputs,))
        zeros = np.broadcast_to(np.asarray(layer.zero_point, np.float64).reshape(-1), (outputs,))
        for g, w, columns in blocks:
            h = _hessian(hessians, layer, g, w)
            assert h is not None
            s, z = scales[columns].reshape(1, -1), zeros[columns].reshape(1, -1)
            q = gptq_round(w, h, s, z, int(info.min), int(info.max))
            nearest = np.clip(np.round(w / s + z), info.min, info.max)
            done.error_before += _output_error(h, w, (nearest - z) * s)
            done.error_after += _output_error(h, w, (q - z) * s)
            rounded.append(q)
        values.CopyFrom(
            numpy_helper.from_array(_stored(layer, weight, rounded).astype(dtype), layer.values)
        )
        done.layers.append(layer.node)
        done.kinds.add(float_weights[layer.node].op_type)
    return done


def _hessian_bytes(
    layer: QuantizedWeight,
    weight: onnx.TensorProto,
    usable: list[tuple[QuantizedWeight, np.ndarray]],
) -> int:
    """What ``layer`` adds to the Hessians held: a Conv's per group, a MatMul/Gemm's unless an
    earlier one reads the same input (shared)."""
    width = _input_width(layer, weight)
    if layer.conv is not None:
        return layer.conv.group * width * width * 8
    if any(w.conv is None and w.input_tensor == layer.input_tensor for w, _ in usable):
        return 0
    return width * width * 8


def _output_axis(layer: QuantizedWeight) -> int:
    """The stored weight's output-channel axis (per-channel scales lie along it)."""
    return 0 if layer.conv is not None or layer.transposed else 1


def _input_width(layer: QuantizedWeight, weight: onnx.TensorProto) -> int:
    """K of one rounding problem: a row of the Hessian."""
    if layer.conv is not None:
        return int(np.prod(weight.dims[1:]))
    return int(weight.dims[1 if layer.transposed else 0])


def _blocks(layer: QuantizedWeight, weight: np.ndarray) -> list[tuple[int, np.ndarray, slice]]:
    """Each rounding problem of ``layer``: (group, W as [K, N], the output columns it holds).
    One for a MatMul/Gemm, one per group for a Conv (its kernel flattened per output)."""
    if layer.conv is None:
        w = weight.T if layer.transposed else weight
        return [(0, w, slice(0, w.shape[1]))]
    per_group = weight.shape[0] // layer.conv.group
    return [
        (
            g,
            weight[g * per_group : (g + 1) * per_group].reshape(per_group, -1).T,
            slice(g * per_group, (g + 1) * per_group),
        )
        for g in range(layer.conv.group)
    ]


def _hessian(
    hessians: dict[tuple[str, int], np.ndarray], layer: QuantizedWeight, group: int, w: np.ndarray
) -> np.ndarray | None:
    key = (layer.input_tensor, 0) if layer.conv is None else (layer.node, group)
    h = hessians.get(key)
    return h if h is not None and h.shape[0] == w.shape[0] else None


def _stored(layer: QuantizedWeight, weight: np.ndarray, rounded: list[np.ndarray]) -> np.ndarray:
    """The rounded blocks back in the stored weight's layout."""
    if layer.conv is None:
        return rounded[0].T if layer.transposed else rounded[0]
    return np.concatenate([q.T for q in rounded]).reshape(weight.shape)


def _output_error(hessian: np.ndarray, w: np.ndarray, approx: np.ndarray) -> float:
    """``‖X(W − Ŵ)‖²`` from ``XᵀX``: ``trace(Dᵀ H D)``."""
    d = w.astype(np.float64) - approx
    return float(np.einsum("kn,kl,ln->", d, hessian, d))
