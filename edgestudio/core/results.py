"""Typed results of the operations, and the one place that turns them into JSON and back.

Workers send results as JSON (``JobReport.details``); the GUI, the CLI, workspaces and reports
read them as these dataclasses — attributes, never string keys. :func:`to_json` and
:func:`from_json` work on any of them from their type hints, so a new field needs no code here.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from edgestudio.core.inputs.data_source import DataProvenance
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.quant.task_metrics import TaskResult
from edgestudio.core.verdicts import Verdict

T = TypeVar("T")


# ----- the serialiser ---------------------------------------------------------------------------
def to_json(value: Any) -> Any:
    """``value`` (a result, or anything inside one) as plain JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def from_json(cls: type[T], data: Any) -> T:
    """Rebuild a ``cls`` from :func:`to_json` output (unknown keys are ignored, so older and
    newer files both read)."""
    return typing.cast(T, _build(cls, data))


def _build(hint: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        for option in options:  # the first that fits (dataclasses before plain values)
            if dataclasses.is_dataclass(option) and not isinstance(data, dict):
                continue
            return _build(option, data)
        return data
    if origin in (list, tuple):
        args = typing.get_args(hint)
        item = args[0] if args else Any
        built = [_build(item, v) for v in data]
        return tuple(built) if origin is tuple else built
    if origin is dict:
        _, value_hint = typing.get_args(hint) or (str, Any)
        return {k: _build(value_hint, v) for k, v in data.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint, vars(sys.modules[hint.__module__]))
        known = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**{k: _build(hints[k], v) for k, v in data.items() if k in known})
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(data)
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return data


# ----- quantization analysis ---------------------------------------------------------------------
@dataclass(frozen=True)
class LayerError:
    """The error of one activation of the quantized model against the float one."""

    tensor: str
    node: str  # the node that produces it (``input:NAME`` for a graph input)
    op_type: str
    sqnr_db: float | None  # None: the float activation is all zeros (nothing to compare)
    mse: float | None
    max_abs: float | None
    cosine: float | None
    clipped_fraction: float | None = None  # share of values outside the quantization range


@dataclass(frozen=True)
class WeightError:
    """The error of one quantized weight, with its quantization step bounds."""

    tensor: str
    node: str
    sqnr_db: float | None
    mse: float | None
    max_abs: float | None
    cosine: float | None
    scale_bound: float  # S/2 of the model's scale: the largest rounding error
    per_tensor_bound: float  # S/2 if the weight had one scale
    per_channel_bound_mean: float  # mean S/2 if it had one scale per output channel
    per_channel: bool  # the model's weight is quantized per channel


@dataclass(frozen=True)
class OutputError:
    """How far one model output moved, as onnxruntime runs the quantized model."""

    output: str
    sqnr_db: float | None
    mse: float | None
    max_abs: float | None
    cosine: float | None
    max_rel: float | None
    allclose: bool
    atol: float
    rtol: float
    sqnr_db_simulated: float | None = None  # the same output in the simulated QDQ graph


@dataclass(frozen=True)
class Accuracy:
    """Top-1 figures (labels give the two accuracies; agreement needs none)."""

    top1_agreement: float
    samples: int
    float_top1: float | None = None
    quant_top1: float | None = None


@dataclass
class Analysis:
    """A quantized model compared with its float original on the same samples."""

    float_model: str
    quant_model: str
    samples: int
    layers: list[LayerError] = field(default_factory=list)
    weights: list[WeightError] = field(default_factory=list)
    outputs: list[OutputError] = field(default_factory=list)
    accuracy: Accuracy | None = None
    verdict: Verdict | None = None
    data: DataProvenance | None = None  # what the figures were computed on
    task: TaskResult | None = None  # the task metric (the verdict's first criterion)
    quantized_nodes: list[str] = field(default_factory=list)  # what excluding can change

    @property
    def representative(self) -> bool:
        """True when the figures were computed on the user's data (a verdict is possible)."""
        return self.data is not None and self.data.representative

    def data_note(self) -> str:
        """What the figures were computed on, for a legend or a caption."""
        if self.data is None:
            return "Data not recorded (an older analysis): no verdict, neutral shades."
        if not self.data.representative:
            return f"Pipeline check on {self.data.text()}: no verdict, neutral shades."
        return f"On {self.data.text()}."

    def layers_worst_first(self) -> list[LayerError]:
        """Layers sorted by SQNR, lowest (worst) first; n/a last."""
        return sorted(self.layers, key=lambda r: (r.sqnr_db is None, r.sqnr_db or 0.0))

    def worst_excludable(self, count: int, already: tuple[str, ...] = ()) -> list[str]:
        """The nodes of the ``count`` worst layers that the run quantized (excluding any other
        node gives the same model again), not yet excluded. Older analyses that did not record
        the quantized nodes fall back to every real operator."""
        quantized = set(self.quantized_nodes)
        nodes = [r.node for r in self.layers_worst_first()
                 if r.sqnr_db is not None and not r.node.startswith("input:")
                 and r.node not in already and (not quantized or r.node in quantized)]
        return list(dict.fromkeys(nodes))[:count]

    def sqnr_by_node(self) -> dict[str, float]:
        """Each node's worst output SQNR (for the graph overlay)."""
        values: dict[str, float] = {}
        for r in self.layers:
            if r.sqnr_db is not None:
                values[r.node] = min(values.get(r.node, float("inf")), r.sqnr_db)
        return values


