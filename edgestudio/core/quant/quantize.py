"""The quantization job: every mode through onnxruntime.quantization, with our checks around it.

One place (:func:`ort_options`) translates our typed recipe into ORT's enums and
``extra_options`` strings. Calibration data is validated before anything is written, and the
result's quantization parameters are inspected afterwards for the failures ORT stays silent about
(collapsed ranges that fall back to scale 1.0, infinite or NaN scales).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.convert.ahead_ops import convert_version
from edgestudio.core.convert.conversion_plan import model_opset
from edgestudio.core.convert.float32 import computes_in_float16, upcast_float16
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.calib_data import ReplayReader, SampleSet, open_samples
from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.inputs.input_spec import InputSpecError
from edgestudio.core.job_api.options import declared_options
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import (
    INLINE_LIMIT,
    nested_graphs,
    read_full_model,
    save_model,
)
from edgestudio.core.model.opsets import iter_nodes, quantized_ops_in
from edgestudio.core.model.result_gate import run_in_process, run_isolated
from edgestudio.core.model.validate import ort_gist
from edgestudio.core.paths import atomic_target
from edgestudio.core.progress import RecordingReporter, Reporter, within
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
from edgestudio.core.quant.failed_modes import choices_of, forget_failure, remember_failure
from edgestudio.core.quant.fp16_bisect import Bisection, float32_types_needed
from edgestudio.core.quant.int4_job import int4_options, run_int4_streamed, streamed_int4_plan
from edgestudio.core.quant.mixed_precision import (
    COMPUTE_OPS,
    MixedPrecisionError,
    int16_overrides,
    precision_of,
)
from edgestudio.core.quant.prep_cache import preprocessed
from edgestudio.core.quant.quant_recipes import (
    INTEGER_MODES,
    STATIC_MODES,
    QuantRecipe,
    check_rules,
)
from edgestudio.core.quant.quant_results import Quantization
from edgestudio.core.quant.quantized_graph import existing_quantization
from edgestudio.core.quant.quantizer_fixes import (
    QuantizerFailure,
    fold_weight_casts,
    workaround_for,
)
from edgestudio.core.quant.smooth_quant import channel_maxima, smooth, smoothing_targets
from edgestudio.core.serialise import to_json

PER_CHANNEL_MIN_OPSET = 13  # DequantizeLinear's axis attribute exists from opset 13


class QuantizeError(EdgeStudioError):
    """The recipe breaks a rule, the model cannot be quantized, or ORT's quantizer failed."""


class QuantizerError(QuantizeError):
    """onnxruntime's quantizer raised (``failure`` says what, and where)."""

    def __init__(self, failure: QuantizerFailure) -> None:
        super().__init__(f"onnxruntime's quantizer failed: {failure.cause}")
        self.failure = failure


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
            warnings.append(
                f"'{tensor}': infinite or NaN scale (inf/NaN in the calibration "
                "data?): its outputs will be NaN."
            )
        elif np.all(scale == 1.0):
            warnings.append(
                f"'{tensor}': scale is exactly 1.0, the fallback for a collapsed "
                "range (constant or all-zero during calibration): ~100 % error."
            )
        elif np.any(scale == 0):
            warnings.append(f"'{tensor}': zero scale (constant value during calibration).")
    return warnings


