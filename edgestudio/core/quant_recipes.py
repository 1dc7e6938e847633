"""Quantization and analysis recipes, and the rules onnxruntime imposes on them.

The rules are checked here, before a job starts, so the user reads "activation int8 with weight
uint8 is not supported" in the form instead of a stack trace from deep inside ORT (DESIGN.md §2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgestudio.core.data_source import DataSource
from edgestudio.core.recipes import Recipe, Tolerance, input_args, register_recipe

MODES = ("dynamic", "qdq", "qoperator", "fp16", "int4")
STATIC_MODES = ("qdq", "qoperator")
QUANT_TYPES = ("int8", "uint8", "int16", "uint16", "int4", "uint4")
CALIB_METHODS = ("minmax", "entropy", "percentile", "distribution")




@register_recipe
@dataclass(frozen=True)
class QuantRecipe(Recipe):
    """One quantization run through onnxruntime.quantization."""

    kind: ClassVar[str] = "quantize"
    model: str = ""
    mode: str = "qdq"
    activation_type: str = "uint8"
    weight_type: str = "int8"
    per_channel: bool = False
    reduce_range: bool = False
    activation_symmetric: bool = False
    weight_symmetric: bool = True
    calib_method: str = "minmax"
    percentile: float = 99.999
    op_types: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    preprocess: bool = True
    calib: DataSource | None = None
    keep_io_types: bool = True  # fp16
    op_block_list: tuple[str, ...] = ()  # fp16
    block_size: int = 128  # int4
    int4_symmetric: bool = True  # int4
    shapes: tuple[str, ...] = ()  # input specification for synthetic data and the result's run
    ranges: tuple[str, ...] = ()

    def title(self) -> str:
        """Mode and types in a few words."""
        if self.mode in ("fp16", "int4"):
            label = self.mode
        elif self.mode == "dynamic":
            label = f"dynamic {self.weight_type}"
        else:
            label = f"{self.mode} {self.activation_type}/{self.weight_type}"
        extra = f", {len(self.exclude)} excluded" if self.exclude else ""
        return f"Quantize: {label}{extra}"

    def input_paths(self) -> list[str]:
        """The float model and any calibration file."""
        return [self.model] + ([self.calib.path] if self.calib and self.calib.path else [])

    def to_command(self) -> list[str]:
        """``edgestudio quantize MODEL -o OUT --mode M …``."""
        cmd = ["edgestudio", "quantize", self.model, "-o", str(self.output), "--mode", self.mode]
        if self.mode in STATIC_MODES:
            cmd += ["--activation-type", self.activation_type]
        if self.mode in ("dynamic", *STATIC_MODES):
            cmd += ["--weight-type", self.weight_type]
            if self.per_channel:
                cmd.append("--per-channel")
            if self.reduce_range:
                cmd.append("--reduce-range")
            for op in self.op_types:
                cmd += ["--op-type", op]
        if self.mode in STATIC_MODES:
            if self.activation_symmetric:
                cmd.append("--activation-symmetric")
            if not self.weight_symmetric:
                cmd.append("--weight-asymmetric")
            cmd += ["--calib-method", self.calib_method]
            if self.calib_method == "percentile":
                cmd += ["--percentile", repr(self.percentile)]
            if self.calib is not None:
                cmd += ["--calib", *self.calib.to_cli()]
        if self.mode == "fp16":
            if not self.keep_io_types:
                cmd.append("--fp16-io")
            for op in self.op_block_list:
                cmd += ["--block-op", op]
        if self.mode == "int4":
            cmd += ["--block-size", str(self.block_size)]
            if not self.int4_symmetric:
                cmd.append("--int4-asymmetric")
        for node in self.exclude:
            cmd += ["--exclude", node]
        cmd += input_args(self.shapes, self.ranges, None)
        if not self.preprocess:
            cmd.append("--no-preprocess")
        if self.overwrite:
            cmd.append("--overwrite")
        return cmd


@register_recipe
@dataclass(frozen=True)
class AnalyzeRecipe(Recipe):
    """Per-layer and whole-model error of a quantized model against its float original."""

    kind: ClassVar[str] = "analyze"
    float_model: str = ""
    quant_model: str = ""
    data: DataSource = field(default_factory=DataSource)
    tolerance: Tolerance = field(default_factory=lambda: Tolerance(1e-2, 1e-2))

    def title(self) -> str:
        """Name the compared file."""
        return f"Analyze: {self.quant_model.rsplit('/', 1)[-1]}"

    def input_paths(self) -> list[str]:
        """Both models and the data."""
        return [self.float_model, self.quant_model, self.data.path]

    def to_command(self) -> list[str]:
        """``edgestudio analyze FLOAT QUANT --data PATH``."""
        cmd = ["edgestudio", "analyze", self.float_model, self.quant_model,
               "--data", *self.data.to_cli()]
        if self.tolerance != Tolerance(1e-2, 1e-2):
            cmd += ["--atol", repr(self.tolerance.atol), "--rtol", repr(self.tolerance.rtol)]
        return cmd


@dataclass
class RuleCheck:
    """Result of checking a recipe against ORT's rules."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # explanations shown in the form

    @property
    def ok(self) -> bool:
        """True when no rule is broken."""
        return not self.errors


