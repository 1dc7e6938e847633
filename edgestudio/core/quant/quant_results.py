"""The typed results of quantization and its analysis (per layer, per weight, per output, task)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgestudio.core.inputs.data_source import DataProvenance
from edgestudio.core.quant.task_figures import TaskResult
from edgestudio.core.quant.verdicts import Verdict


def sqnr_text(sqnr_db: float | None, non_finite: int = 0, spec: str = ".2f") -> str:
    """An SQNR for a table: ``inf/NaN ×N`` when the quantized side had N inf/NaN values where
    the float side was finite (the worst error there is), ``n/a`` when there was no signal."""
    if non_finite:
        return f"inf/NaN ×{non_finite:,}"
    return "n/a" if sqnr_db is None else format(sqnr_db, spec)


@dataclass(frozen=True)
class LayerError:
    """The error of one activation of the quantized model against the float one."""

    tensor: str
    node: str  # the node that produces it (``input:NAME`` for a graph input)
    op_type: str
    sqnr_db: float | None  # None: the float activation is all zeros, or non_finite
    mse: float | None
    max_abs: float | None
    cosine: float | None
    clipped_fraction: float | None = None  # share of values outside the quantization range
    non_finite: int = 0  # values inf/NaN in the quantized model where the float one is finite
    # the same activation as the target computed it (an analysis --target): None on the CPU
    sqnr_db_target: float | None = None

    def sqnr_text(self, spec: str = ".2f") -> str:
        """The SQNR as a table shows it: inf/NaN values said as such, n/a when unknown."""
        return sqnr_text(self.sqnr_db, self.non_finite, spec)

    def target_gap_db(self) -> float | None:
        """How many dB the target loses on this layer beyond the CPU's QDQ graph."""
        if self.sqnr_db is None or self.sqnr_db_target is None:
            return None
        return self.sqnr_db - self.sqnr_db_target


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
    non_finite: int = 0  # values inf/NaN once dequantized where the float weight is finite


@dataclass(frozen=True)
class OutputDrift:
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
    non_finite: int = 0  # values inf/NaN as the quantized model runs where the float's are not

    def sqnr_text(self, spec: str = ".2f") -> str:
        """The SQNR as a table shows it: inf/NaN values said as such, n/a when unknown."""
        return sqnr_text(self.sqnr_db, self.non_finite, spec)


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
    outputs: list[OutputDrift] = field(default_factory=list)
    accuracy: Accuracy | None = None
    verdict: Verdict | None = None
    data: DataProvenance | None = None  # what the figures were computed on
    task: TaskResult | None = None  # the task metric (the verdict's first criterion)
    # every output judged by its task when more than one carries it (``task`` is the worst)
    tasks: list[TaskResult] = field(default_factory=list)
    quantized_nodes: list[str] = field(default_factory=list)  # what excluding can change
    # quantized node -> the node to name in a suggestion (a fused Relu's producer; "" for
    # one that passes its input's quantization through); empty in older analyses
    targets: dict[str, str] = field(default_factory=dict)
    # where the whole-model figures were measured: "cpu", or the emulated NPU ("qnn-htp")
    measured_on: str = "cpu"

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
        """Layers sorted by SQNR, lowest (worst) first; those with new inf/NaN values before
        all, n/a last."""
        return sorted(
            self.layers, key=lambda r: (not r.non_finite, r.sqnr_db is None, r.sqnr_db or 0.0)
        )

    def target_divergence(self, count: int = 3) -> str:
        """Where the target's arithmetic loses most beyond the CPU's QDQ graph, in words (""
        when the layers were not measured there)."""
        gaps = [(g, r) for r in self.layers if (g := r.target_gap_db()) is not None]
        if not gaps:
            return ""
        gaps.sort(key=lambda pair: -pair[0])
        worst = ", ".join(
            f"{r.node} ({r.sqnr_db_target:.1f} dB there vs {r.sqnr_db:.1f} dB on the CPU)"
            for g, r in gaps[:count]
            if g > 0
        )
        median = sorted(g for g, _ in gaps)[len(gaps) // 2]
        where = f"the target ({self.measured_on})"
        return (
            f"On {where}, {len(gaps)} layers measured: the median layer loses {median:+.2f} dB "
            "beyond the CPU's QDQ graph; "
            + (f"it diverges most at {worst}." if worst else "no layer loses more there.")
        )

    def worst_excludable(self, count: int, already: tuple[str, ...] = ()) -> list[str]:
        """The nodes of the ``count`` worst layers that the run quantized (excluding any other
        node gives the same model again), not yet excluded: a fused Relu/Clip is named by its
        producer, and an operator passing its input's quantization through is never named.
        Older analyses that did not record the quantized nodes fall back to every real
        operator."""
        quantized = set(self.quantized_nodes)
        nodes = [
            self.targets.get(r.node, r.node)
            for r in self.layers_worst_first()
            if (r.sqnr_db is not None or r.non_finite)
            and not r.node.startswith("input:")
            and (not quantized or r.node in quantized)
        ]
        return [n for n in dict.fromkeys(nodes) if n and n not in already][:count]

    def sqnr_by_node(self) -> dict[str, float]:
        """Each node's worst output SQNR (for the graph overlay; -inf where the quantized
        model gave inf/NaN values: the lowest band)."""
        values: dict[str, float] = {}
        for r in self.layers:
            sqnr = float("-inf") if r.non_finite else r.sqnr_db
            if sqnr is not None:
                values[r.node] = min(values.get(r.node, float("inf")), sqnr)
        return values


@dataclass
class Precision:
    """How many tensors of a quantized model run at each precision."""

    activations: dict[str, int] = field(default_factory=dict)  # quantized activation tensors
    weights: dict[str, int] = field(default_factory=dict)  # stored weight tensors
    float_nodes: int = 0  # operators that compute in float (no quantized input)
    float_ops: dict[str, int] = field(default_factory=dict)  # ... by operator type
    conversions: int = 0  # 8 <-> 16-bit conversions between tensors of mixed precision

    def text(self) -> str:
        """``activations 310 uint8, 12 uint16; weights 58 int8; 40 nodes in float (Add 20, …)``"""

        def counts(c: dict[str, int]) -> str:
            return ", ".join(f"{n} {t}" for t, n in sorted(c.items(), key=lambda x: -x[1]))

        parts = [
            f"activations {counts(self.activations) or 'none quantized'}"
            + (f" ({self.conversions} conversion(s) between them)" if self.conversions else "")
        ]
        if self.weights:
            parts.append(f"weights {counts(self.weights)}")
        if self.float_nodes:
            top = sorted(self.float_ops.items(), key=lambda x: -x[1])[:4]
            parts.append(
                f"{self.float_nodes} node(s) compute in float ("
                + ", ".join(f"{op} {n}" for op, n in top)
                + (", …" if len(self.float_ops) > 4 else "")
                + ")"
            )
        return "; ".join(parts)


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
    precision: Precision | None = None  # integer modes: tensors per precision, float nodes
    calibration_samples: int = 0  # static modes: how many samples calibrated it
    # probability outputs whose calibrated range stops below the 0.5 they are decided at:
    # the calibration samples held no positive case (core/quant/decision_range)
    undecidable: list[str] = field(default_factory=list)