@dataclass
class Quantization:
    """What a quantization job wrote, and what it did on the way."""

    float_bytes: int
    quant_bytes: int
    quantized_ops: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "raised to opset 13 (checked)"
    calibration_warnings: list[str] = field(default_factory=list)
    # static modes: "reused" (from the calibration cache), "computed", "off" or "uncached"
    calibration: str = ""
    onnxruntime: str = ""  # what the result gate found: "loads and runs"
    command: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)  # the input specification it ran on


# ----- performance -------------------------------------------------------------------------------
@dataclass
class LatencyRow:
    """One benchmark configuration: a model on a provider with a thread count."""

    model: str
    ep: str
    threads: int
    error: str | None = None  # why there are no figures
    quantized_ops: list[str] = field(default_factory=list)
    runs: int | None = None
    median_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    min_ms: float | None = None
    mean_ms: float | None = None
    std_ms: float | None = None
    throughput_per_s: float | None = None
    cpu_median_ms: float | None = None
    contended: bool = False  # another process took the CPU: the figures are doubtful
    samples_ms: list[float] = field(default_factory=list)
    inputs: dict[str, list[int]] = field(default_factory=dict)
    device: str = ""  # the device it was measured on; "" — this machine
    runtime: str = ""  # the onnxruntime version that measured it

    @property
    def where(self) -> str:
        """The device's name, or "this machine"."""
        return self.device or "this machine"

    @property
    def ok(self) -> bool:
        """True when the configuration was measured."""
        return self.error is None and self.median_ms is not None


@dataclass
class Latency:
    """A benchmark's rows and what they say about quantized models against the float one."""

    rows: list[LatencyRow] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # devices whose link failed part-way

    def __bool__(self) -> bool:
        return bool(self.rows)


@dataclass(frozen=True)
class ProfiledNode:
    """One kernel of a profiled run, mapped back to the model nodes it stands for."""

    node: str
    op_type: str
    ep: str
    time_us: float  # mean per run
    share: float  # of the whole run time
    covers: list[str] = field(default_factory=list)
    fused: bool = False  # a kernel ORT made by fusing the nodes it covers
    calls: int = 0


@dataclass(frozen=True)
class OpTime:
    """Time per op type in a profiled run."""

    op_type: str
    time_us: float
    share: float


@dataclass(frozen=True)
class MobileCoverage:
    """What onnxruntime's usability checker predicts for NNAPI or CoreML."""

    supported_nodes: int
    nodes: int
    partitions: int
    unsupported_ops: list[str]
    suitability: str


@dataclass
class Profile:
    """A profiled run: time per node, placement per provider, predicted mobile coverage."""

    nodes: list[ProfiledNode] = field(default_factory=list)
    op_types: list[OpTime] = field(default_factory=list)
    placement: dict[str, str] = field(default_factory=dict)  # node -> provider that ran it
    unplaced: list[str] = field(default_factory=list)
    total_us: float = 0.0
    placement_text: str = ""
    first_choice: str = ""
    mobile: dict[str, MobileCoverage] = field(default_factory=dict)
    mobile_error: str | None = None  # why the checker gave up
    events: int = 0
    warnings: list[str] = field(default_factory=list)
    device: str = ""  # the device it ran on; "" — this machine
    runtime: str = ""  # the onnxruntime version that ran it

    def time_share_by_node(self) -> dict[str, float]:
        """Each graph node's share of the run time in percent (a fused kernel's time is split
        evenly between the nodes it covers)."""
        shares: dict[str, float] = {}
        for n in self.nodes:
            for covered in n.covers:
                shares[covered] = shares.get(covered, 0.0) + n.share * 100 / len(n.covers)
        return shares


@dataclass(frozen=True)
class ProviderProbe:
    """Whether one execution provider of this onnxruntime really works here."""

    provider: str
    works: bool
    reason: str | None = None
    available: bool = False
    package: str | None = None


# ----- each job's result, typed -----------------------------------------------------------------
def latency_of(details: dict[str, Any]) -> Latency:
    """A benchmark job's result."""
    return Latency(from_json(list[LatencyRow], details.get("results", [])),
                   list(details.get("verdicts", [])), list(details.get("failures", [])))


def profile_of(details: dict[str, Any], warnings: list[str]) -> Profile:
    """A profile job's result (with the job's warnings: nodes that fell back, …)."""
    return from_json(Profile, {**details, "warnings": warnings})


@dataclass
class DeviceInfo:
    """What ``device check`` found on a device, and why it cannot run models (``problems``)."""

    name: str = ""
    address: str = ""
    runner: int = 0
    os: str = ""
    machine: str = ""
    cpu: str = ""
    cpu_flags: list[str] = field(default_factory=list)
    cores: int | None = None
    memory_bytes: int | None = None
    python: str = ""
    python_path: str = ""
    cache: str = ""
    free_bytes: int | None = None
    numpy: str | None = None
    onnxruntime: str | None = None
    providers: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """True when the device can run models."""
        return not self.problems


def device_info_of(details: dict[str, Any]) -> DeviceInfo:
    """A device check's result."""
    return from_json(DeviceInfo, details.get("device", {}))


def providers_of(details: dict[str, Any]) -> list[ProviderProbe]:
    """A provider probe's result."""
    return from_json(list[ProviderProbe], details.get("providers", []))


def spec_of(details: dict[str, Any]) -> InputSpecification:
    """An inputs job's result: the specification the model runs on."""
    return InputSpecification.from_dict(details["spec"])


TensorShapes = dict[str, tuple[str, list[int | str | None] | None]]


def shapes_of(details: dict[str, Any]) -> TensorShapes:
    """A shape-inference job's result: every tensor's ``(dtype, shape)``."""
    return {name: (str(dtype), shape) for name, (dtype, shape)
            in details.get("shapes", {}).items()}