def check_rules(recipe: QuantRecipe, model_opset: int | None = None,
                node_names: set[str] | None = None) -> RuleCheck:
    """Check ``recipe`` against onnxruntime's quantization rules (no ORT import)."""
    check = RuleCheck()
    e, w, n = check.errors.append, check.warnings.append, check.notes.append
    if recipe.mode not in MODES:
        e(f"Unknown mode '{recipe.mode}' (choose one of {', '.join(MODES)}).")
        return check
    for label, t in (("activation", recipe.activation_type), ("weight", recipe.weight_type)):
        if t not in QUANT_TYPES:
            e(f"Unknown {label} type '{t}' (choose one of {', '.join(QUANT_TYPES)}).")
    if check.errors:
        return check
    if recipe.mode == "dynamic":
        n("Dynamic quantization stores int8/uint8 weights and quantizes activations to uint8 at "
          "run time: no calibration data needed.")
        if recipe.weight_type not in ("int8", "uint8"):
            e(f"Dynamic quantization supports int8 or uint8 weights, not {recipe.weight_type}.")
        if recipe.activation_type != "uint8":
            e("Dynamic quantization always uses uint8 activations (onnxruntime's "
              "DynamicQuantizeLinear); set the activation type to uint8.")
    if recipe.mode in STATIC_MODES:
        n("Static quantization runs the model on calibration data to fix activation ranges; the "
          "data must look like real inputs.")
        if recipe.calib is None:
            e("Static quantization needs calibration data (.npz, a folder, images, or synthetic).")
        elif recipe.calib.kind == "synthetic":
            w("Synthetic calibration data gives meaningless activation ranges: use it only to "
              "check that the pipeline runs, never to judge accuracy.")
        if recipe.activation_type == "uint8" and recipe.weight_type == "int8" \
                and not recipe.reduce_range:
            n("8-bit products can saturate in onnxruntime's x86 integer kernels on CPUs without "
              "VNNI (int8 activations are run as uint8 there too); reduce-range avoids it.")
        if recipe.activation_type == "int8" and recipe.weight_type == "uint8":
            e("onnxruntime rejects int8 activations with uint8 weights; use uint8/uint8, "
              "uint8/int8 or int8/int8.")
        wide = {recipe.activation_type, recipe.weight_type} & {"int16", "uint16", "int4", "uint4"}
        if wide and recipe.mode == "qoperator":
            e(f"{'/'.join(sorted(wide))} types need the QDQ format (QOperator kernels exist for "
              "8-bit only).")
        if wide and model_opset is not None and model_opset < 21:
            w(f"{'/'.join(sorted(wide))} types need opset 21; onnxruntime will raise the model "
              f"from opset {model_opset} to 21.")
        if recipe.activation_type in ("int4", "uint4"):
            e("4-bit activations are not supported; use 4-bit types for weights only.")
        if recipe.calib_method == "percentile" and not 0 < recipe.percentile <= 100:
            e(f"The percentile must be in (0, 100], got {recipe.percentile}.")
        if recipe.calib_method not in CALIB_METHODS:
            e(f"Unknown calibration method '{recipe.calib_method}'.")
        if recipe.calib_method in ("entropy", "distribution"):
            n("Entropy and Distribution calibration keep histograms of every activation: slower "
              "and heavier than MinMax.")
    if recipe.mode == "int4":
        n("4-bit weight-only quantization rewrites MatMul weights as MatMulNBits blocks; "
          "activations stay float.")
        if recipe.block_size < 16 or recipe.block_size & (recipe.block_size - 1):
            e(f"The block size must be a power of two ≥ 16, got {recipe.block_size}.")
    if recipe.mode == "fp16":
        n("fp16 conversion halves weights and runs in half precision where the provider "
          "supports it; keeping float32 inputs/outputs avoids changing the interface.")
    if node_names is not None:
        missing = [x for x in recipe.exclude if x not in node_names]
        if missing:
            w(f"Excluded nodes not in the model: {', '.join(missing)}.")
    return check
