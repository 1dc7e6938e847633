"""The typed results of benchmarks, profiles and the provider probe."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgestudio.core.serialise import register_format, without


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


# A measured row carries no "error" key (readers of bench --json test for its presence).
register_format(
    LatencyRow,
    lambda row, data: (
        data if row.error is not None else {k: v for k, v in data.items() if k != "error"}
    ),
)


@dataclass
class Latency:
    """A benchmark's rows and what they say about quantized models against the float one."""

    rows: list[LatencyRow] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # devices whose link failed part-way

    def __bool__(self) -> bool:
        return bool(self.rows)


# A benchmark's JSON (``bench --json``) has said ``results`` for its rows since round 1.
register_format(
    Latency,
    lambda latency, data: {"results": data.pop("rows"), **data},
    lambda data: {"rows": data.get("results", []), **without("results")(data)},
)


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


@dataclass(frozen=True)
class ProviderProbes:
    """What the provider probe found: each provider, and the versions it probed with."""

    providers: list[ProviderProbe] = field(default_factory=list)
    onnxruntime: str = ""
    onnx: str = ""
