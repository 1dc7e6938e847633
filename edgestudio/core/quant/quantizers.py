"""onnxruntime's quantizers, one call per mode (:data:`QUANTIZERS`), with what they need around
them: ORT's options from our recipe (:func:`ort_options`), pre-processing, the calibration
cache, SmoothQuant, adaptive rounding and 16-bit overrides."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.calib_data import ReplayReader, SampleSet
from edgestudio.core.job_api.options import declared_options
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import (
    INLINE_LIMIT,
    nested_graphs,
    save_model,
)
from edgestudio.core.paths import atomic_target
from edgestudio.core.progress import Reporter, within
from edgestudio.core.quant import qnn_config
from edgestudio.core.quant.accel.accelerator import accelerated
from edgestudio.core.quant.adaptive_rounding import adaptive_rounding
from edgestudio.core.quant.calib_cache import (
    DISABLE_ENV,
    CalibrationCache,
    CalibrationOutcome,
    calibration_key,
    evict,
    lookup,
    uncached,
)
from edgestudio.core.quant.int4_job import int4_options
from edgestudio.core.quant.mixed_precision import (
    COMPUTE_OPS,
    MixedPrecisionError,
    int16_overrides,
)
from edgestudio.core.quant.prep_cache import preprocessed
from edgestudio.core.quant.quant_errors import QuantizeError, QuantizerError
from edgestudio.core.quant.quant_recipes import (
    STATIC_MODES,
    QuantRecipe,
)
from edgestudio.core.quant.quantizer_fixes import (
    QuantizerFailure,
)
from edgestudio.core.quant.smooth_quant import channel_maxima, smooth, smoothing_targets


def ort_options(recipe: QuantRecipe) -> dict[str, Any]:
    """ORT's keyword arguments for ``recipe`` (the only place that speaks ORT's dialect)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType

    types = {
        "int8": QuantType.QInt8,
        "uint8": QuantType.QUInt8,
        "int16": QuantType.QInt16,
        "uint16": QuantType.QUInt16,
        "int4": QuantType.QInt4,
        "uint4": QuantType.QUInt4,
    }
    # Options declared with their extra_options key go through as they are (the default where
    # the mode does not use them).
    extra: dict[str, Any] = {
        opt.ort: getattr(recipe, f.name) if opt.used_in(recipe.mode) else f.default
        for f, opt in declared_options(QuantRecipe)
        if opt.ort
    }
    extra.update(recipe.ort_extra)  # what a retry past a known quantizer failure added
    options: dict[str, Any] = {
        "per_channel": recipe.per_channel,
        "reduce_range": recipe.reduce_range,
        "weight_type": types[recipe.weight_type],
        "op_types_to_quantize": list(recipe.op_types) or None,
        "nodes_to_exclude": list(recipe.exclude) or None,
        "extra_options": extra,
    }
    if recipe.mode in STATIC_MODES:
        if recipe.placement != "all":
            compute = [op for op in COMPUTE_OPS if not recipe.op_types or op in recipe.op_types]
            options["op_types_to_quantize"] = compute
            if recipe.placement == "compute-inputs":
                extra["OpTypesToExcludeOutputQuantization"] = compute
        if recipe.calib_method == "percentile":
            extra["CalibPercentile"] = recipe.percentile
        options["activation_type"] = types[recipe.activation_type]
        options["quant_format"] = QuantFormat.QDQ if recipe.mode == "qdq" else QuantFormat.QOperator
        options["calibrate_method"] = {
            "minmax": CalibrationMethod.MinMax,
            "entropy": CalibrationMethod.Entropy,
            "percentile": CalibrationMethod.Percentile,
            "distribution": CalibrationMethod.Distribution,
        }[recipe.calib_method]
    return options