def run_quantize(recipe: QuantRecipe, reporter: Reporter, staging: Path) -> JobReport:
    """Quantize ``recipe.model`` into ``staging``, prove the result runs, report what was done.

    The result is loaded and run on the model's input specification before the job succeeds;
    a result that does not run fails the job and nothing is written. Known causes are avoided
    up front: per-channel quantization of an opset < 13 model raises the opset first (checked),
    a result that breaks after ORT's pre-processing is quantized again without it, and fp16
    operators that crash onnxruntime are kept in float32.
    """
    reporter.stage("Reading the model", 0.0)
    source = Path(recipe.model)
    if recipe.mode == "int4":  # its weights stay on disk unless it cannot be streamed
        graph_only = onnx.load(str(source), load_external_data=False)
        warnings = _refuse_unquantizable(recipe, graph_only)
        why = streamed_int4_plan(recipe, graph_only)
        if not why:
            return run_int4_streamed(recipe, graph_only, reporter, staging, warnings)
        reporter.log(f"Reading every weight: onnxruntime's own 4-bit quantizer is needed ({why}).")
        del graph_only
    model, external = read_full_model(source)  # parsed once: big models take seconds
    report = JobReport(kind=recipe.kind)
    notes: list[str] = []
    calibration_warnings: list[str] = _refuse_unquantizable(recipe, model)
    data = recipe.calib if recipe.calib and recipe.calib.kind != "synthetic" else None
    preprocess = recipe.preprocess and recipe.mode in ("dynamic", *STATIC_MODES)
    raise_opset = _needs_opset_raise(recipe, model)
    # The recipe as quantized: nodes reading a weight with inf/NaN values stay in float (the
    # recipe itself, and the command it gives, stay as the user wrote them).
    quantized_as = _keeping_non_finite_weights(recipe, model, notes)
    folded = fold_weight_casts(model) if recipe.mode in INTEGER_MODES else []
    if folded:
        notes.append(
            f"{len(folded)} weight(s) stored in another float type and Cast to "
            f"float32 in the graph ({_listed(folded)}) were stored as float32 first "
            "(exact): onnxruntime's quantizer quantizes stored weights only."
        )
    upcast = (
        upcast_float16(model)
        if recipe.mode in INTEGER_MODES and computes_in_float16(model)
        else None
    )
    if upcast:
        notes.append(
            f"The model computes in float16, which onnxruntime's quantizer cannot quantize: "
            f"upcast to float32 first ({upcast.text().rstrip('.')}) — the convert step "
            "`edgestudio convert --float32` does the same on its own."
        )

    name = Path(recipe.output or "quantized.onnx").name
    with (
        tempfile.TemporaryDirectory(dir=staging) as scratch,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        work = Path(scratch)
        # Finding the inputs (a session on the float model) and ORT's pre-processing (another
        # session) do not depend on each other, and onnxruntime builds sessions without holding
        # the GIL: they run side by side unless the opset must be raised first (rare).
        reporter.stage(
            "Finding inputs the model runs on"
            + (" and pre-processing" if preprocess and not raise_opset else ""),
            0.03,
        )
        quiet = RecordingReporter()
        probe = pool.submit(job_inputs, source, model, recipe.shapes, recipe.ranges, data, quiet)
        pre: Path | None = None
        if not raise_opset:
            float_path = _float_path(model, source, external, work, changed=bool(folded or upcast))
            if preprocess:
                pre = _preprocess(float_path, work / "pre.onnx", reporter, report)
        try:
            resolved = probe.result()
        except InputSpecError as exc:
            raise QuantizeError(
                f"Cannot prove a quantized model works without inputs the original runs on. {exc}"
            ) from exc
        finally:
            for line in quiet.lines:
                reporter.log(line)
        feeds = resolved.feeds()

        samples = None
        if recipe.mode in STATIC_MODES:
            assert recipe.calib is not None
            reporter.stage(f"Checking calibration data ({recipe.calib.describe()})", 0.05)
            samples = open_samples(recipe.calib, model, resolved.spec, source)
            calibration_warnings += samples.validate()  # raises DataError before anything
        for w in calibration_warnings:
            reporter.warn(w)

        if raise_opset:
            float_path = _float_path(
                _raised_opset(model, resolved.session, feeds, reporter, notes),
                source,
                external,
                work,
                changed=True,
            )
            if preprocess:
                reporter.stage("Pre-processing (quant_pre_process)", 0.1)
                pre = _preprocess(float_path, work / "pre.onnx", reporter, report)
        choices = choices_of(recipe.mode, recipe.per_channel, recipe.reduce_range)
        try:
            out, gate, inspected, calibration = _quantize_and_prove(
                quantized_as, float_path, pre, work, samples, feeds, reporter, notes, pool
            )
        except QuantizeError as exc:  # an analysis will not suggest these choices again
            remember_failure(source, choices, str(exc))
            raise
        forget_failure(source, choices)
        report.files = _place_result(inspected.model, out, staging, name)
    precision = precision_of(inspected.model) if recipe.mode in INTEGER_MODES else None
    if precision is not None:
        notes.append(f"Precision: {precision.text()}.")
    quant_warnings = inspected.warnings
    for w in quant_warnings:
        reporter.warn(w)
    calibration_warnings += quant_warnings
    for note in notes:
        reporter.log(note)
    report.warnings = calibration_warnings + report.warnings
    result = Quantization(
        float_bytes=source.stat().st_size,
        quant_bytes=(staging / name).stat().st_size,
        quantized_ops=list(inspected.ops),
        notes=notes,
        calibration_warnings=calibration_warnings,
        calibration=calibration.state if calibration else "",
        onnxruntime=gate,
        command=recipe.command_line(),
        inputs=to_json(resolved.spec),
        precision=precision,
        calibration_samples=len(samples) if samples is not None else 0,
    )
    # the typed result as it travels; the recipe beside it, for readers of --json
    report.details = {**to_json(result), "recipe": to_json(recipe)}
    reporter.stage("Done", 1.0)
    return report


FLOAT_WEIGHT_TYPES = frozenset(
    {
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.FLOAT16,
        onnx.TensorProto.DOUBLE,
        onnx.TensorProto.BFLOAT16,
    }
)


def _keeping_non_finite_weights(
    recipe: QuantRecipe, model: onnx.ModelProto, notes: list[str]
) -> QuantRecipe:
    """``recipe`` with the nodes that read a weight holding inf or NaN values excluded.

    Such weights are real (a -inf row in an attention-bias table that marks "no path"), and a
    scale computed over an infinite range makes every value the weight reaches NaN: dynamic
    quantization of one molecule model's embedding table turned its whole output to NaN. Kept
    in float, they compute what the original does. (float16 keeps inf as inf: nothing to do.)
    """
    if recipe.mode not in ("dynamic", *STATIC_MODES):
        return recipe
    bad = {
        t.name
        for t in model.graph.initializer
        if t.data_type in FLOAT_WEIGHT_TYPES and not np.isfinite(numpy_helper.to_array(t)).all()
    }
    if not bad:
        return recipe
    readers = sorted(
        {n.name for n in iter_nodes(model.graph) if n.name and bad & set(n.input)}
        - set(recipe.exclude)
    )
    if not readers:
        return recipe
    notes.append(
        f"{_listed(sorted(bad))} hold{'s' if len(bad) == 1 else ''} inf or NaN "
        f"values, which no quantization scale can represent: {_listed(readers)}, which "
        "read them, stay in float."
    )
    return replace(recipe, exclude=(*recipe.exclude, *readers))


def _refuse_unquantizable(recipe: QuantRecipe, model: onnx.ModelProto) -> list[str]:
    """Raise for a recipe that breaks a rule or a model there is nothing to quantize in (an
    already quantized one, one without the mode's operators); returns the rules' warnings."""
    rules = check_rules(recipe, model_opset(model), {n.name for n in iter_nodes(model.graph)})
    if not rules.ok:
        raise QuantizeError(" ".join(rules.errors))
    already = existing_quantization(model)
    if already:
        raise QuantizeError(
            f"The model is already quantized ({'; '.join(already)}): quantizing it again would "
            "quantize its rounding error and gain nothing. Quantize the float original instead."
        )
    not_applicable = _nothing_to_quantize(model, recipe)
    if not_applicable:
        raise QuantizeError(not_applicable)
    return list(rules.warnings)


def _needs_opset_raise(recipe: QuantRecipe, model: onnx.ModelProto) -> bool:
    """Per-channel quantization of an opset < 13 model: the opset is raised first."""
    opset = model_opset(model) or 13
    return (
        recipe.per_channel and opset < PER_CHANNEL_MIN_OPSET and recipe.mode not in ("fp16", "int4")
    )


def _float_path(
    model: onnx.ModelProto, source: Path, external: bool, work: Path, changed: bool
) -> Path:
    """A path to ``model`` for ORT's quantizers, which read a path: the source itself when its
    weights are inline and nothing was ``changed`` (it is only read); otherwise a copy."""
    if not (changed or external or model.graph.sparse_initializer):
        return source
    save_model(model, work, "float.onnx")
    return work / "float.onnx"


def _place_result(result: onnx.ModelProto, out: Path, staging: Path, name: str) -> list[str]:
    """Move the proven result into ``staging`` as ``name`` (written again, with its weights in
    external data, only when it is too big to stay inline or came with a data file of its
    own, whose name follows the result's)."""
    if out.stat().st_size < INLINE_LIMIT and not out.with_name(out.name + ".data").exists():
        os.replace(out, staging / name)
        return [name]
    return save_model(result, staging, name)


def _raised_opset(
    model: onnx.ModelProto,
    session: object,
    feeds: dict[str, np.ndarray],
    reporter: Reporter,
    notes: list[str],
) -> onnx.ModelProto:
    """The model raised to opset 13 for per-channel quantization, its outputs checked equal."""
    opset = model_opset(model) or 13
    reporter.stage(
        f"Raising the opset {opset} → {PER_CHANNEL_MIN_OPSET} for per-channel quantization", 0.08
    )
    why = (
        f"Per-channel quantization writes DequantizeLinear with an axis, which exists only "
        f"from opset {PER_CHANNEL_MIN_OPSET}; this model is opset {opset}"
    )
    try:
        raised, _ = convert_version(model, PER_CHANNEL_MIN_OPSET)
    except Exception as exc:
        raise QuantizeError(
            f"{why}, and onnx's version converter could not raise it "
            f"({type(exc).__name__}: {exc}). Quantize per-tensor instead, or "
            "convert the model to opset 13 first."
        ) from exc
    from edgestudio.core.model.sessions import cpu_session
    from edgestudio.core.model.validate import compare_outputs, short

    try:
        got = cpu_session(raised.SerializeToString()).run(None, feeds)
        want = session.run(None, feeds)  # type: ignore[attr-defined]
    except Exception as exc:
        raise QuantizeError(
            f"{why}; raised to opset {PER_CHANNEL_MIN_OPSET} it no longer runs "
            f"({short(exc)}). Quantize per-tensor instead."
        ) from exc
    names = [o.name for o in raised.graph.output]
    checks = compare_outputs(
        names, [np.asarray(g) for g in got], [np.asarray(w) for w in want], 1e-4, 1e-3
    )
    if not all(c.allclose for c in checks):
        worst = max(checks, key=lambda c: c.max_abs_err)
        raise QuantizeError(
            f"{why}; raised to opset {PER_CHANNEL_MIN_OPSET} its output "
            f"'{worst.name}' changes (max abs error {worst.max_abs_err:.3g}). "
            "Quantize per-tensor instead."
        )
    notes.append(
        f"{why}: raised to opset {PER_CHANNEL_MIN_OPSET} first (outputs checked "
        "equal with np.allclose)."
    )
    return raised


@dataclass(frozen=True)
class _Inspected:
    """A written result, read back: the model, what is wrong with its quantization
    parameters, and the quantized operators it has."""

    model: onnx.ModelProto
    warnings: list[str]
    ops: list[str]


def _inspect_result(out: Path, mode: str) -> _Inspected:
    result = onnx.load(str(out))
    warnings = inspect_quant_params(result)
    ops = quantized_ops_in(result)
    if mode == "int4" and "MatMulNBits" not in ops:
        warnings.append(
            "No MatMul with a constant weight was found: 4-bit weight-only "
            "quantization changed nothing (Gemm and Conv are not covered)."
        )
    return _Inspected(result, warnings, ops)


def _nothing_quantized(result: onnx.ModelProto) -> QuantizeError:
    """The refusal of a result that quantized nothing: written, it would be the float model
    again and an analysis would rate it GOOD (344 dB on a character-LSTM whose LSTMs are Loop
    bodies)."""
    inside = _layers_in_subgraphs(result)
    return QuantizeError(
        "No operator was quantized: the result would compute what the float model does"
        + (
            f" (its {', '.join(inside)} layers sit inside If/Loop/Scan bodies, which "
            "onnxruntime's quantizer does not enter; exporting the recurrent layers as "
            "LSTM/GRU nodes, or unrolling the loop, gives it something to quantize)"
            if inside
            else " (none of its operators is one the quantizer handles in this mode)"
        )
        + ". Nothing was written."
    )


def _quantizer_op_types(mode: str) -> frozenset[str]:
    """The operator types onnxruntime's integer quantizer for ``mode`` can change (its own
    registries; fp16 is decided by the converter's block list instead)."""
    from onnxruntime.quantization.registry import (
        IntegerOpsRegistry,
        QDQRegistry,
        QLinearOpsRegistry,
    )

    if mode == "dynamic":
        return frozenset(IntegerOpsRegistry)
    if mode in STATIC_MODES:  # quantize_static's default: both registries together
        return frozenset(QDQRegistry) | frozenset(QLinearOpsRegistry)
    return frozenset({"MatMul"})  # int4: MatMulNBits replaces MatMuls with constant weights


def _nothing_to_quantize(model: onnx.ModelProto, recipe: QuantRecipe) -> str | None:
    """Why ``recipe`` does not apply to ``model`` at all (no operator its mode changes), or None.

    Said before any work: a 200 MB tree ensemble (ai.onnx.ml) would otherwise be read, copied
    and proven for a result that computes exactly what the original does.
    """
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST

    present = {n.op_type for n in iter_nodes(model.graph)}
    blocked = set(recipe.op_block_list)
    if recipe.mode == "fp16":
        kept = set(DEFAULT_OP_BLOCK_LIST) | blocked
        hits = present - kept
        targets_said = "any operator it does not keep in float32"
    else:
        targets = set(_quantizer_op_types(recipe.mode))
        if recipe.op_types:
            targets &= set(recipe.op_types)
        if recipe.placement != "all" and recipe.mode in STATIC_MODES:
            targets &= set(COMPUTE_OPS)
        hits = (present & targets) - blocked
        listed = sorted(targets)
        targets_said = (
            ", ".join(listed[:8]) + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")
            if listed
            else "none of the chosen operator types"
        )
    if hits:
        return None
    others = [
        m
        for m in ("dynamic", "qdq", "fp16", "int4")
        if m != recipe.mode
        and (
            (m == "fp16" and present - set(DEFAULT_OP_BLOCK_LIST))
            or (m != "fp16" and present & _quantizer_op_types(m))
        )
    ]
    ml = sorted(op for op in present if op in _ML_OPERATORS)
    why = (
        f"Quantization ({recipe.mode}) does not apply to this model: none of its operators "
        f"({', '.join(sorted(present)) or 'none'}) is one onnxruntime changes in this mode "
        f"({targets_said}), so the result would compute exactly what the original does."
    )
    if others:
        why += f" Modes that do change it: {', '.join(others)}."
    if ml:
        why += (
            f" {', '.join(ml)} (ai.onnx.ml) hold their work in node attributes that "
            "onnxruntime neither quantizes nor turns to float16; inspect, convert, "
            "benchmark and profile apply to it."
        )
    return why


# The classic-ML operators (ai.onnx.ml) that exporters such as skl2onnx and onnxmltools write.
_ML_OPERATORS = frozenset(
    {
        "TreeEnsembleClassifier",
        "TreeEnsembleRegressor",
        "TreeEnsemble",
        "LinearClassifier",
        "LinearRegressor",
        "SVMClassifier",
        "SVMRegressor",
        "ZipMap",
        "Scaler",
        "Normalizer",
        "OneHotEncoder",
        "LabelEncoder",
        "Imputer",
        "Binarizer",
        "ArrayFeatureExtractor",
        "CastMap",
        "CategoryMapper",
        "DictVectorizer",
        "FeatureVectorizer",
    }
)


def _layers_in_subgraphs(model: onnx.ModelProto) -> list[str]:
    """The quantizable layer types that only occur inside control-flow bodies."""
    top = {n.op_type for n in model.graph.node}
    everywhere = {n.op_type for n in iter_nodes(model.graph)}
    return sorted((everywhere - top) & {"Conv", "MatMul", "Gemm", "LSTM", "GRU", "Attention"})


def _quantize_and_prove(
    recipe: QuantRecipe,
    float_path: Path,
    pre: Path | None,
    work: Path,
    samples: object,
    feeds: dict[str, np.ndarray],
    reporter: Reporter,
    notes: list[str],
    pool: ThreadPoolExecutor,
) -> tuple[Path, str, _Inspected, CalibrationOutcome | None]:
    """Quantize (``pre``: the pre-processed model, tried first), then load and run the result;
    retry the known fixes; raise if none works. Returns the result's path, how it ran and the
    result read back (read on ``pool`` while onnxruntime, without the GIL, builds the session
    that proves it: a fifth of a second on a 4k-node graph, hidden)."""
    attempts: list[tuple[str, Path, tuple[str, ...], dict[str, Any]]] = []
    if pre is not None:
        attempts.append(("with pre-processing", pre, recipe.op_block_list, {}))
    attempts.append(
        (
            "without pre-processing" if pre is not None else "as given",
            float_path,
            recipe.op_block_list,
            {},
        )
    )
    failures: list[str] = []
    fixes: set[str] = set()
    explained: set[int] = set()  # attempts whose note says why they were made
    for k, (label, quant_input, blocked, changes) in enumerate(attempts):
        out = work / f"quant{k}.onnx"
        try:
            said = _quantize(
                replace(recipe, op_block_list=blocked, **changes),
                quant_input,
                out,
                samples,
                reporter,
            )
        except QuantizerError as exc:
            fix = workaround_for(exc.failure, replace(recipe, **changes).per_channel, fixes)
            if fix is None and len(attempts) == k + 1:
                raise _quantizer_refusal(exc, attempts[:k], failures) from exc
            failures.append(str(exc))
            reporter.warn(f"Quantizing {label}: {exc}")
            if fix is not None:
                fixes.add(fix.key)
                extra = (*changes.get("ort_extra", ()), *fix.extra.items())
                exclude = (*changes.get("exclude", recipe.exclude), *fix.exclude)
                explained.add(len(attempts))
                attempts.append(
                    (
                        f"{label}, {fix.key}",
                        quant_input,
                        blocked,
                        {**changes, **fix.changes, "ort_extra": extra, "exclude": exclude},
                    )
                )
                notes.append(fix.note)
            continue
        reporter.stage("Loading and running the result", 0.85)
        inspected = pool.submit(_inspect_result, out, recipe.mode)
        if recipe.mode == "fp16" or recipe.isolate_proof:
            gate = run_isolated(out, feeds)
        else:
            _injected_fault("proof-crash")  # tests: onnxruntime dying on the result here
            gate = run_in_process(out, feeds)
        if gate.ok:
            if said:
                notes.append(said.note)
            if k and not label.startswith("keeping") and k not in explained:  # fallbacks and
                # workarounds said what they did
                notes.append(
                    f"The result {attempts[0][0]} did not run ({failures[0]}); "
                    f"quantized {label} instead."
                )
            read = inspected.result()
            kept = [n for n in changes.get("exclude", ()) if n not in recipe.exclude]
            if kept and not read.ops and recipe.mode in INTEGER_MODES:
                raise QuantizeError(
                    f"{failures[-1]}. Keeping {_listed(kept)} in float gets past it but leaves "
                    "nothing quantized, so nothing was written: onnxruntime cannot quantize "
                    f"this model in this mode ({recipe.mode}); try another (--mode)."
                )
            if not read.ops and recipe.mode in INTEGER_MODES:
                raise _nothing_quantized(read.model)
            return out, "loads and runs", read, said
        inspected.cancel()  # a result that does not run is not reported on
        failures.append(gate.reason)
        reporter.warn(f"The result quantized {label} is unusable: {gate.reason}")
        rejected = (
            _rejected_nodes(gate.reason, float_path, replace(recipe, **changes))
            if recipe.mode in INTEGER_MODES
            and not gate.crashed
            and len(attempts) == k + 1
            and len(attempts) < INTEGER_FALLBACK_ROUNDS
            else []
        )
        if rejected:
            explained.add(len(attempts))
            attempts.append(
                (
                    f"keeping {_listed(rejected)} in float",
                    pre or float_path,
                    blocked,
                    {**changes, "exclude": (*changes.get("exclude", recipe.exclude), *rejected)},
                )
            )
            notes.append(
                f"onnxruntime rejects the quantized form of {_listed(rejected)} "
                f"({_ort_cause(gate.reason)}): kept in float, the rest quantized."
            )
        if recipe.mode == "fp16" and not gate.crashed and len(attempts) == k + 1:
            fallback = _fp16_fallback(
                gate.reason, float_path, replace(recipe, **changes), blocked, fp16_rounds=k
            )
            if fallback is not None:
                what, blocked_more, changes_more = fallback
                attempts.append(
                    (
                        f"keeping {what} in float32",
                        float_path,
                        blocked_more,
                        {**changes, **changes_more},
                    )
                )
                why = _ort_cause(gate.reason)
                notes.append(
                    f"onnxruntime rejects the fp16 form of {what} ({why}): kept in "
                    "float32, the rest is float16."
                )
        if gate.crashed and recipe.mode == "fp16" and len(attempts) == k + 1:
            suspects = _fp16_suspects(onnx.load(str(float_path), load_external_data=False), blocked)
            if suspects:
                attempts.append(
                    (
                        f"keeping {', '.join(suspects)} in float32",
                        float_path,
                        (*blocked, *suspects),
                        {},
                    )
                )
                notes.append(
                    f"onnxruntime crashes on the fp16 form of {', '.join(suspects)}: "
                    "kept in float32."
                )
        if (
            gate.crashed
            and recipe.mode == "fp16"
            and len(attempts) == k + 1
            and not any(a[0].startswith("keeping the types") for a in attempts)
        ):
            found = _bisect_fp16_crash(
                float_path, replace(recipe, **changes), blocked, feeds, work, reporter
            )
            if found.kept:
                types = ", ".join(found.kept)
                attempts.append(
                    (
                        f"keeping the types {types} in float32",
                        float_path,
                        (*blocked, *found.kept),
                        changes,
                    )
                )
                notes.append(
                    f"onnxruntime crashes opening the fp16 form of this model; keeping {types} in "
                    f"float32 makes it run ({found.tries} tries, each in a child process"
                    + (
                        ", the budget spent before the set was minimal"
                        if found.exhausted
                        else "; keeping any one of them in float16 crashes again"
                    )
                    + "), the rest is float16."
                )
        if gate.crashed and _int8_activations_may_help(recipe) and len(attempts) == k + 1:
            # onnxruntime (1.32) segfaults running some QDQ graphs whose constants feeding an
            # Add are quantized to uint8 with zero point 255 (a spindle-detector EEG model);
            # with int8 activations, its own default, the same graph runs.
            attempts.append(
                ("with int8 activations", pre or float_path, blocked, {"activation_type": "int8"})
            )
            notes.append(
                "onnxruntime crashed running the result with uint8 activations; it "
                "was quantized with int8 activations instead (onnxruntime's own "
                "default), which runs. The recipe's activation type was not used."
            )
    raise QuantizeError(
        "The quantized model is unusable, so nothing was written: "
        + "; ".join(f"{a[0]}: {f}" for a, f in zip(attempts, failures, strict=False))
        + "."
        + _crash_diagnosis(recipe, out, feeds, failures)
        + _what_to_try(recipe, failures)
    )


def _quantizer_refusal(
    exc: QuantizerError, attempts: list[Any], failures: list[str]
) -> QuantizeError:
    """The refusal when onnxruntime's quantizer failed on the last attempt and no known retry
    is left: its cause, where it was, and what the earlier attempts met."""
    where = f" (in onnxruntime's {exc.failure.where})" if exc.failure.where else ""
    before = "".join(f" Also tried {a[0]}: {f}." for a, f in zip(attempts, failures, strict=False))
    return QuantizeError(
        f"{exc}{where}.{before} Keep the node it names in float "
        "(--exclude NODE, the form's Exclude), quantize fewer operator types "
        "(--op-type), or try another mode (--mode)."
    )


def _crash_diagnosis(
    recipe: QuantRecipe, out: Path, feeds: dict[str, np.ndarray], failures: list[str]
) -> str:
    """Where onnxruntime crashed on an fp16 result: whether it is the last optimisation
    level's doing (a result that loads and runs optimised up to 'extended'), in words."""
    if recipe.mode != "fp16" or not failures or "crashed" not in failures[-1]:
        return ""
    if not run_isolated(out, feeds, extended_only=True).ok:
        return ""
    return (
        " onnxruntime crashes in its last optimisation level (layout transforms, its "
        "default 'all') on this float16 graph: optimised up to 'extended' it loads and "
        "runs, so a runtime that sets graph_optimization_level=ORT_ENABLE_EXTENDED could "
        "use it — not written, since onnxruntime's default crashes on it."
    )


def _what_to_try(recipe: QuantRecipe, failures: list[str]) -> str:
    """What to do after every attempt failed, where the failures say something about it."""
    non_finite = any("NaN or inf" in f for f in failures)
    if recipe.mode == "fp16" and non_finite:
        return (
            " float16 overflows somewhere in this model (values beyond ±65504): keep the "
            "overflowing operators in float32 (--block-op, the form's 'Block ops'), "
            "or quantize to int8 (qdq), whose ranges come from calibration."
        )
    if non_finite and recipe.mode == "dynamic":
        return (
            " Dynamic quantization computes activation ranges per run, so no calibration "
            "is to blame: quantize fewer operator types (--op-type, e.g. MatMul only) to "
            "find the one that breaks, exclude its nodes (--exclude), or use qdq."
        )
    if non_finite:
        return (
            " Check the calibration data: ranges from data unlike the real inputs clip "
            "or overflow; give real samples (--calib) or exclude the layers the analysis "
            "names."
        )
    if recipe.mode == "fp16" and failures and "crashed" in failures[-1]:
        return (
            " Quantize to int8 (qdq) instead, or keep operator types in float32 "
            "(--block-op) until it loads: a crash names none."
        )
    if recipe.mode == "fp16":
        return " Keep the operators onnxruntime names in float32 (--block-op) or use qdq."
    return ""


def _injected_fault(name: str) -> None:
    """Crash this worker as onnxruntime would (SIGSEGV) when ``EDGESTUDIO_FAULT`` names
    ``name``: how the tests make a native crash happen where real models cause one."""
    if os.environ.get("EDGESTUDIO_FAULT") == name:
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)


