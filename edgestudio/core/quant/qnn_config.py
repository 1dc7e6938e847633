"""Quantizing for the Hexagon NPU (``--target qnn-htp``): onnxruntime's QNN config over our
options, what it writes that the HTP still refuses put right, and onnxruntime-qnn's own
pre-processing (runs in a job worker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx

from edgestudio.core.progress import Reporter
from edgestudio.core.quant.quant_recipes import QuantRecipe


def qnn_options(recipe: QuantRecipe, src: Path, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` as onnxruntime's QNN config says for the Hexagon NPU (``--target qnn-htp``):
    the operators it quantizes, its overrides (fixed scales for Sigmoid/Tanh, conversions where
    a type changes) and its extra options, over ours; the calibration and nodes kept in float
    stay the recipe's."""
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    config = get_qnn_qdq_config(
        str(src),
        None,  # our reader is given to quantize_static
        calibrate_method=options["calibrate_method"],
        activation_type=options["activation_type"],
        weight_type=options["weight_type"],
        per_channel=recipe.per_channel,
        activation_symmetric=recipe.activation_symmetric,
        weight_symmetric=recipe.weight_symmetric,
        op_types_to_quantize=list(recipe.op_types) or None,
        nodes_to_exclude=list(recipe.exclude) or None,
    )
    extra = {**options["extra_options"], **config.extra_options}
    extra["TensorQuantOverrides"] = layernorm_scales_signed_as_input(
        src, options["activation_type"], extra.get("TensorQuantOverrides") or {}
    )
    # a retry past a known quantizer failure keeps what it added
    extra.update(recipe.ort_extra)
    return {**options, "op_types_to_quantize": config.op_types_to_quantize, "extra_options": extra}


def layernorm_scales_signed_as_input(
    src: Path, activation_type: Any, overrides: dict[str, list[dict[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    """``overrides`` with every LayerNormalization's scale (gamma) quantized in the 8-bit type
    of its input: the HTP has no LayerNorm with a uint8 input and an int8 scale and refuses
    it ("Failed to add node", validation error 3110), which onnxruntime's QNN config writes
    for 8-bit activations with int8 weights. Scales already overridden are left as they are."""
    from onnxruntime.quantization import QuantType

    if activation_type not in (QuantType.QUInt8, QuantType.QInt8):
        return overrides  # 16-bit inputs take an 8-bit scale of either sign
    model = onnx.load(str(src), load_external_data=False)
    weights = {i.name for i in model.graph.initializer}
    merged = dict(overrides)
    for node in model.graph.node:
        if node.op_type != "LayerNormalization" or len(node.input) < 2:
            continue
        scale = node.input[1]
        if scale in weights and scale not in merged:
            merged[scale] = [{"quant_type": activation_type}]
    return merged


def qnn_fused(src: Path, folder: Path, reporter: Reporter) -> Path:
    """``src`` with onnxruntime-qnn's own pre-processing (``qnn_preprocess_model``): an Erf
    sequence fused into one Gelu, a ReduceL2 one into LpNormalization, a ReduceMean one into
    LayerNormalization — operators the NPU has where it has no Erf. The same function, so
    the result is proven against the original like every quantization; ``src`` when there is
    nothing to fuse or the fusion fails (said, never fatal)."""
    from onnxruntime.quantization.execution_providers.qnn import qnn_preprocess_model

    fused = folder / f"{src.stem}_qnn_fused.onnx"
    model = onnx.load(str(src))
    # onnxruntime 1.32 merges the metadata as a dict and fails (TypeError) on any model that
    # has some — every model its own pre-processing wrote: handed over without, put back after.
    kept = {p.key: p.value for p in model.metadata_props}
    del model.metadata_props[:]
    try:
        changed = qnn_preprocess_model(model, str(fused), fuse_layernorm=True)
        if changed and kept:
            result = onnx.load(str(fused))
            onnx.helper.set_model_props(
                result, {**kept, **{p.key: p.value for p in result.metadata_props}}
            )
            onnx.save(result, str(fused))
    except Exception as exc:  # never fatal: the quantization goes on without the fusions
        reporter.warn(
            f"onnxruntime-qnn's pre-processing failed ({type(exc).__name__}: {exc}); "
            "quantizing without its fusions (Erf-based GELU may stay on the CPU)."
        )
        return src
    if not changed:
        return src
    reporter.log("onnxruntime-qnn's pre-processing fused node sequences for the NPU")
    return fused
