"""The rules onnxruntime imposes on a quantization recipe, checked before a job starts, so the
user reads "activation int8 with weight uint8 is not supported" in the form instead of a stack
trace from deep inside ORT (ARCHITECTURE.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from edgestudio.core.quant.quant_recipes import (
    CALIB_METHODS,
    MODES,
    QUANT_MODES,
    QUANT_TYPES,
    STATIC_MODES,
    QuantRecipe,
)


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


def check_rules(
    recipe: QuantRecipe, model_opset: int | None = None, node_names: set[str] | None = None
) -> RuleCheck:
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
    if recipe.target != "cpu" and recipe.mode != "qdq":
        e(f"--target {recipe.target} quantizes in the QDQ format (--mode qdq), not {recipe.mode}.")
    if recipe.calib is not None and not QUANT_MODES[recipe.mode].calibrated:
        w(
            f"The calibration data is not used: {recipe.mode} quantization does not calibrate. "
            "To judge the result on that data, analyse it (edgestudio analyze FLOAT QUANT "
            "--data …, or the Quantize form's 'Analyze the result afterwards on')."
        )
    if recipe.mode == "dynamic":
        n(
            "Dynamic quantization stores int8/uint8 weights and quantizes activations to uint8 at "
            "run time: no calibration data needed."
        )
        if recipe.weight_type not in ("int8", "uint8"):
            e(f"Dynamic quantization supports int8 or uint8 weights, not {recipe.weight_type}.")
        if recipe.activation_type != "uint8":
            e(
                "Dynamic quantization always uses uint8 activations (onnxruntime's "
                "DynamicQuantizeLinear); set the activation type to uint8."
            )
    if recipe.mode in STATIC_MODES:
        n(
            "Static quantization runs the model on calibration data to fix activation ranges; the "
            "data must look like real inputs."
        )
        if recipe.calib is None:
            e("Static quantization needs calibration data (.npz, a folder, images, or synthetic).")
        elif recipe.calib.kind == "synthetic":
            w(
                "Synthetic calibration data gives meaningless activation ranges: use it only to "
                "check that the pipeline runs, never to judge accuracy."
            )
        if (
            recipe.activation_type == "uint8"
            and recipe.weight_type == "int8"
            and not recipe.reduce_range
        ):
            n(
                "8-bit products can saturate in onnxruntime's x86 integer kernels on CPUs without "
                "VNNI (int8 activations are run as uint8 there too); reduce-range avoids it."
            )
        if recipe.activation_type == "int8" and recipe.weight_type == "uint8":
            e(
                "onnxruntime rejects int8 activations with uint8 weights; use uint8/uint8, "
                "uint8/int8 or int8/int8."
            )
        wide = {recipe.activation_type, recipe.weight_type} & {"int16", "uint16", "int4", "uint4"}
        if wide and recipe.mode == "qoperator":
            e(
                f"{'/'.join(sorted(wide))} types need the QDQ format (QOperator kernels exist for "
                "8-bit only)."
            )
        if wide and model_opset is not None and model_opset < 21:
            w(
                f"{'/'.join(sorted(wide))} types need opset 21; onnxruntime will raise the model "
                f"from opset {model_opset} to 21."
            )
        if recipe.activation_type in ("int4", "uint4"):
            e("4-bit activations are not supported; use 4-bit types for weights only.")
        if recipe.calib_method == "percentile" and not 0 < recipe.percentile <= 100:
            e(f"The percentile must be in (0, 100], got {recipe.percentile}.")
        if recipe.calib_method not in CALIB_METHODS:
            e(f"Unknown calibration method '{recipe.calib_method}'.")
        if recipe.placement == "compute-inputs" and recipe.mode == "qoperator":
            e(
                "Quantizers on compute inputs only need the QDQ format (QOperator kernels "
                "quantize their outputs too); use --placement compute."
            )
        if recipe.smooth_quant and recipe.mode == "qdq" and recipe.placement == "all":
            e(
                "SmoothQuant needs the quantizers after the smoothing: with every operator "
                "quantized, each MatMul input is quantized, outliers and all, before it is "
                "smoothed. Use --placement compute-inputs (or compute)."
            )
        if not 0 <= recipe.smooth_quant < 1:
            e(f"SmoothQuant's α is a migration strength in [0, 1), got {recipe.smooth_quant}.")
        if recipe.target == "qnn-htp":
            _qnn_rules(recipe, e)
        if recipe.int16 and recipe.activation_type in ("int16", "uint16"):
            w("Every activation is already 16-bit: the nodes kept in 16-bit change nothing.")
        both = sorted(set(recipe.int16) & set(recipe.exclude))
        if both:
            e(f"{', '.join(repr(b) for b in both)} cannot be both kept in float and in 16-bit.")
        if recipe.calib_method in ("entropy", "distribution"):
            n(
                "Entropy and Distribution calibration keep histograms of every activation: slower "
                "and heavier than MinMax."
            )
    if recipe.mode == "int4":
        n(
            "4-bit weight-only quantization rewrites MatMul weights as MatMulNBits blocks; "
            "activations stay float."
        )
        if recipe.block_size < 16 or recipe.block_size & (recipe.block_size - 1):
            e(f"The block size must be a power of two ≥ 16, got {recipe.block_size}.")
    if recipe.mode == "fp16":
        n(
            "fp16 conversion halves weights and runs in half precision where the provider "
            "supports it; keeping float32 inputs/outputs avoids changing the interface."
        )
    if node_names is not None:
        # An error, not a warning: a misspelt name would quantize the node after all, and the
        # comparison the user makes next (did excluding it help?) would be about nothing.
        for name in (x for x in recipe.exclude if x not in node_names):
            e(f"No node named '{name}' to exclude in this model{_did_you_mean(name, node_names)}.")
        for name in (x for x in recipe.int16 if x not in node_names):
            e(
                f"No node named '{name}' to keep in 16-bit in this model"
                f"{_did_you_mean(name, node_names)}."
            )
    return check


def _qnn_rules(recipe: QuantRecipe, error: Callable[[str], None]) -> None:
    """What a QNN-HTP recipe cannot combine: its config chooses the operators and writes its
    own 16-bit overrides, and the NPU computes on unsigned activations."""
    if recipe.placement != "all":
        error(
            "--target qnn-htp quantizes the operators onnxruntime's QNN config chooses; "
            "--placement must stay 'all'."
        )
    if recipe.int16:
        error(
            "--target qnn-htp writes its own 16-bit overrides; for 16-bit activations use "
            "--activation-type uint16 instead of --int16."
        )
    if recipe.activation_type not in ("uint8", "uint16"):
        error(
            f"The Hexagon NPU quantizes activations to uint8 or uint16, not "
            f"{recipe.activation_type}."
        )
    if recipe.weight_type not in ("uint8", "int8", "uint16", "int16", "int4", "uint4"):
        error(f"The Hexagon NPU does not take {recipe.weight_type} weights.")


def _did_you_mean(name: str, node_names: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(node_names), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
