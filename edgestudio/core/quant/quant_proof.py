"""Quantize, then prove the result loads and runs; retry the known fixes (pre-processing off,
a quantizer workaround, nodes kept in float, int8 activations) as typed attempts until one
runs, and say why when none does."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.model.opsets import iter_nodes, quantized_ops_in
from edgestudio.core.model.result_gate import run_in_process, run_isolated
from edgestudio.core.progress import Reporter
from edgestudio.core.quant.calib_cache import (
    CalibrationOutcome,
)
from edgestudio.core.quant.decision_range import decision_warning, unreachable_decisions
from edgestudio.core.quant.fallbacks import (
    INTEGER_FALLBACK_ROUNDS,
    bisect_fp16_crash,
    fp16_fallback,
    fp16_suspects,
    int8_activations_may_help,
    ort_cause,
    rejected_nodes,
)
from edgestudio.core.quant.quant_errors import QuantizeError, QuantizerError
from edgestudio.core.quant.quant_recipes import (
    INTEGER_MODES,
    QuantRecipe,
)
from edgestudio.core.quant.quantizer_fixes import (
    workaround_for,
)
from edgestudio.core.quant.quantizers import listed_names, quantize_with_ort


class Attempt(NamedTuple):
    """One way of quantizing tried in turn: what it is called in notes and errors, the model
    it quantizes (pre-processed or not), the operator types kept in float, and the changes to
    the recipe (``exclude``, ``ort_extra``, ``activation_type``, …) that make it."""

    label: str
    source: Path
    blocked: tuple[str, ...]
    changes: dict[str, Any]


@dataclass(frozen=True)
class Inspected:
    """A written result, read back: the model, what is wrong with its quantization
    parameters, the quantized operators it has, and the probability outputs that can no
    longer be decided positive (with the top of their range)."""

    model: onnx.ModelProto
    warnings: list[str]
    ops: list[str]
    undecidable: dict[str, float]


def inspect_result(out: Path, mode: str) -> Inspected:
    """The result at ``out`` read back, with what is wrong with its quantization parameters."""
    result = onnx.load(str(out))
    undecidable = unreachable_decisions(result)
    warnings = inspect_quant_params(result)
    warnings += [decision_warning(name, top) for name, top in undecidable.items()]
    ops = quantized_ops_in(result)
    if mode == "int4" and "MatMulNBits" not in ops:
        warnings.append(
            "No MatMul with a constant weight was found: 4-bit weight-only "
            "quantization changed nothing (Gemm and Conv are not covered)."
        )
    return Inspected(result, warnings, ops, undecidable)


def nothing_quantized(result: onnx.ModelProto) -> QuantizeError:
    """The refusal of a result that quantized nothing: written, it would be the float model
    again and an analysis would rate it GOOD (344 dB on a character-LSTM whose LSTMs are Loop
    bodies)."""
    inside = layers_in_subgraphs(result)
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


def quantize_and_prove(
    recipe: QuantRecipe,
    float_path: Path,
    pre: Path | None,
    work: Path,
    samples: object,
    feeds: dict[str, np.ndarray],
    reporter: Reporter,
    notes: list[str],
    pool: ThreadPoolExecutor,
) -> tuple[Path, str, Inspected, CalibrationOutcome | None]:
    """Quantize (``pre``: the pre-processed model, tried first), then load and run the result;
    retry the known fixes; raise if none works. Returns the result's path, how it ran and the
    result read back (read on ``pool`` while onnxruntime, without the GIL, builds the session
    that proves it: a fifth of a second on a 4k-node graph, hidden)."""
    attempts: list[Attempt] = []
    if pre is not None:
        attempts.append(Attempt("with pre-processing", pre, recipe.op_block_list, {}))
    attempts.append(
        Attempt(
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
            said = quantize_with_ort(
                replace(recipe, op_block_list=blocked, **changes),
                quant_input,
                out,
                samples,
                reporter,
            )
        except QuantizerError as exc:
            fix = workaround_for(exc.failure, replace(recipe, **changes).per_channel, fixes)
            if fix is None and len(attempts) == k + 1:
                raise quantizer_refusal(exc, attempts[:k], failures) from exc
            failures.append(str(exc))
            reporter.warn(f"Quantizing {label}: {exc}")
            if fix is not None:
                fixes.add(fix.key)
                extra = (*changes.get("ort_extra", ()), *fix.extra.items())
                exclude = (*changes.get("exclude", recipe.exclude), *fix.exclude)
                explained.add(len(attempts))
                attempts.append(
                    Attempt(
                        f"{label}, {fix.key}",
                        quant_input,
                        blocked,
                        {**changes, **fix.changes, "ort_extra": extra, "exclude": exclude},
                    )
                )
                notes.append(fix.note)
            continue
        reporter.stage("Loading and running the result", 0.85)
        inspected = pool.submit(inspect_result, out, recipe.mode)
        if recipe.mode == "fp16" or recipe.isolate_proof:
            gate = run_isolated(out, feeds)
        else:
            injected_fault("proof-crash")  # tests: onnxruntime dying on the result here
            gate = run_in_process(out, feeds)
        if gate.ok:
            if said:
                notes.append(said.note)
            if k and not label.startswith("keeping") and k not in explained:  # fallbacks and
                # workarounds said what they did
                notes.append(
                    f"The result {attempts[0].label} did not run ({failures[0]}); "
                    f"quantized {label} instead."
                )
            read = inspected.result()
            kept = [n for n in changes.get("exclude", ()) if n not in recipe.exclude]
            if kept and not read.ops and recipe.mode in INTEGER_MODES:
                raise QuantizeError(
                    f"{failures[-1]}. Keeping {listed_names(kept)} in float gets past it but "
                    "leaves "
                    "nothing quantized, so nothing was written: onnxruntime cannot quantize "
                    f"this model in this mode ({recipe.mode}); try another (--mode)."
                )
            if not read.ops and recipe.mode in INTEGER_MODES:
                raise nothing_quantized(read.model)
            return out, "loads and runs", read, said
        inspected.cancel()  # a result that does not run is not reported on
        failures.append(gate.reason)
        reporter.warn(f"The result quantized {label} is unusable: {gate.reason}")
        rejected = (
            rejected_nodes(gate.reason, float_path, replace(recipe, **changes))
            if recipe.mode in INTEGER_MODES
            and not gate.crashed
            and len(attempts) == k + 1
            and len(attempts) < INTEGER_FALLBACK_ROUNDS
            else []
        )
        if rejected:
            explained.add(len(attempts))
            attempts.append(
                Attempt(
                    f"keeping {listed_names(rejected)} in float",
                    pre or float_path,
                    blocked,
                    {**changes, "exclude": (*changes.get("exclude", recipe.exclude), *rejected)},
                )
            )
            notes.append(
                f"onnxruntime rejects the quantized form of {listed_names(rejected)} "
                f"({ort_cause(gate.reason)}): kept in float, the rest quantized."
            )
        if recipe.mode == "fp16" and not gate.crashed and len(attempts) == k + 1:
            fallback = fp16_fallback(
                gate.reason, float_path, replace(recipe, **changes), blocked, fp16_rounds=k
            )
            if fallback is not None:
                what, blocked_more, changes_more = fallback
                attempts.append(
                    Attempt(
                        f"keeping {what} in float32",
                        float_path,
                        blocked_more,
                        {**changes, **changes_more},
                    )
                )
                why = ort_cause(gate.reason)
                notes.append(
                    f"onnxruntime rejects the fp16 form of {what} ({why}): kept in "
                    "float32, the rest is float16."
                )
        if gate.crashed and recipe.mode == "fp16" and len(attempts) == k + 1:
            suspects = fp16_suspects(onnx.load(str(float_path), load_external_data=False), blocked)
            if suspects:
                attempts.append(
                    Attempt(
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
            and not any(a.label.startswith("keeping the types") for a in attempts)
        ):
            found = bisect_fp16_crash(
                float_path, replace(recipe, **changes), blocked, feeds, work, reporter
            )
            if found.kept:
                types = ", ".join(found.kept)
                attempts.append(
                    Attempt(
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
        if gate.crashed and int8_activations_may_help(recipe) and len(attempts) == k + 1:
            # onnxruntime (1.32) segfaults running some QDQ graphs whose constants feeding an
            # Add are quantized to uint8 with zero point 255 (a spindle-detector EEG model);
            # with int8 activations, its own default, the same graph runs.
            attempts.append(
                Attempt(
                    "with int8 activations", pre or float_path, blocked, {"activation_type": "int8"}
                )
            )
            notes.append(
                "onnxruntime crashed running the result with uint8 activations; it "
                "was quantized with int8 activations instead (onnxruntime's own "
                "default), which runs. The recipe's activation type was not used."
            )
    raise QuantizeError(
        "The quantized model is unusable, so nothing was written: "
        + "; ".join(f"{a.label}: {f}" for a, f in zip(attempts, failures, strict=False))
        + "."
        + crash_diagnosis(recipe, out, feeds, failures)
        + what_to_try(recipe, failures)
    )


def quantizer_refusal(
    exc: QuantizerError, attempts: list[Attempt], failures: list[str]
) -> QuantizeError:
    """The refusal when onnxruntime's quantizer failed on the last attempt and no known retry
    is left: its cause, where it was, and what the earlier attempts met."""
    where = f" (in onnxruntime's {exc.failure.where})" if exc.failure.where else ""
    before = "".join(
        f" Also tried {a.label}: {f}." for a, f in zip(attempts, failures, strict=False)
    )
    return QuantizeError(
        f"{exc}{where}.{before} Keep the node it names in float "
        "(--exclude NODE, the form's Exclude), quantize fewer operator types "
        "(--op-type), or try another mode (--mode)."
    )


def crash_diagnosis(
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


def what_to_try(recipe: QuantRecipe, failures: list[str]) -> str:
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


def injected_fault(name: str) -> None:
    """Crash this worker as onnxruntime would (SIGSEGV) when ``EDGESTUDIO_FAULT`` names
    ``name``: how the tests make a native crash happen where real models cause one."""
    if os.environ.get("EDGESTUDIO_FAULT") == name:
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)


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


def layers_in_subgraphs(model: onnx.ModelProto) -> list[str]:
    """The quantizable layer types that only occur inside control-flow bodies."""
    top = {n.op_type for n in model.graph.node}
    everywhere = {n.op_type for n in iter_nodes(model.graph)}
    return sorted((everywhere - top) & {"Conv", "MatMul", "Gemm", "LSTM", "GRU", "Attention"})
