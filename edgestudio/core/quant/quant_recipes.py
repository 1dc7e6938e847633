"""Quantization and analysis recipes: what a quantize or analyse job is asked to do, declared
once for the form, the command line and the worker (the rules onnxruntime imposes on them are
checked by ``quant_rules``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.job_api.command import (
    given_data,
    given_ranges,
    given_shapes,
    positional,
    spelled,
)
from edgestudio.core.job_api.options import declared_options, option
from edgestudio.core.job_api.recipe import Recipe, Tolerance, tolerance_field
from edgestudio.core.quant.task_names import TASKS

if TYPE_CHECKING:
    from edgestudio.core.quant.quant_results import Analysis, Quantization

# Where static quantization puts quantizers (core/quant/mixed_precision.py applies it; kept
# here as plain names so the recipe imports no onnx).
QUANT_TARGETS = ("cpu", "qnn-htp")  # who the quantized model is for (--target)
# where an analysis judges it: those, and OpenVINO's onnxruntime (in an environment of its own)
JUDGE_TARGETS = (*QUANT_TARGETS, "openvino")
PLACEMENTS = ("all", "compute", "compute-inputs")

QUANT_TYPES = ("int8", "uint8", "int16", "uint16", "int4", "uint4")
CALIB_METHODS = ("minmax", "entropy", "percentile", "distribution")


@dataclass(frozen=True)
class QuantMode:
    """One way to quantize: its name on the command line, its label in the form, whether it
    calibrates on data. Which options it uses is declared on the options themselves
    (``modes=`` in :class:`QuantRecipe`); its rules are in :func:`check_rules`, its onnxruntime
    call in :mod:`edgestudio.core.quant.quantize`."""

    name: str
    label: str
    calibrated: bool = False

    def uses(self, field_name: str) -> bool:
        """True when this mode uses the :class:`QuantRecipe` field ``field_name``."""
        declared = dict((f.name, opt) for f, opt in declared_options(QuantRecipe))
        return field_name not in declared or declared[field_name].used_in(self.name)


QUANT_MODES: dict[str, QuantMode] = {
    m.name: m
    for m in (
        QuantMode("dynamic", "Dynamic (int8 weights, uint8 activations at run time)"),
        QuantMode("qdq", "Static, QDQ format", calibrated=True),
        QuantMode("qoperator", "Static, QOperator format", calibrated=True),
        QuantMode("fp16", "float16 conversion"),
        QuantMode("int4", "4-bit weight-only (MatMulNBits)"),
    )
}
MODES = tuple(QUANT_MODES)
STATIC_MODES = tuple(m.name for m in QUANT_MODES.values() if m.calibrated)
INTEGER_MODES = ("dynamic", *STATIC_MODES)  # 8/16-bit integer quantization of ops


@dataclass(frozen=True)
class QuantRecipe(Recipe["Quantization"]):
    """One quantization run through onnxruntime.quantization.

    Every option is declared once, with its flag, help and the modes that use it; the CLI, the
    equivalent command and the form are derived from these declarations.
    """

    kind: ClassVar[str] = "quantize"
    model: str = positional(help="the float .onnx model (never modified)")
    mode: str = option(
        "qdq", "--mode", "how to quantize", choices=MODES, label="Mode:", always=True
    )
    activation_type: str = option(
        "uint8",
        "--activation-type",
        "activation type",
        choices=QUANT_TYPES,
        modes=STATIC_MODES,
        label="Activations:",
        group="types",
        always=True,
    )
    weight_type: str = option(
        "int8",
        "--weight-type",
        "weight type",
        choices=QUANT_TYPES,
        modes=INTEGER_MODES,
        label="Weights:",
        group="types",
        always=True,
    )
    per_channel: bool = option(
        False,
        "--per-channel",
        "one scale per output channel of each weight",
        modes=INTEGER_MODES,
        label="Per-channel weights",
        group="types",
    )
    reduce_range: bool = option(
        False,
        "--reduce-range",
        "7-bit weights, avoiding saturation on CPUs without VNNI",
        modes=INTEGER_MODES,
        label="Reduce range (7-bit weights)",
        group="types",
    )
    activation_symmetric: bool = option(
        False,
        "--activation-symmetric",
        "symmetric activation ranges",
        modes=STATIC_MODES,
        label="Symmetric activations",
        group="types",
        ort="ActivationSymmetric",
    )
    weight_symmetric: bool = option(
        True,
        "--weight-asymmetric",
        "asymmetric weight ranges (default: symmetric)",
        modes=INTEGER_MODES,
        label="Symmetric weights",
        group="types",
        ort="WeightSymmetric",
    )
    op_types: tuple[str, ...] = option(
        (),
        "--op-type",
        "quantize only these op types",
        modes=INTEGER_MODES,
        metavar="OP",
        label="Op types:",
        group="types",
        placeholder="all supported (e.g. Conv, MatMul)",
    )
    placement: str = option(
        "all",
        "--placement",
        "where quantizers go: 'all' on every "
        "operator onnxruntime quantizes; 'compute' on Conv, MatMul, Gemm "
        "and other compute operators only (elementwise operators run in "
        "float); 'compute-inputs' on their inputs only, outputs float "
        "(NNCF's placement)",
        choices=PLACEMENTS,
        modes=STATIC_MODES,
        label="Quantizers on:",
        group="types",
    )
    target: str = option(
        "cpu",
        "--target",
        "the accelerator the result is for: 'qnn-htp' quantizes with onnxruntime's QNN config "
        "(the Hexagon NPU's rules: which operators, fixed scales for Sigmoid/Tanh, 16-bit "
        "Q/DQ operators where the opset needs them); 'cpu' with onnxruntime's defaults",
        choices=QUANT_TARGETS,
        modes=("qdq",),
        label="Quantize for:",
        group="types",
    )
    smooth_quant: float = option(
        0.0,
        "--smoothquant",
        "SmoothQuant: move the activation "
        "outliers of MatMul inputs into their weights, with this "
        "migration strength α (0.5–0.95; 0: off); needs --placement "
        "compute or compute-inputs",
        modes=("qdq",),
        metavar="ALPHA",
        label="SmoothQuant α:",
        group="types",
        minimum=0.0,
        maximum=1.0,
    )
    adaptive_rounding: bool = option(
        False,
        "--adaptive-rounding",
        "round MatMul/Gemm/Conv "
        "weights to lower their layers' output error on the "
        "calibration data (GPTQ) instead of to nearest; slower",
        modes=("qdq",),
        label="Adaptive rounding (GPTQ)",
        group="types",
    )
    calib_method: str = option(
        "minmax",
        "--calib-method",
        "how calibration picks ranges",
        choices=CALIB_METHODS,
        modes=STATIC_MODES,
        label="Method:",
        group="calibration",
        always=True,
    )
    percentile: float = option(
        99.999,
        "--percentile",
        "percentile of the 'percentile' calibration method",
        modes=STATIC_MODES,
        requires=("calib_method", "percentile"),
        label="Percentile:",
        group="calibration",
        minimum=0.0,
        maximum=100.0,
    )
    exclude: tuple[str, ...] = option(
        (),
        "--exclude",
        "leave this node in float",
        metavar="NODE",
        label="Exclude nodes:",
        placeholder="node names to keep in float (pick them in the graph)",
    )
    int16: tuple[str, ...] = option(
        (),
        "--int16",
        "run this node with 16-bit activations, "
        "the rest 8-bit (onnxruntime converts at the boundaries)",
        modes=("qdq",),
        metavar="NODE",
        label="Keep in 16-bit:",
        placeholder="node names whose activations stay 16-bit (pick them in the graph)",
    )
    preprocess: bool = option(
        True,
        "--no-preprocess",
        "skip onnxruntime's quant_pre_process (shape inference and graph optimisation first)",
        modes=INTEGER_MODES,
        label="Run ORT's pre-processing (quant_pre_process)",
    )
    calib: DataSource | None = spelled(None, "--calib", show=DataSource.to_cli, modes=STATIC_MODES)
    keep_io_types: bool = option(
        True,
        "--fp16-io",
        "make the inputs and outputs float16 too (default: kept float32)",
        modes=("fp16",),
        label="Keep float32 inputs and outputs",
        group="float16",
    )
    op_block_list: tuple[str, ...] = option(
        (),
        "--block-op",
        "keep this op type in float32",
        modes=("fp16",),
        metavar="OP",
        label="Block ops:",
        group="float16",
        placeholder="op types to keep in float32",
    )
    block_size: int = option(
        128,
        "--block-size",
        "weights per 4-bit block (a power of two ≥ 16)",
        modes=("int4",),
        label="Block size:",
        group="4-bit",
        minimum=16,
        maximum=4096,
    )
    int4_symmetric: bool = option(
        True,
        "--int4-asymmetric",
        "asymmetric 4-bit blocks (default: symmetric)",
        modes=("int4",),
        label="Symmetric",
        group="4-bit",
    )
    accuracy_level: int = option(
        0,
        "--accuracy-level",
        "the lowest compute type MatMulNBits "
        "may use: 0 the runtime's choice, 1 float32, 2 float16, "
        "3 bfloat16, 4 int8",
        modes=("int4",),
        label="Accuracy level:",
        group="4-bit",
        minimum=0,
        maximum=4,
    )
    keep_lm_head: bool = option(
        False,
        "--keep-lm-head",
        "leave the language-model head (the widest MatMul producing an output) in float",
        modes=("int4",),
        label="Keep the LM head in float",
        group="4-bit",
    )
    int4_embeddings: bool = option(
        False,
        "--int4-embeddings",
        "also quantize embedding tables (a Gather of a constant) to 4-bit GatherBlockQuantized",
        modes=("int4",),
        label="Embedding tables too (GatherBlockQuantized)",
        group="4-bit",
    )
    shapes: tuple[str, ...] = given_shapes()  # for synthetic data and the result's run
    ranges: tuple[str, ...] = given_ranges()
    # Prove the result in a child process (set by the runner when a worker crashed: a result
    # that crashes onnxruntime then becomes a clean refusal instead of a dead worker).
    isolate_proof: bool = False
    # onnxruntime extra options a retry added to get past a known quantizer failure
    # (core/quant/quantizer_fixes.py); not a user option.
    ort_extra: tuple[tuple[str, int], ...] = ()

    def title(self) -> str:
        """Mode and types in a few words."""
        if self.mode in ("fp16", "int4"):
            label = self.mode
        elif self.mode == "dynamic":
            label = f"dynamic {self.weight_type}"
        else:
            label = f"{self.mode} {self.activation_type}/{self.weight_type}"
        extra = ", per-channel" if self.per_channel and self.mode not in ("fp16", "int4") else ""
        extra += f", {len(self.exclude)} excluded" if self.exclude else ""
        if self.int16 and self.mode == "qdq":
            extra += f", {len(self.int16)} in 16-bit"
        if self.placement != "all" and self.mode in STATIC_MODES:
            extra += f", quantizers on {self.placement}"
        if self.smooth_quant and self.mode == "qdq":
            extra += f", SmoothQuant α={self.smooth_quant:g}"
        if self.adaptive_rounding and self.mode == "qdq":
            extra += ", adaptive rounding"
        return f"Quantize: {label}{extra}"

    def options_mode(self) -> str:
        """The mode: the command says the options it uses."""
        return self.mode

    def input_paths(self) -> list[str]:
        """The float model and any calibration file."""
        return [self.model] + ([self.calib.path] if self.calib and self.calib.path else [])

    @classmethod
    def result_type(cls) -> type[Quantization]:
        """What the quantization wrote and did."""
        from edgestudio.core.quant.quant_results import Quantization

        return Quantization


@dataclass(frozen=True)
class AnalyzeRecipe(Recipe["Analysis"]):
    """Per-layer and whole-model error of a quantized model against its float original."""

    kind: ClassVar[str] = "analyze"
    float_model: str = positional(help="the float original")
    quant_model: str = positional(help="its quantized version")
    data: DataSource = given_data(default_factory=DataSource, always=True)
    tolerance: Tolerance = tolerance_field(1e-2, 1e-2)
    metric: str = option(
        "auto",
        "--metric",
        "the task metric the verdict uses (auto: "
        "detected from the outputs and the graph, with the reason said)",
        choices=TASKS,
        label="Task metric:",
    )
    alphabet: str = option(
        "",
        "--alphabet",
        "CTC recognisers: the dictionary that spells the "
        "classes (one symbol per line, or a JSON list); by default the one "
        "in the model's metadata or beside it (*keys*.txt, *dict*.txt)",
        metavar="FILE",
        label="CTC dictionary:",
        placeholder="from the model, or a file beside it",
    )
    target: str = option(
        "cpu",
        "--target",
        "where the quantized model's whole-model figures are measured: 'qnn-htp' on the "
        "Hexagon NPU as onnxruntime-qnn emulates it on this CPU (wholly on the NPU, or no "
        "figure); 'openvino' by OpenVINO's onnxruntime in the device of that name (the "
        "environment `make openvino-env` makes), the model whole on it",
        choices=JUDGE_TARGETS,
        label="Judge on:",
    )
    shapes: tuple[str, ...] = given_shapes()  # input specification for synthetic data
    ranges: tuple[str, ...] = given_ranges()

    def title(self) -> str:
        """Name the compared file."""
        return f"Analyze: {self.quant_model.rsplit('/', 1)[-1]}"

    @classmethod
    def after(
        cls,
        quantization: QuantRecipe,
        quantized: str,
        data: DataSource,
        metric: str = "auto",
        target: str = "",
    ) -> AnalyzeRecipe:
        """The analysis that follows ``quantization`` (the one quantize → analyse step of the
        window, the auto-tuner, locally and on Ray, and the sensitivity ranking): its
        ``quantized`` result against the float model, on ``data``, fed as the quantization
        was where the data is synthetic, and on ``target`` ("": the target it was quantized
        for)."""
        return cls(
            float_model=quantization.model,
            quant_model=quantized,
            data=data,
            metric=metric,
            shapes=quantization.shapes,
            ranges=quantization.ranges,
            target=target or quantization.target,  # quantized for the NPU: judged there
        )

    def input_paths(self) -> list[str]:
        """Both models and the data."""
        return [self.float_model, self.quant_model, self.data.path]

    @classmethod
    def result_type(cls) -> type[Analysis]:
        """The per-layer and whole-model figures."""
        from edgestudio.core.quant.quant_results import Analysis

        return Analysis