def ort_pre_process(src: Path, dst: Path, reporter: Reporter, report: JobReport[Any]) -> Path:
    """onnxruntime's ``quant_pre_process`` of ``src`` into ``dst`` (cached by content)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    def run(model: Path, target: Path) -> None:
        # skip_symbolic_shape: the symbolic shape inference fails on many real exports and is
        # not needed for quantization (ARCHITECTURE.md); this also turns Constant weights into
        # initializers, which ORT's quantizers require.
        quant_pre_process(str(model), str(target), skip_symbolic_shape=True)

    try:
        if preprocessed(src, dst, run):
            reporter.log(
                "Pre-processing reused from the cache (same model and onnxruntime "
                f"version; {DISABLE_ENV}=1 turns it off)."
            )
    except Exception as exc:
        msg = f"Pre-processing failed ({type(exc).__name__}: {exc}); quantizing without it."
        reporter.warn(msg)
        report.warnings.append(msg)
        return src
    return dst


def run_dynamic(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
    """onnxruntime's dynamic quantization (no calibration)."""
    from onnxruntime.quantization import quantize_dynamic

    reporter.stage("Quantizing weights (dynamic)", 0.3)
    with accelerated(reporter.log, within(reporter, 0.3, 0.8)):
        quantize_dynamic(str(src), str(out), **ort_options(recipe))
    return None