# onnxruntime (1.32) segfaults opening the fp16 forms of these on some models (GRU audio models
# reproduced without EdgeStudio); they are kept in float32 when the fp16 result crashes it.
FP16_CRASH_SUSPECTS = ("GRU", "LSTM", "RNN")


# How many times an fp16 result is re-made keeping in float32 what onnxruntime named (each
# round names the next node it rejects; real models needed one or two).
FP16_FALLBACK_ROUNDS = 8
_NODE_IN_ERROR = (
    re.compile(r"in node \(([^)]*)\)"),
    re.compile(r"node with name '([^']*)'"),
    re.compile(r"Name:'([^']*)'"),
    re.compile(r"\w+ node '([^']*)'"),
)
# ("... node 'NAME'" is how model/validate.py's ort_gist names it)
_OP_IN_ERROR = re.compile(
    r"of operator \((\w+)\)|implementation for (\w+)\(|running (\w+) node"
    r"|(\w+) node '"
)


def _fp16_fallback(
    reason: str, float_path: Path, recipe: QuantRecipe, blocked: tuple[str, ...], fp16_rounds: int
) -> tuple[str, tuple[str, ...], dict[str, Any]] | None:
    """What to keep in float32 after onnxruntime rejected an fp16 result with ``reason``.

    onnxruntime names the node it rejects (a float-only operator such as Celu, IsInf before
    opset 20); that node, and only it, is kept in float32. When a second node of an operator
    type already kept fails, the type has no float16 kernel here (ScatterElements with
    reduction 'add'): every node of it is kept. A node that fails again although kept gets
    what computes its parameters kept too (a Resize whose scales are computed in float16). An
    unnamed node is kept by its operator type. Returns (what, op block list, recipe changes),
    or None when the error names nothing new or the rounds are spent.
    """
    if fp16_rounds >= FP16_FALLBACK_ROUNDS:
        return None
    graph = onnx.load(str(float_path), load_external_data=False).graph
    by_name = {n.name: n for n in iter_nodes(graph) if n.name}
    named = [
        n
        for n in dict.fromkeys(
            m.group(1) for pattern in _NODE_IN_ERROR for m in pattern.finditer(reason)
        )
        if n in by_name
    ]
    fresh = [n for n in named if n not in recipe.exclude]
    kept_types = {by_name[n].op_type for n in recipe.exclude if n in by_name}
    repeated = sorted({by_name[n].op_type for n in fresh} & kept_types - set(blocked))
    if repeated:
        return f"every {', '.join(repeated)} node", (*blocked, *repeated), {}
    if fresh:
        what = ", ".join(f"{by_name[n].op_type} node '{n}'" for n in fresh)
        return what, blocked, {"exclude": (*recipe.exclude, *fresh)}
    feeders = [
        n
        for n in _parameter_producers(graph, [by_name[n] for n in named])
        if n not in recipe.exclude
    ]
    if feeders:
        return (
            f"the {len(feeders)} node(s) computing the parameters of "
            f"{', '.join(repr(n) for n in named)}",
            blocked,
            {"exclude": (*recipe.exclude, *feeders)},
        )
    ops = [next(g for g in m.groups() if g) for m in _OP_IN_ERROR.finditer(reason)]
    ops = [op for op in dict.fromkeys(ops) if op not in blocked]
    if ops:
        return f"every {', '.join(ops)} node", (*blocked, *ops), {}
    return None


