"""The 4-bit weight-only job on a model whose weights never enter memory together.

:func:`~edgestudio.core.quant.accel.int4_stream.quantize_int4_streamed` reads one weight at a time;
this keeps the rest of the job to the same bound: the model is parsed without its external
data, the source itself is read (no float copy is written), the inputs are found and the proof
is run on the *result* (the same inputs as the original; its weights are the output being
written, a quarter of the float model's), and a result with external data is moved into place
as it was written rather than loaded and saved again.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import INLINE_LIMIT, save_model
from edgestudio.core.model.opsets import quantized_ops_in
from edgestudio.core.model.result_gate import run_in_process, run_isolated
from edgestudio.core.progress import Reporter
from edgestudio.core.quant.accel.int4_stream import (
    Int4Options,
    lm_head,
    quantize_int4_streamed,
    streamable,
)
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Quantization
from edgestudio.core.serialise import to_json

# A result written with external data is saved again as one file below this size, as the other
# modes write small results (reading it back costs little); above, it stays as it was written.
REWRITE_INLINE_BELOW = 256 * 2**20
assert REWRITE_INLINE_BELOW < INLINE_LIMIT


class Int4JobError(EdgeStudioError):
    """The 4-bit result could not be made or does not run."""


def int4_options(recipe: QuantRecipe, graph: onnx.GraphProto) -> tuple[Int4Options, list[str]]:
    """The quantizer's options for ``recipe`` and what they decided for a person to read (which
    node was kept as the LM head)."""
    exclude = set(recipe.exclude)
    notes = []
    if recipe.keep_lm_head:
        head = lm_head(graph)
        if head:
            exclude.add(head)
            notes.append(
                f"Kept the language-model head '{head}' in float (the widest MatMul "
                "producing an output)."
            )
        else:
            notes.append(
                "No language-model head was found (no MatMul with a constant weight "
                "wider than the others produces an output): nothing else was kept in "
                "float."
            )
    options = Int4Options(
        block_size=recipe.block_size,
        symmetric=recipe.int4_symmetric,
        accuracy_level=recipe.accuracy_level or None,
        exclude=frozenset(exclude),
        gather=recipe.int4_embeddings,
    )
    return options, notes


def streamed_int4_plan(recipe: QuantRecipe, graph_model: onnx.ModelProto) -> str:
    """Why this job needs the whole model in memory ("" when it can be streamed)."""
    options, _ = int4_options(recipe, graph_model.graph)
    return streamable(graph_model, options)


def stored_bytes(path: Path, model: onnx.ModelProto) -> int:
    """The model file's size plus its external data files' (each file once)."""
    files = {
        entry.value
        for tensor in model.graph.initializer
        for entry in tensor.external_data
        if entry.key == "location"
    }
    return path.stat().st_size + sum(
        int((path.parent / f).stat().st_size) for f in files if (path.parent / f).is_file()
    )


def run_int4_streamed(
    recipe: QuantRecipe,
    model: onnx.ModelProto,
    reporter: Reporter,
    staging: Path,
    rule_warnings: list[str],
) -> JobReport[Quantization]:
    """Quantize ``recipe.model`` (``model``: parsed without external data) to 4 bits a weight
    at a time, prove the result runs, and leave it in ``staging`` (``rule_warnings``: what
    the recipe's checks said, reported with the result's own)."""
    source = Path(recipe.model)
    options, notes = int4_options(recipe, model.graph)
    for note in notes:
        reporter.log(note)
    name = Path(recipe.output or "quantized.onnx").name
    data = recipe.calib if recipe.calib and recipe.calib.kind != "synthetic" else None

    def layer_done(done: int, total: int, node: str) -> None:
        reporter.stage(
            f"Quantizing weights to 4 bits: {done} of {total} ({node})",
            0.05 + 0.75 * done / max(total, 1),
        )

    reporter.stage(
        "Quantizing weights to 4 bits, one weight at a time (the model's weights "
        "are never all in memory)",
        0.05,
    )
    with tempfile.TemporaryDirectory(dir=staging) as scratch:
        work = Path(scratch)
        written = quantize_int4_streamed(source, work / name, options, layer_done)
        result = onnx.load(str(work / name), load_external_data=False)
        reporter.stage("Finding inputs the result runs on (the original's inputs)", 0.82)
        resolved = job_inputs(work / name, result, recipe.shapes, recipe.ranges, data, reporter)
        spec, feeds = resolved.spec, resolved.feeds()
        del resolved  # its session on the result: the proof opens its own, never two at once
        reporter.stage("Loading and running the result", 0.9)
        run = run_isolated if recipe.isolate_proof else run_in_process
        gate = run(work / name, feeds)
        if not gate.ok:
            raise Int4JobError(
                f"The 4-bit model is unusable, so nothing was written: {gate.reason}."
            )
        ops = quantized_ops_in(result)
        quant_bytes = stored_bytes(work / name, result)
        if len(written) > 1 and quant_bytes < REWRITE_INLINE_BELOW:
            files = save_model(onnx.load(str(work / name)), staging, name)
        else:
            for file in written:
                os.replace(work / file, staging / file)
            files = written
    warnings = (
        list(rule_warnings)
        if "MatMulNBits" in ops
        else [
            *rule_warnings,
            "No MatMul with a constant weight was found: 4-bit weight-only quantization changed "
            "nothing (Gemm and Conv are not covered).",
        ]
    )
    for w in warnings:
        reporter.warn(w)
    notes.append(
        "Quantized one weight at a time (streamed); inputs found and proven on the result."
    )
    reporter.stage("Done", 1.0)
    quantization = Quantization(
        float_bytes=stored_bytes(source, model),
        quant_bytes=quant_bytes,
        quantized_ops=list(ops),
        notes=notes,
        calibration_warnings=warnings,
        calibration="",
        onnxruntime="loads and runs",
        command=recipe.command_line(),
        inputs=to_json(spec),
    )
    return JobReport(kind=recipe.kind, files=files, warnings=warnings, result=quantization)
