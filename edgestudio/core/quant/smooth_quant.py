"""SmoothQuant (Xiao et al., 2023): move activation outliers into the weights before int8.

A transformer's MatMul input has a few channels hundreds of times larger than the rest, so one
int8 scale per tensor crushes the others. For each channel j of a MatMul's input X, with
``s_j = max|X_j|^α / max|W_j,:|^(1−α)``, ``X·W = (X / s)·(s·W)``: the activation divided by
``s`` is smooth, the weight rows multiplied by ``s`` absorb the outliers (weights are quantized
per channel of the output, so a scaled row costs little). The division is folded into the
LayerNormalization (or its decomposed ``Mul(γ)`` → ``Add(β)``) that produces X when the
MatMuls are X's only readers, and is otherwise an inserted ``Mul`` whose output only those
MatMuls read — the residual path keeps X unchanged. Exact in float: the smoothed model computes
what the original does (up to rounding), which the quantization job's proof still checks.

The quantizers must sit after the smoothing: with every operator quantized, X itself would be
quantized (outliers and all) before the ``Mul``; quantize_static is run with the compute
placements (``--placement compute`` / ``compute-inputs``), which the recipe rules demand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.model.opsets import iter_nodes

SCALE_LIMITS = (1e-4, 1e4)  # a scale beyond these is a dead channel, not an outlier


@dataclass
class Smoothing:
    """What smoothing did: tensors smoothed, how (folded or by an inserted Mul), α."""

    alpha: float
    folded: list[str] = field(default_factory=list)  # into the LayerNorm producing them
    inserted: list[str] = field(default_factory=list)  # by a Mul before their MatMuls
    largest_scale: float = 1.0

    def note(self) -> str:
        """What a person reads in the job's notes."""
        count = len(self.folded) + len(self.inserted)
        if not count:
            return (
                f"SmoothQuant (α={self.alpha:g}) found no MatMul input to smooth (it needs "
                "MatMul or Gemm layers with stored weights)."
            )
        return (
            f"SmoothQuant (α={self.alpha:g}): {count} MatMul input(s) smoothed — "
            f"{len(self.folded)} folded into the LayerNorm producing them, "
            f"{len(self.inserted)} by an inserted Mul; the largest channel scale "
            f"{self.largest_scale:.3g}."
        )


@dataclass(frozen=True)
class _Reader:
    node: onnx.NodeProto
    weight: str
    rows_axis: int  # the weight's axis that meets X's channels (0 for MatMul, 1 for Gemm transB)


def smoothing_targets(model: onnx.ModelProto) -> dict[str, list[_Reader]]:
    """Each activation read by MatMul/Gemm layers with a stored 2-D weight, and those layers."""
    stored = {t.name: t for t in model.graph.initializer}
    found: dict[str, list[_Reader]] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and len(node.input) == 2:
            weight = stored.get(node.input[1])
            if weight is not None and len(weight.dims) == 2 and node.input[0] not in stored:
                found.setdefault(node.input[0], []).append(_Reader(node, weight.name, 0))
        elif node.op_type == "Gemm" and len(node.input) >= 2:
            attrs = {a.name: a.i for a in node.attribute}
            weight = stored.get(node.input[1])
            if weight is not None and not attrs.get("transA", 0) and node.input[0] not in stored:
                found.setdefault(node.input[0], []).append(
                    _Reader(node, weight.name, 1 if attrs.get("transB", 0) else 0)
                )
    return found


def probe_session(model: onnx.ModelProto, tensors: list[str], folder: Path) -> Any:
    """An onnxruntime session on a copy of ``model`` with ``tensors`` as extra outputs
    (written to ``folder``, where the model's external weights are found)."""
    import onnxruntime as ort

    from edgestudio.core.model.sessions import job_session_options

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    outputs = {o.name for o in probe.graph.output}
    for name in tensors:
        if name not in outputs:
            probe.graph.output.append(
                onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
            )
    options = job_session_options(2)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    path = folder / "probe.onnx"
    onnx.save(probe, str(path))
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    finally:
        path.unlink(missing_ok=True)


def channel_maxima(
    model: onnx.ModelProto,
    tensors: list[str],
    samples: Iterable[dict[str, np.ndarray]],
    folder: Path,
) -> dict[str, np.ndarray]:
    """``max |x|`` of each tensor's last-axis channels over every sample (onnxruntime runs a
    copy of the model with the tensors as extra outputs; ``folder``: where its weights are)."""
    session = probe_session(model, tensors, folder)
    maxima: dict[str, np.ndarray] = {}
    for sample in samples:
        values = session.run(tensors, sample)
        for name, value in zip(tensors, values, strict=True):
            value = np.abs(np.asarray(value, np.float32))
            channel = value.reshape(-1, value.shape[-1]).max(axis=0)
            maxima[name] = np.maximum(maxima[name], channel) if name in maxima else channel
    return maxima