# How many attempts an integer result gets when onnxruntime rejects a node of it (each round
# keeps the node it names in float).
INTEGER_FALLBACK_ROUNDS = 6


def _rejected_nodes(reason: str, float_path: Path, recipe: QuantRecipe) -> list[str]:
    """The float model's nodes that onnxruntime's refusal of a quantized result names, not
    already kept in float (a QDQ Transpose it cannot load, say).

    A refusal can name a node the float model lacks: one onnxruntime's optimiser made while
    loading the result (``Transpose node 'Transpose_token_7': Invalid attribute perm {0, 2, 3,
    1}, input shape = {36}`` after static quantization of a tf2onnx transcriber). The
    operator type it names is then kept in float, every node of it."""
    graph = onnx.load(str(float_path), load_external_data=False).graph
    nodes = [n for n in iter_nodes(graph) if n.name]
    names = {n.name for n in nodes}
    named = dict.fromkeys(
        m.group(1) for pattern in _NODE_IN_ERROR for m in pattern.finditer(reason)
    )
    found = [n for n in named if n in names and n not in recipe.exclude]
    if found or any(n in names for n in named):
        return found
    ops = {next(g for g in m.groups() if g) for m in _OP_IN_ERROR.finditer(reason)}
    return [n.name for n in nodes if n.op_type in ops and n.name not in recipe.exclude]


