"""The quantization job: every mode through onnxruntime.quantization, with our checks around it.

One place (:func:`ort_options`) translates our typed recipe into ORT's enums and
``extra_options`` strings. Calibration data is validated before anything is written, and the
result's quantization parameters are inspected afterwards for the failures ORT stays silent about
(collapsed ranges that fall back to scale 1.0, infinite or NaN scales).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.calib_data import ReplayReader, open_samples
from edgestudio.core.conversion_plan import model_opset
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.external_data import check_external_data
from edgestudio.core.model_io import load_model
from edgestudio.core.ops.convert import load_full_model, save_model
from edgestudio.core.ops.validate import ort_session
from edgestudio.core.opsets import iter_nodes
from edgestudio.core.progress import Reporter
from edgestudio.core.quant_recipes import STATIC_MODES, QuantRecipe, check_rules
from edgestudio.core.recipes import Recipe
from edgestudio.core.reports import JobReport

QUANTIZED_OPS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
    "QLinearMatMul", "ConvInteger", "MatMulInteger", "MatMulNBits", "QGemm", "QLinearAdd",
    "QLinearMul", "DynamicQuantizeMatMul", "QAttention",
})


class QuantizeError(EdgeStudioError):
    """The recipe breaks a rule, the model cannot be quantized, or ORT's quantizer failed."""


def quantized_ops_in(model: onnx.ModelProto) -> list[str]:
    """Op types that show the model is already quantized."""
    return sorted({n.op_type for n in iter_nodes(model.graph) if n.op_type in QUANTIZED_OPS})