def smooth(model: onnx.ModelProto, maxima: dict[str, np.ndarray], alpha: float) -> Smoothing:
    """Smooth, in place, every MatMul input whose channel maxima are given (see the module)."""
    done = Smoothing(alpha)
    stored = {t.name: t for t in model.graph.initializer}
    readers_of = _readers(model)
    producers = {o: n for n in model.graph.node for o in n.output}
    uses = {
        name: sum(1 for n in iter_nodes(model.graph) for t in n.input if t == name)
        for name in stored
    }
    for tensor, readers in smoothing_targets(model).items():
        amax = maxima.get(tensor)
        if amax is None:
            continue
        weights = [numpy_helper.to_array(stored[r.weight]) for r in readers]
        if any(w.shape[r.rows_axis] != amax.size for w, r in zip(weights, readers, strict=True)):
            continue  # the channels are not the weight's rows (a broadcast MatMul)
        wmax = np.max(
            [np.abs(w).max(axis=1 - r.rows_axis) for w, r in zip(weights, readers, strict=True)],
            axis=0,
        )
        scale = np.where(
            (amax > 0) & (wmax > 0), amax**alpha / np.maximum(wmax, 1e-12) ** (1 - alpha), 1.0
        )
        scale = np.clip(scale, *SCALE_LIMITS).astype(np.float32)
        for weight, reader in zip(weights, readers, strict=True):
            shape = [1, 1]
            shape[reader.rows_axis] = -1
            scaled = (weight * scale.reshape(shape)).astype(weight.dtype)
            name = _own_copy(model, reader.node, 1, reader.weight, uses)
            stored[name] = numpy_helper.from_array(scaled, name)
            _replace_initializer(model, stored[name])
        only_matmuls = len(readers_of.get(tensor, [])) == len(readers) and tensor not in {
            o.name for o in model.graph.output
        }
        if only_matmuls and _fold(model, producers.get(tensor), scale, stored, uses):
            done.folded.append(tensor)
        else:
            _insert_division(model, tensor, readers, scale)
            done.inserted.append(tensor)
        done.largest_scale = max(done.largest_scale, float(scale.max()))
    return done


def _readers(model: onnx.ModelProto) -> dict[str, list[onnx.NodeProto]]:
    found: dict[str, list[onnx.NodeProto]] = {}
    for node in iter_nodes(model.graph):
        for t in dict.fromkeys(node.input):
            found.setdefault(t, []).append(node)
    return found


def _own_copy(
    model: onnx.ModelProto, node: onnx.NodeProto, index: int, name: str, uses: dict[str, int]
) -> str:
    """The initializer ``node.input[index]`` reads, as one only ``node`` reads (a shared one
    is copied under a new name)."""
    if uses.get(name, 0) <= 1:
        return name
    copy = f"{name}/smoothquant/{node.name or node.output[0]}"
    source = next(t for t in model.graph.initializer if t.name == name)
    model.graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(source), copy))
    node.input[index] = copy
    uses[name] -= 1
    uses[copy] = 1
    return copy


def _replace_initializer(model: onnx.ModelProto, tensor: onnx.TensorProto) -> None:
    for i, t in enumerate(model.graph.initializer):
        if t.name == tensor.name:
            model.graph.initializer[i].CopyFrom(tensor)
            return
    model.graph.initializer.append(tensor)


def _per_channel(stored: dict[str, onnx.TensorProto], name: str, size: int) -> np.ndarray | None:
    tensor = stored.get(name)
    if tensor is None:
        return None
    value = numpy_helper.to_array(tensor)
    return value if value.size == size and value.shape[-1:] == (size,) else None


def _fold(
    model: onnx.ModelProto,
    producer: onnx.NodeProto | None,
    scale: np.ndarray,
    stored: dict[str, onnx.TensorProto],
    uses: dict[str, int],
) -> bool:
    """Divide the LayerNorm producing the tensor by ``scale`` (its γ and β); False when the
    producer is no LayerNorm with stored per-channel parameters."""
    if producer is None:
        return False
    if producer.op_type == "LayerNormalization" and len(producer.input) >= 2:
        params = [(producer, i) for i in range(1, len(producer.input)) if producer.input[i]]
    elif producer.op_type == "Add":  # decomposed: Add(Mul(x̂, γ), β)
        beta = next((i for i, t in enumerate(producer.input) if t in stored), None)
        other = producer.input[1 - beta] if beta is not None else ""
        gamma_node = next(
            (n for n in model.graph.node if other in n.output and n.op_type == "Mul"), None
        )
        gamma = (
            next((i for i, t in enumerate(gamma_node.input) if t in stored), None)
            if gamma_node is not None
            else None
        )
        if (
            beta is None
            or gamma is None
            or gamma_node is None
            or len(_readers(model).get(gamma_node.output[0], [])) != 1
        ):
            return False  # γ·x̂ read elsewhere too: dividing γ would change that reader
        params = [(producer, beta), (gamma_node, gamma)]
    else:
        return False
    values = [_per_channel(stored, node.input[i], scale.size) for node, i in params]
    if any(v is None for v in values):
        return False
    for (node, i), value in zip(params, values, strict=True):
        assert value is not None
        name = _own_copy(model, node, i, node.input[i], uses)
        stored[name] = numpy_helper.from_array((value / scale).astype(value.dtype), name)
        _replace_initializer(model, stored[name])
    return True


def _insert_division(
    model: onnx.ModelProto, tensor: str, readers: list[_Reader], scale: np.ndarray
) -> None:
    """X / s as a new Mul that only the smoothed MatMuls read."""
    inverse = f"{tensor}/smoothquant/inverse_scale"
    smoothed = f"{tensor}/smoothquant"
    model.graph.initializer.append(
        numpy_helper.from_array((1.0 / scale).astype(np.float32), inverse)
    )
    mul = onnx.helper.make_node("Mul", [tensor, inverse], [smoothed], name=f"smoothquant/{tensor}")
    first = min(list(model.graph.node).index(r.node) for r in readers)
    model.graph.node.insert(first, mul)
    for reader in readers:
        reader.node.input[0] = smoothed