def _ort_cause(reason: str) -> str:
    """The part of an onnxruntime error that says why (see :func:`ort_gist`)."""
    return ort_gist(reason, 200)


def _parameter_producers(
    graph: onnx.GraphProto, nodes: list[onnx.NodeProto], limit: int = 64
) -> list[str]:
    """The named nodes that compute ``nodes``' inputs after the first (scales, sizes, shapes),
    nearest first, at most ``limit``."""
    producers = {out: n for n in graph.node for out in n.output}
    frontier = [t for node in nodes for t in node.input[1:] if t]
    found: dict[str, None] = {}
    while frontier and len(found) < limit:
        node = producers.get(frontier.pop(0))
        if node is None or not node.name or node.name in found:
            continue
        found[node.name] = None
        frontier.extend(t for t in node.input if t)
    return list(found)


def _int8_activations_may_help(recipe: QuantRecipe) -> bool:
    """True for a static uint8-activation recipe that int8 activations would keep valid."""
    return (
        recipe.mode in STATIC_MODES
        and recipe.activation_type == "uint8"
        and recipe.weight_type == "int8"
    )


def _bisect_fp16_crash(
    float_path: Path,
    recipe: QuantRecipe,
    blocked: tuple[str, ...],
    feeds: dict[str, np.ndarray],
    work: Path,
    reporter: Reporter,
) -> Bisection:
    """The operator types to keep in float32 for an fp16 result onnxruntime crashes on (see
    :mod:`~edgestudio.core.quant.fp16_bisect`); each try converted and run in a child."""
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST

    graph = onnx.load(str(float_path), load_external_data=False).graph
    counts: dict[str, int] = {}
    for node in iter_nodes(graph):
        if node.op_type not in blocked and node.op_type not in DEFAULT_OP_BLOCK_LIST:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
    types = sorted(counts, key=lambda op: (-counts[op], op))
    reporter.stage(
        f"Finding what crashes onnxruntime: trying {len(types)} operator types kept in float32",
        0.86,
    )
    quiet = RecordingReporter()

    def runs(kept: tuple[str, ...]) -> bool:
        reporter.check_cancelled()
        out = work / "fp16_try.onnx"
        _fp16(replace(recipe, op_block_list=(*blocked, *kept)), float_path, out, None, quiet)
        ok = run_isolated(out, feeds).ok
        reporter.log(
            f"fp16 keeping {', '.join(kept) or 'nothing more'} in float32: "
            + ("runs" if ok else "crashes or fails")
        )
        return ok

    return float32_types_needed(types, runs)


