"""The quantized model as it ships — on the CPU, or on the target it was made for — and the
CPU sessions an analysis runs its models in.

On a target the model's quantized activations are read too: the integers a QuantizeLinear
wrote, turned back into floats as the DequantizeLinear that follows would (per tensor or per
axis), so each layer can be judged in the target's own arithmetic.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.progress import Reporter
from edgestudio.core.quant.activation_match import Match, elem_types, producers


def exposing(model: onnx.ModelProto, names: list[str]) -> bytes:
    """``model`` serialized as it ships, with each of ``names`` that is not a graph output
    made one (the tensor a ZipMap turns into a sequence of maps); nothing else changes."""
    declared = {o.name for o in model.graph.output}
    missing = [n for n in names if n not in declared]
    if not missing:
        shipped: bytes = model.SerializeToString()
        return shipped
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    types = elem_types(exposed)
    for name in missing:
        exposed.graph.output.append(
            helper.make_tensor_value_info(name, types.get(name, TensorProto.FLOAT), None)
        )
    data: bytes = exposed.SerializeToString()
    return data


def cpu_session(data: bytes, folder: Path) -> object:
    """A CPU session with ORT's default optimizations (as ``qdq_loss_debug`` uses) on a model
    handed over as bytes whose external weights stay in ``folder`` (read from there)."""
    import onnxruntime as ort

    from edgestudio.core.model.sessions import job_session_options

    options = job_session_options()
    options.add_session_config_entry(
        "session.model_external_initializers_file_folder_path", str(folder)
    )
    # Without the arena a session's memory goes back when it closes: the next model's session
    # starts from what the previous one left, not from its peak.
    options.enable_cpu_mem_arena = False
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def release(session: object) -> None:
    """Close ``session`` and hand the memory the allocator kept back to the system (glibc
    keeps freed blocks for reuse: the float model's peak would stay while the quantized model
    runs)."""
    del session
    gc.collect()
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):  # not glibc (musl): nothing to trim
            ctypes.CDLL("libc.so.6").malloc_trim(0)


class TargetRefusedError(EdgeStudioError):
    """The target does not take the quantized model whole: no figure is measured there."""


HTP_ARCH = "73"  # the Hexagon version the emulated NPU runs as (a Snapdragon 8 Gen 2's)
# Judged in another runtime's arithmetic: the device (an environment `make` made, or one the
# user added under that name) and the provider that must take the whole model there.
RUNTIME_TARGETS = {"openvino": ("openvino", "OpenVINOExecutionProvider")}


class Deployed:
    """The quantized model as it ships, on the CPU or on the target it was made for.

    On the emulated Hexagon NPU (``qnn-htp``) every sample shape gets a copy with its dims
    fixed (the NPU takes static shapes only) and a session with the CPU fallback off: a model
    the NPU does not take whole fails the analysis, saying why — a figure that the CPU partly
    computed is never reported as the NPU's.
    """

    def __init__(
        self,
        model: onnx.ModelProto,
        outputs: list[str],
        path: Path,
        target: str,
        scratch: Path,
        layers: list[str] | None = None,
    ) -> None:
        self.outputs, self.target, self.scratch = outputs, target, scratch
        self.seconds = 0.0
        self._sessions: dict[tuple[tuple[str, tuple[int, ...]], ...], tuple[Any, list[str]]] = {}
        self.layers_refused = ""  # why the target gave no per-layer values (when it did not)
        self.layers: list[str] = []
        if target == "cpu":
            self.where = "the CPU"
            self._cpu = cpu_session(exposing(model, outputs), path.parent)
            return
        if target in RUNTIME_TARGETS:
            self._runtime_model(model, path)
            return
        from edgestudio.core.targets.qnn_htp import provider_version

        self.where = f"the Hexagon NPU (v{HTP_ARCH}, emulated by {provider_version()})"
        # The quantized activations (QuantizeLinear outputs) as graph outputs keep a model
        # wholly on the NPU: its per-layer values, read without changing what it computes.
        self.layers = list(dict.fromkeys(n for n in layers or [] if n not in outputs))
        self._exposed = scratch / "exposed.onnx"
        self._exposed.write_bytes(exposing(model, outputs))
        self._with_layers = scratch / "exposed_layers.onnx"
        if self.layers:
            self._with_layers.write_bytes(exposing(model, outputs + self.layers))

    def _runtime_model(self, model: onnx.ModelProto, path: Path) -> None:
        """Judged in another runtime (OpenVINO's onnxruntime): the device that has it, and the
        model file it is sent (the shipped one, or a copy with the compared tensors exposed)."""
        from edgestudio.core.remote.devices import DeviceError, device_named

        name, self.provider = RUNTIME_TARGETS[self.target]
        try:
            self.device = device_named(name)
        except DeviceError as exc:
            raise DeviceError(
                f"{exc}. `make openvino-env` makes OpenVINO's environment beside a checkout; "
                f"elsewhere add one: edgestudio device add {name} env:PYTHON (a Python with "
                "onnxruntime-openvino)"
            ) from exc
        self.where = f"{self.provider} in '{name}' (its own onnxruntime)"
        self._ready: list[dict[str, Any]] = []
        declared = {o.name for o in model.graph.output}
        self._model_file = path
        if any(n not in declared for n in self.outputs):
            external = onnx.external_data_helper.uses_external_data
            if any(external(t) for t in model.graph.initializer):
                raise EdgeStudioError(
                    f"{path.name} keeps its weights in external data and an output compared "
                    "here is not a graph output: judging it in another runtime is not supported"
                )
            self._model_file = self.scratch / path.name
            self._model_file.write_bytes(exposing(model, self.outputs))

    def run_all(self, samples: Iterable[Mapping[str, np.ndarray]], reporter: Reporter) -> None:
        """In another runtime, every sample at once (one request, the model loaded once);
        :meth:`run` then hands their outputs back in order. Nothing to do elsewhere (the
        samples are not even read)."""
        if self.target not in RUNTIME_TARGETS:
            return
        from edgestudio.core.perf.remote_perf import outputs_on_device

        started = time.perf_counter()
        feeds = [dict(sample) for sample in samples]
        values = outputs_on_device(
            self.device, self._model_file, feeds, self.provider, self.outputs, reporter
        )
        self.seconds = time.perf_counter() - started
        self._ready = [dict(zip(self.outputs, v, strict=True)) for v in values]

    def run(self, sample: dict[str, np.ndarray]) -> dict[str, Any]:
        """The model's outputs on ``sample`` (and, on the target, the layers it gave)."""
        if self.target == "cpu":
            values = self._cpu.run(self.outputs, sample)  # type: ignore[attr-defined]
            return dict(zip(self.outputs, values, strict=True))
        if self.target in RUNTIME_TARGETS:
            return self._ready.pop(0)  # run_all computed them, in the samples' order
        key = tuple(sorted((k, tuple(np.shape(v))) for k, v in sample.items()))
        if key not in self._sessions:
            self._sessions[key] = self._npu_session(
                {k: list(np.shape(v)) for k, v in sample.items()}
            )
        session, names = self._sessions[key]
        started = time.perf_counter()
        values = session.run(names, sample)
        self.seconds += time.perf_counter() - started
        return dict(zip(names, values, strict=True))

    def _npu_session(self, sizes: dict[str, list[int]]) -> tuple[Any, list[str]]:
        import onnxruntime as ort

        from edgestudio.core.model.validate import short
        from edgestudio.core.targets.qnn_htp import session_options
        from edgestudio.core.targets.target_check import fixed_copy

        fixed = self.scratch / f"fixed{len(self._sessions)}.onnx"
        if self.layers and not self.layers_refused:
            fixed_copy(self._with_layers, sizes, fixed)
            try:
                options = session_options(HTP_ARCH, fallback=False)
                return ort.InferenceSession(str(fixed), options), self.outputs + self.layers
            except Exception as exc:  # then the outputs alone: the whole-model figures stand
                self.layers_refused = short(exc)
        fixed_copy(self._exposed, sizes, fixed)
        try:
            options = session_options(HTP_ARCH, fallback=False)
            return ort.InferenceSession(str(fixed), options), self.outputs
        except Exception as exc:
            shapes = ", ".join(f"{k} {'x'.join(map(str, v))}" for k, v in sizes.items())
            raise TargetRefusedError(
                f"{self.where} does not take this model whole at {shapes} "
                f"({short(exc)}): no figure is measured there rather than one the CPU partly "
                "computed. `edgestudio target check` names each node it refuses and why."
            ) from exc

    def rate_note(self, samples: int) -> str:
        """Where the whole-model figures were measured and how fast, in words."""
        rate = samples / self.seconds if self.seconds else 0.0
        if self.target in RUNTIME_TARGETS:
            return (
                f"Whole-model figures measured on {self.where}, the model whole on it, "
                f"{rate:.1f} samples/s with the copy to it"
            )
        return (
            f"Whole-model figures measured on {self.where}, {rate:.1f} samples/s "
            "(emulated: slower than the device, in the device's arithmetic)"
        )

    def layers_note(self, measured: bool) -> str:
        """Where the per-layer figures of an analysis on a target come from, in words."""
        if self.target in RUNTIME_TARGETS:
            return "the per-layer figures are onnxruntime's CPU kernels' (its QDQ graph)"
        if measured:
            return (
                "each layer's SQNR is given for onnxruntime's CPU kernels (its QDQ graph) and "
                "for the target (the quantized activations it computed)"
            )
        why = (
            f"with its layers exposed, the target refused the model: {self.layers_refused}"
            if self.layers_refused
            else "no quantized activation to read there"
        )
        return f"the per-layer figures are onnxruntime's CPU kernels' ({why})"

    def close(self) -> None:
        """Release the sessions (their memory goes back before the next job's)."""
        if self.target == "cpu":
            release(self._cpu)
        self._sessions.clear()


@dataclass(frozen=True)
class QuantizedActivation:
    """Where the target's value of one matched activation is read: the QuantizeLinear output
    that feeds the match's DequantizeLinear, and how to turn it back into floats."""

    quantized: str
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int

    def dequantize(self, values: np.ndarray) -> np.ndarray:
        """The floats the integers stand for (as the DequantizeLinear computes them)."""
        v = np.asarray(values).astype(np.float32)
        shape = [1] * v.ndim
        if self.scale.size > 1:  # per-axis: scale and zero point broadcast along the axis
            shape[self.axis] = -1
        zero = self.zero_point.astype(np.float32).reshape(shape if self.zero_point.size > 1 else ())
        floats: np.ndarray = (v - zero) * self.scale.reshape(shape if self.scale.size > 1 else ())
        return floats


def quantized_activations(
    quant_model: onnx.ModelProto, matches: list[Match], target: str
) -> dict[str, QuantizedActivation]:
    """For an analysis on a target, each match's quantized activation by its ``quant_tensor``
    (none on the CPU: its per-layer values are the QDQ graph's, already compared)."""
    if target == "cpu" or target in RUNTIME_TARGETS:
        return {}
    made_by = producers(quant_model)
    inits = {t.name: t for t in quant_model.graph.initializer}
    found = {}
    for m in matches:
        dq = made_by.get(m.quant_tensor)
        if dq is None or dq.op_type != "DequantizeLinear" or dq.input[1] not in inits:
            continue
        q = made_by.get(dq.input[0])
        if q is None or q.op_type != "QuantizeLinear":
            continue
        zp = (
            numpy_helper.to_array(inits[dq.input[2]])
            if len(dq.input) > 2 and dq.input[2] in inits
            else np.zeros((), np.uint8)
        )
        axis = next((a.i for a in dq.attribute if a.name == "axis"), 1)
        found[m.quant_tensor] = QuantizedActivation(
            dq.input[0], numpy_helper.to_array(inits[dq.input[1]]).astype(np.float32), zp, axis
        )
    return found


def compare_on_target(
    matches: list[Match],
    quantized: dict[str, QuantizedActivation],
    f_vals: dict[str, np.ndarray],
    deployed: dict[str, Any],
) -> None:
    """Fold one sample's activations as the target computed them into each match's sums."""
    for m in matches:
        source = quantized.get(m.quant_tensor)
        if source is None or source.quantized not in deployed:
            continue
        test = source.dequantize(deployed[source.quantized])
        ref = np.asarray(f_vals[m.tensor])
        if ref.size == test.size:
            m.on_target.add(ref.reshape(test.shape), test)