def run_static(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
    """onnxruntime's static quantization (QDQ or QOperator), calibrated on ``samples``."""
    from onnxruntime.quantization import quantize_static

    reporter.stage("Calibrating and quantizing", 0.2)
    reader = ReplayReader(
        samples,  # type: ignore[arg-type]
        progress=within(reporter, 0.2, 0.5),
    )
    started: list[bool] = []
    node_by_node = within(reporter, 0.5, 0.8)

    def quantizing(fraction: float) -> None:
        if not started:
            started.append(True)
            reporter.stage("Quantizing node by node", 0.5)
        node_by_node(fraction)

    options = ort_options(recipe)
    if recipe.target == "qnn-htp":
        src = qnn_config.qnn_fused(src, out.parent, reporter)
        options = qnn_config.qnn_options(recipe, src, options)
    smoothing = ""
    if recipe.smooth_quant and recipe.mode == "qdq":
        src, smoothing = smoothed_model(recipe, src, out.parent, reader.samples, reporter)
    if recipe.int16 and recipe.mode == "qdq":
        options["extra_options"]["TensorQuantOverrides"] = recipe_int16_overrides(
            recipe, src, reporter
        )
    cache = calibration_cache(recipe, src, samples, options)
    # The ranges are always written (to the cache, else beside the result): they are read
    # back to find tensors whose range is not finite.
    ranges = cache.path if cache is not None else out.with_suffix(".ranges.json")
    options["calibration_cache_path"] = str(ranges)
    if cache is not None and cache.hit:
        reporter.stage("Calibration ranges from the cache", 0.45)
    failure: AssertionError | None = None
    try:
        with accelerated(reporter.log, quantizing):
            quantize_static(str(src), str(out), reader, **options)
    except AssertionError as exc:  # onnxruntime's "scale issue": a NaN range
        failure = exc
    nan_note = ""
    calibrated = read_ranges(ranges)
    bad = non_finite(calibrated)
    if bad and calibrated is not None:
        # A NaN fill value (Where(mask, x, NaN) marks "no prediction") or an overflow: those
        # tensors cannot be quantized; the nodes that read or write them stay in float.
        kept = nodes_touching(src, bad) - set(recipe.exclude)
        options["nodes_to_exclude"] = sorted(set(options["nodes_to_exclude"] or []) | kept)
        # onnxruntime computes a scale for every tensor with a range, excluded or not: the
        # retry reads the ranges without those tensors (the cache keeps what was computed)
        options["calibration_cache_path"] = str(
            ranges_without(calibrated, bad, out.with_suffix(".fin.json"))
        )
        with accelerated(reporter.log, quantizing):
            quantize_static(str(src), str(out), reader, **options)
        nan_note = (
            f" Calibration found no finite range for {listed_names(bad)} (NaN or inf in the "
            "float model's activations on the calibration data, e.g. a NaN fill "
            f"value): {listed_names(sorted(kept))}, which read or write them, stay in float."
        )
    elif failure is not None:
        raise failure
    # after any retry above: it rounds the weights of the model written last
    if recipe.adaptive_rounding and recipe.mode == "qdq":
        smoothing = " ".join(
            n for n in (smoothing, round_adaptively(src, out, reader.samples, reporter)) if n
        )
    outcome = (
        cache.outcome()
        if cache is not None
        else uncached(os.environ.get(DISABLE_ENV, "") not in ("", "0"))
    )
    if cache is not None:
        evict()
    extra = "".join(f" {n}" for n in (smoothing, nan_note.strip()) if n)
    return replace(outcome, note=outcome.note + extra) if extra else outcome


def round_adaptively(src: Path, out: Path, samples: SampleSet, reporter: Reporter) -> str:
    """GPTQ's rounding of ``out``'s MatMul/Gemm/Conv weights (see
    :mod:`~edgestudio.core.quant.adaptive_rounding`); its note."""
    reporter.stage("Adaptive rounding of the weights (GPTQ) on the calibration data", 0.8)
    quantized = onnx.load(str(out))
    done = adaptive_rounding(quantized, onnx.load(str(src)), samples, out.parent)
    if done.layers:
        with atomic_target(out) as tmp:
            onnx.save(quantized, str(tmp))
    return done.note()


def smoothed_model(
    recipe: QuantRecipe, src: Path, work: Path, samples: SampleSet, reporter: Reporter
) -> tuple[Path, str]:
    """``src`` smoothed by SmoothQuant on the calibration samples (see
    :mod:`~edgestudio.core.quant.smooth_quant`), written beside the result, and the note."""
    reporter.stage(f"SmoothQuant: measuring MatMul inputs (α={recipe.smooth_quant:g})", 0.15)
    model = onnx.load(str(src))
    targets = smoothing_targets(model)
    maxima = channel_maxima(model, sorted(targets), samples, work) if targets else {}
    done = smooth(model, maxima, recipe.smooth_quant)
    path = work / "smoothed.onnx"
    save_model(model, work, path.name)
    return path, done.note()


def recipe_int16_overrides(
    recipe: QuantRecipe, src: Path, reporter: Reporter
) -> dict[str, list[dict[str, Any]]]:
    """onnxruntime's overrides that keep ``recipe.int16`` in 16 bits in ``src`` (the model it
    quantizes, maybe pre-processed), boundary conversions included."""
    model = onnx.load(str(src), load_external_data=False)
    try:
        overrides, missing = int16_overrides(
            model, recipe.int16, recipe.activation_type, recipe.activation_symmetric
        )
    except MixedPrecisionError as exc:
        raise QuantizeError(str(exc)) from exc
    if missing:
        raise QuantizeError(
            f"{listed_names(missing)} no longer exist{'s' if len(missing) == 1 else ''} in the "
            "model "
            "onnxruntime quantizes: its pre-processing merged them into a neighbour (a "
            "BatchNormalization folded into its Conv, say). Keep that neighbour in 16-bit "
            "instead, or quantize without pre-processing (--no-preprocess)."
        )
    wide = sum(1 for v in overrides.values() if "convert" not in v[0])
    reporter.log(
        f"16-bit activations: {wide} tensor(s) for {len(recipe.int16)} node(s), "
        f"{len(overrides) - wide} conversion(s) at their boundaries."
    )
    return overrides


def read_ranges(path: Path) -> Any:
    """onnxruntime's ranges file (its ``TensorsData``), or None when there is none to read."""
    from onnxruntime.quantization.calibrate import load_tensors_data

    try:
        return load_tensors_data(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def non_finite(ranges: Any) -> list[str]:
    """The tensors whose calibrated range in ``ranges`` (a ``TensorsData``) is NaN or
    infinite."""
    bad = []
    for name, tensor in ranges.data.items() if ranges is not None else ():
        values = getattr(tensor, "range_value", None)
        if values is not None and not np.all(np.isfinite(np.asarray(values, dtype=np.float64))):
            bad.append(name)
    return sorted(bad)


def ranges_without(ranges: Any, tensors: list[str], target: Path) -> Path:
    """``ranges`` (a ``TensorsData``) without ``tensors``, written to ``target``."""
    from onnxruntime.quantization.calibrate import TensorsData, save_tensors_data

    dropped = set(tensors)
    save_tensors_data(
        TensorsData(
            ranges.calibration_method, {k: v for k, v in ranges.data.items() if k not in dropped}
        ),
        target,
    )
    return target


def nodes_touching(model_path: Path, tensors: list[str]) -> set[str]:
    """The named nodes of ``model_path`` that read or write any of ``tensors``."""
    wanted = set(tensors)
    graph = onnx.load(str(model_path), load_external_data=False).graph
    return {n.name for n in graph.node if n.name and wanted & {*n.input, *n.output}}


def calibration_cache(
    recipe: QuantRecipe, src: Path, samples: object, options: dict[str, Any]
) -> CalibrationCache | None:
    """The calibration cache entry for this quantization, or None (cache off, or data that
    were never read through, so have no fingerprint)."""
    fingerprint = getattr(samples, "fingerprint", None)
    if not fingerprint:
        return None
    bits = {"int16": 16, "uint16": 16, "int4": 4, "uint4": 4}.get(recipe.activation_type, 8)
    if recipe.int16:  # 16-bit overrides raise the opset before calibration too
        bits = 16
    key = calibration_key(
        src,
        fingerprint,
        recipe.calib_method,
        options["op_types_to_quantize"],
        options["extra_options"],
        bits,
    )
    return lookup(key)


def run_fp16(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
    """onnxruntime's float16 conversion, keeping the recipe's blocked operators in float32."""
    from onnxruntime.transformers import float16

    reporter.stage("Converting to float16", 0.3)
    converted = float16.convert_float_to_float16(
        onnx.load(str(src)),
        keep_io_types=recipe.keep_io_types,
        op_block_list=list(recipe.op_block_list) or None,
        node_block_list=list(recipe.exclude) or None,
    )
    onnx.save(converted, str(out))
    return None


def run_int4(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
    """onnxruntime's own 4-bit quantizer, for the models the streamed one cannot take
    (:func:`~edgestudio.core.quant.int4_job.run_int4_streamed` takes the rest)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    model = onnx.load(str(src))
    options, notes = int4_options(recipe, model.graph)
    for note in notes:
        reporter.log(note)
    reporter.stage("Quantizing weights to 4 bits (onnxruntime's quantizer)", 0.3)
    quantizer = MatMulNBitsQuantizer(
        model,
        block_size=options.block_size,
        is_symmetric=options.symmetric,
        accuracy_level=options.accuracy_level,
        nodes_to_exclude=sorted(options.exclude),
        op_types_to_quantize=options.op_types(),
    )
    quantizer.process()
    onnx.save(quantizer.model.model, str(out))
    return None


#: The onnxruntime call of each mode of :data:`~edgestudio.core.quant.quant_recipes.QUANT_MODES`
#: (a test checks that every mode has one).
QUANTIZERS: dict[
    str, Callable[[QuantRecipe, Path, Path, object, Reporter], CalibrationOutcome | None]
] = {
    "dynamic": run_dynamic,
    "qdq": run_static,
    "qoperator": run_static,
    "fp16": run_fp16,
    "int4": run_int4,
}


def quantize_with_ort(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
    """Run the mode's quantizer; returns what became of its calibration (static modes)."""
    try:
        outcome = QUANTIZERS[recipe.mode](recipe, src, out, samples, reporter)
    except EdgeStudioError:
        raise
    except Exception as exc:
        raise QuantizerError(QuantizerFailure.of(exc)) from exc
    drop_unused_domains(out)  # before the proof: what is proven is what is written
    return outcome


def listed_names(names: list[str], most: int = 4) -> str:
    """``'a', 'b', 'c', 'd' and 3 more``: node or tensor names in a sentence."""
    quoted = [f"'{n}'" for n in names[:most]]
    return ", ".join(quoted) + (f" and {len(names) - most} more" if len(names) > most else "")


def drop_unused_domains(path: Path) -> list[str]:
    """Remove the opset imports no node uses (onnxruntime's optimiser declares nine domains
    on every model it saves: training, preview, NCHWc, ATen…), in place; returns what went.
    A model with external weights is left as it is (rewriting it would copy them)."""
    if path.stat().st_size >= INLINE_LIMIT or path.with_name(path.name + ".data").exists():
        return []
    model = onnx.load(str(path), load_external_data=False)
    used = {"", "ai.onnx"} | {f.domain for f in model.functions}
    used |= {n.domain for g in (model.graph, *nested_graphs(model.graph)) for n in g.node}
    used |= {n.domain for f in model.functions for n in f.node}
    unused = [o.domain for o in model.opset_import if o.domain not in used]
    if not unused:
        return []
    kept = [o for o in model.opset_import if o.domain in used]
    del model.opset_import[:]
    model.opset_import.extend(kept)
    onnx.save(model, str(path))
    return unused