def ort_options(recipe: QuantRecipe) -> dict[str, Any]:
    """ORT's keyword arguments for ``recipe`` (the only place that speaks ORT's dialect)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType

    types = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8, "int16": QuantType.QInt16,
             "uint16": QuantType.QUInt16, "int4": QuantType.QInt4, "uint4": QuantType.QUInt4}
    extra: dict[str, Any] = {"WeightSymmetric": recipe.weight_symmetric}
    options: dict[str, Any] = {
        "per_channel": recipe.per_channel,
        "reduce_range": recipe.reduce_range,
        "weight_type": types[recipe.weight_type],
        "op_types_to_quantize": list(recipe.op_types) or None,
        "nodes_to_exclude": list(recipe.exclude) or None,
        "extra_options": extra,
    }
    if recipe.mode in STATIC_MODES:
        extra["ActivationSymmetric"] = recipe.activation_symmetric
        if recipe.calib_method == "percentile":
            extra["CalibPercentile"] = recipe.percentile
        options["activation_type"] = types[recipe.activation_type]
        options["quant_format"] = (QuantFormat.QDQ if recipe.mode == "qdq"
                                   else QuantFormat.QOperator)
        options["calibrate_method"] = {
            "minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
            "percentile": CalibrationMethod.Percentile,
            "distribution": CalibrationMethod.Distribution,
        }[recipe.calib_method]
    return options


def inspect_quant_params(model: onnx.ModelProto) -> list[str]:
    """Warnings about activation quantization parameters that ORT produced without complaint."""
    inits = {t.name: t for t in model.graph.initializer}
    warnings = []
    seen = set()
    for node in model.graph.node:
        if node.op_type != "QuantizeLinear" or len(node.input) < 2:
            continue
        tensor, scale_name = node.input[0], node.input[1]
        if tensor in inits or scale_name not in inits or tensor in seen:
            continue  # weights are checked by the analysis; here only activations
        seen.add(tensor)
        scale = numpy_helper.to_array(inits[scale_name]).astype(np.float64)
        if not np.isfinite(scale).all():
            warnings.append(f"'{tensor}': infinite or NaN scale (inf/NaN in the calibration "
                            "data?): its outputs will be NaN.")
        elif np.all(scale == 1.0):
            warnings.append(f"'{tensor}': scale is exactly 1.0, the fallback for a collapsed "
                            "range (constant or all-zero during calibration): ~100 % error.")
        elif np.any(scale == 0):
            warnings.append(f"'{tensor}': zero scale (constant value during calibration).")
    return warnings


def run_quantize(recipe: Recipe, reporter: Reporter, staging: Path) -> JobReport:
    """Quantize ``recipe.model`` into ``staging``; report warnings and sizes."""
    assert isinstance(recipe, QuantRecipe)
    reporter.stage("Reading the model", 0.0)
    source = Path(recipe.model)
    external = bool(check_external_data(load_model(source), source.parent))
    model = load_full_model(source)
    names = {n.name for n in model.graph.node}
    rules = check_rules(recipe, model_opset(model), names)
    if not rules.ok:
        raise QuantizeError(" ".join(rules.errors))
    already = quantized_ops_in(model)
    if already:
        raise QuantizeError(
            f"The model is already quantized (it contains {', '.join(already)}); quantize the "
            "float original instead.")
    report = JobReport(kind=recipe.kind)
    calibration_warnings: list[str] = list(rules.warnings)

    samples = None
    if recipe.mode in STATIC_MODES:
        assert recipe.calib is not None
        reporter.stage(f"Checking calibration data ({recipe.calib.describe()})", 0.05)
        samples = open_samples(recipe.calib, model)
        calibration_warnings += samples.validate()  # raises DataError before anything is written
    for w in calibration_warnings:
        reporter.warn(w)

    name = Path(recipe.output or "quantized.onnx").name
    with tempfile.TemporaryDirectory(dir=staging) as scratch:
        work = Path(scratch)
        # ORT's quantizers read a path. The source itself will do when its weights are inline
        # (it is only read); a copy is made when weights live in external files.
        if external or model.graph.sparse_initializer:
            float_path = work / "float.onnx"
            save_model(model, work, float_path.name)
        else:
            float_path = source
        quant_input = float_path
        if recipe.preprocess and recipe.mode in ("dynamic", *STATIC_MODES):
            reporter.stage("Pre-processing (quant_pre_process)", 0.1)
            quant_input = _preprocess(float_path, work / "pre.onnx", reporter, report)
        out = work / "quant.onnx"
        _quantize(recipe, quant_input, out, samples, reporter)
        reporter.stage("Checking the result", 0.85)
        result = onnx.load(str(out))
    quant_warnings = inspect_quant_params(result)
    if recipe.mode == "int4" and "MatMulNBits" not in quantized_ops_in(result):
        quant_warnings.append("No MatMul with a constant weight was found: 4-bit weight-only "
                              "quantization changed nothing (Gemm and Conv are not covered).")
    for w in quant_warnings:
        reporter.warn(w)
    calibration_warnings += quant_warnings
    report.files = save_model(result, staging, name)
    try:
        ort_session(staging / name)
        loads = "loads"
    except Exception as exc:  # keep the file, but say clearly that ORT cannot run it
        loads = f"onnxruntime cannot load it: {exc}"
        reporter.warn(loads)
        calibration_warnings.append(loads)
    report.warnings = calibration_warnings
    report.details = {
        "recipe": recipe.to_dict(),
        "command": recipe.command_line(),
        "calibration_warnings": calibration_warnings,
        "float_bytes": source.stat().st_size,
        "quant_bytes": (staging / name).stat().st_size,
        "onnxruntime": loads,
        "quantized_ops": quantized_ops_in(result),
    }
    reporter.stage("Done", 1.0)
    return report


def _preprocess(src: Path, dst: Path, reporter: Reporter, report: JobReport) -> Path:
    from onnxruntime.quantization.shape_inference import quant_pre_process

    try:
        # skip_symbolic_shape: the symbolic shape inference fails on many real exports and is
        # not needed for quantization (DESIGN.md §2); this also turns Constant weights into
        # initializers, which ORT's quantizers require.
        quant_pre_process(str(src), str(dst), skip_symbolic_shape=True)
    except Exception as exc:
        msg = f"Pre-processing failed ({type(exc).__name__}: {exc}); quantizing without it."
        reporter.warn(msg)
        report.warnings.append(msg)
        return src
    return dst


def _quantize(recipe: QuantRecipe, src: Path, out: Path, samples: object,
              reporter: Reporter) -> None:
    try:
        if recipe.mode == "dynamic":
            from onnxruntime.quantization import quantize_dynamic

            reporter.stage("Quantizing weights (dynamic)", 0.3)
            options = ort_options(recipe)
            quantize_dynamic(str(src), str(out), **options)
        elif recipe.mode in STATIC_MODES:
            from onnxruntime.quantization import quantize_static

            reporter.stage("Calibrating and quantizing", 0.2)
            reader = ReplayReader(samples,  # type: ignore[arg-type]
                                  progress=lambda f: reporter.progress(0.2 + 0.6 * f))
            quantize_static(str(src), str(out), reader, **ort_options(recipe))
        elif recipe.mode == "fp16":
            from onnxruntime.transformers import float16

            reporter.stage("Converting to float16", 0.3)
            converted = float16.convert_float_to_float16(
                onnx.load(str(src)), keep_io_types=recipe.keep_io_types,
                op_block_list=list(recipe.op_block_list) or None,
                node_block_list=list(recipe.exclude) or None,
            )
            onnx.save(converted, str(out))
        else:  # int4
            from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

            reporter.stage("Quantizing MatMul weights to 4 bits", 0.3)
            quantizer = MatMulNBitsQuantizer(
                onnx.load(str(src)), block_size=recipe.block_size,
                is_symmetric=recipe.int4_symmetric, nodes_to_exclude=list(recipe.exclude))
            quantizer.process()
            onnx.save(quantizer.model.model, str(out))
    except EdgeStudioError:
        raise
    except Exception as exc:
        raise QuantizeError(f"onnxruntime's quantizer failed: {type(exc).__name__}: {exc}") from exc
