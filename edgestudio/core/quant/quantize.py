"""The quantization job: every mode through onnxruntime.quantization, with our checks around it.

One place (:func:`ort_options`) translates our typed recipe into ORT's enums and
``extra_options`` strings. Calibration data is validated before anything is written, and the
result's quantization parameters are inspected afterwards for the failures ORT stays silent about
(collapsed ranges that fall back to scale 1.0, infinite or NaN scales).
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.convert.ahead_ops import convert_version
from edgestudio.core.convert.conversion_plan import model_opset
from edgestudio.core.convert.float32 import computes_in_float16, upcast_float16
from edgestudio.core.inputs.calib_data import open_samples
from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.inputs.input_spec import InputSpecError
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import (
    INLINE_LIMIT,
    read_full_model,
    save_model,
)
from edgestudio.core.model.opsets import iter_nodes
from edgestudio.core.progress import RecordingReporter, Reporter
from edgestudio.core.quant.failed_modes import choices_of, forget_failure, remember_failure
from edgestudio.core.quant.int4_job import run_int4_streamed, streamed_int4_plan
from edgestudio.core.quant.mixed_precision import (
    COMPUTE_OPS,
    precision_of,
)
from edgestudio.core.quant.quant_errors import QuantizeError
from edgestudio.core.quant.quant_proof import quantize_and_prove
from edgestudio.core.quant.quant_recipes import (
    INTEGER_MODES,
    STATIC_MODES,
    QuantRecipe,
)
from edgestudio.core.quant.quant_results import Quantization
from edgestudio.core.quant.quant_rules import check_rules
from edgestudio.core.quant.quantized_graph import existing_quantization
from edgestudio.core.quant.quantizer_fixes import (
    fold_weight_casts,
)
from edgestudio.core.quant.quantizers import listed_names, ort_pre_process
from edgestudio.core.serialise import to_json

PER_CHANNEL_MIN_OPSET = 13  # DequantizeLinear's axis attribute exists from opset 13


def run_quantize(recipe: QuantRecipe, reporter: Reporter, staging: Path) -> JobReport[Quantization]:
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
    report: JobReport[Quantization] = JobReport(kind=recipe.kind)
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
            f"float32 in the graph ({listed_names(folded)}) were stored as float32 first "
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
                pre = ort_pre_process(float_path, work / "pre.onnx", reporter, report)
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
                pre = ort_pre_process(float_path, work / "pre.onnx", reporter, report)
        choices = choices_of(recipe.mode, recipe.per_channel, recipe.reduce_range)
        try:
            out, gate, inspected, calibration = quantize_and_prove(
                quantized_as, float_path, pre, work, samples, feeds, reporter, notes, pool
            )
        except QuantizeError as exc:  # an analysis will not suggest these choices again
            remember_failure(source, choices, str(exc))
            raise
        forget_failure(source, choices)
        report.files = _place_result(inspected.model, out, staging, name)
    if recipe.target == "qnn-htp":
        fused = fused_for_npu(model, inspected.model)
        notes.append(
            "Quantized with onnxruntime's QNN config, for the Hexagon NPU"
            + (f" (its pre-processing fused {', '.join(fused)})" if fused else "")
            + ": `edgestudio target check` on the result says which nodes the NPU takes, and "
            "why not the others."
        )
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
        undecidable=sorted(inspected.undecidable),
    )
    report.result = result
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
        f"{listed_names(sorted(bad))} hold{'s' if len(bad) == 1 else ''} inf or NaN "
        f"values, which no quantization scale can represent: {listed_names(readers)}, which "
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


def fused_for_npu(float_model: onnx.ModelProto, result: onnx.ModelProto) -> list[str]:
    """The operators onnxruntime-qnn's pre-processing made that the float model lacks."""
    fusions = {"Gelu", "LayerNormalization", "LpNormalization"}
    before = {n.op_type for n in float_model.graph.node}
    return sorted({n.op_type for n in result.graph.node} & fusions - before)


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