def _fp16_suspects(model: onnx.ModelProto, blocked: tuple[str, ...]) -> list[str]:
    present = {n.op_type for n in iter_nodes(model.graph)}
    return [op for op in FP16_CRASH_SUSPECTS if op in present and op not in blocked]


def _preprocess(src: Path, dst: Path, reporter: Reporter, report: JobReport) -> Path:
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


def _dynamic(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
    from onnxruntime.quantization import quantize_dynamic

    reporter.stage("Quantizing weights (dynamic)", 0.3)
    with accelerated(reporter.log, within(reporter, 0.3, 0.8)):
        quantize_dynamic(str(src), str(out), **ort_options(recipe))
    return None


def _static(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
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
    smoothing = ""
    if recipe.smooth_quant and recipe.mode == "qdq":
        src, smoothing = _smoothed(recipe, src, out.parent, reader.samples, reporter)
    if recipe.int16 and recipe.mode == "qdq":
        options["extra_options"]["TensorQuantOverrides"] = _int16_overrides(recipe, src, reporter)
    cache = _calibration_cache(recipe, src, samples, options)
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
    calibrated = _read_ranges(ranges)
    bad = _non_finite(calibrated)
    if bad and calibrated is not None:
        # A NaN fill value (Where(mask, x, NaN) marks "no prediction") or an overflow: those
        # tensors cannot be quantized; the nodes that read or write them stay in float.
        kept = _nodes_touching(src, bad) - set(recipe.exclude)
        options["nodes_to_exclude"] = sorted(set(options["nodes_to_exclude"] or []) | kept)
        # onnxruntime computes a scale for every tensor with a range, excluded or not: the
        # retry reads the ranges without those tensors (the cache keeps what was computed)
        options["calibration_cache_path"] = str(
            _without(calibrated, bad, out.with_suffix(".fin.json"))
        )
        with accelerated(reporter.log, quantizing):
            quantize_static(str(src), str(out), reader, **options)
        nan_note = (
            f" Calibration found no finite range for {_listed(bad)} (NaN or inf in the "
            "float model's activations on the calibration data, e.g. a NaN fill "
            f"value): {_listed(sorted(kept))}, which read or write them, stay in float."
        )
    elif failure is not None:
        raise failure
    # after any retry above: it rounds the weights of the model written last
    if recipe.adaptive_rounding and recipe.mode == "qdq":
        smoothing = " ".join(
            n for n in (smoothing, _round_adaptively(src, out, reader.samples, reporter)) if n
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


def _round_adaptively(src: Path, out: Path, samples: SampleSet, reporter: Reporter) -> str:
    """GPTQ's rounding of ``out``'s MatMul/Gemm/Conv weights (see
    :mod:`~edgestudio.core.quant.adaptive_rounding`); its note."""
    reporter.stage("Adaptive rounding of the weights (GPTQ) on the calibration data", 0.8)
    quantized = onnx.load(str(out))
    done = adaptive_rounding(quantized, onnx.load(str(src)), samples, out.parent)
    if done.layers:
        with atomic_target(out) as tmp:
            onnx.save(quantized, str(tmp))
    return done.note()


def _smoothed(
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


def _int16_overrides(
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
            f"{_listed(missing)} no longer exist{'s' if len(missing) == 1 else ''} in the model "
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


def _read_ranges(path: Path) -> Any:
    """onnxruntime's ranges file (its ``TensorsData``), or None when there is none to read."""
    from onnxruntime.quantization.calibrate import load_tensors_data

    try:
        return load_tensors_data(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _non_finite(ranges: Any) -> list[str]:
    """The tensors whose calibrated range in ``ranges`` (a ``TensorsData``) is NaN or
    infinite."""
    bad = []
    for name, tensor in ranges.data.items() if ranges is not None else ():
        values = getattr(tensor, "range_value", None)
        if values is not None and not np.all(np.isfinite(np.asarray(values, dtype=np.float64))):
            bad.append(name)
    return sorted(bad)


def _without(ranges: Any, tensors: list[str], target: Path) -> Path:
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


def _nodes_touching(model_path: Path, tensors: list[str]) -> set[str]:
    """The named nodes of ``model_path`` that read or write any of ``tensors``."""
    wanted = set(tensors)
    graph = onnx.load(str(model_path), load_external_data=False).graph
    return {n.name for n in graph.node if n.name and wanted & {*n.input, *n.output}}


def _listed(names: list[str], most: int = 4) -> str:
    quoted = [f"'{n}'" for n in names[:most]]
    return ", ".join(quoted) + (f" and {len(names) - most} more" if len(names) > most else "")


def _calibration_cache(
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


def _fp16(
    recipe: QuantRecipe, src: Path, out: Path, samples: object, reporter: Reporter
) -> CalibrationOutcome | None:
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


def _int4(
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
    "dynamic": _dynamic,
    "qdq": _static,
    "qoperator": _static,
    "fp16": _fp16,
    "int4": _int4,
}


def _quantize(
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
