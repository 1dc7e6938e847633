"""The PyTorch → ONNX export job. Runs only in a worker, with weights-only loading forced.

A ``.pt2`` file is a ``torch.export`` ExportedProgram; a ``.pt`` file a TorchScript archive. Both
can carry code, so they are never opened in the app process, and ``TORCH_FORCE_WEIGHTS_ONLY_LOAD``
stops pickled payloads from running.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.convert.convert_grammar import TORCH_DTYPES
from edgestudio.core.convert.export_recipes import Export, ExportRecipe, torch_missing_hint
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.equivalence import check_against
from edgestudio.core.inputs.input_spec import Domain, InputEntry, InputSpecification
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import save_model
from edgestudio.core.model.validate import Feeds
from edgestudio.core.progress import Reporter

_MAX_WARNINGS = 20


class ExportError(EdgeStudioError):
    """Loading or exporting the PyTorch model failed."""


def load_torch_model(path: Path) -> Any:
    """Load a ``.pt2`` ExportedProgram (as a module) or a ``.pt`` TorchScript module."""
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    import torch

    if not path.is_file():
        raise ExportError(f"{path} does not exist.")
    try:
        if path.suffix == ".pt2":
            return torch.export.load(str(path)).module()
        return torch.jit.load(str(path), map_location="cpu")  # type: ignore[no-untyped-call]  # torch leaves it unannotated
    except Exception as exc:
        raise ExportError(
            f"PyTorch could not load {path.name} as an ExportedProgram (.pt2) or TorchScript "
            f"(.pt) file: {type(exc).__name__}: {exc}"
        ) from exc


def _example(recipe: ExportRecipe, notes: list[str]) -> tuple[Any, ...]:
    """Seeded example tensors; adjustments the user must know about go to ``notes``."""
    import torch

    dynamic = {(d.tensor, d.axis) for d in recipe.dynamic}
    tensors = []
    for i in recipe.inputs:
        if i.dtype not in TORCH_DTYPES:
            raise ExportError(
                f"Input '{i.name}': dtype {i.dtype} is not one of {', '.join(TORCH_DTYPES)}."
            )
        shape = list(i.shape)
        for axis, size in enumerate(shape):
            if (i.name, axis) in dynamic and size < 2:
                # The exporter specialises a size-1 axis to a constant: give it 2 to keep it free.
                shape[axis] = 2
                notes.append(
                    f"Example size of dynamic axis {i.name}:{axis} raised from 1 to 2 "
                    "(the exporter would otherwise fix it to 1)."
                )
        gen = torch.Generator().manual_seed(0)
        dtype = getattr(torch, i.dtype)
        if dtype.is_floating_point:
            tensors.append(torch.randn(shape, generator=gen).to(dtype))
        elif dtype == torch.bool:
            tensors.append(torch.rand(shape, generator=gen) > 0.5)
        else:
            tensors.append(torch.randint(0, 4, shape, generator=gen).to(dtype))
    return tuple(tensors)


def run_export(recipe: ExportRecipe, reporter: Reporter, staging: Path) -> JobReport[Export]:
    """Export the PyTorch model to ONNX in ``staging`` and check it against PyTorch."""
    if not recipe.inputs:
        raise ExportError("Give at least one input (name and example shape).")
    reporter.stage("Loading the PyTorch model", 0.0)
    try:
        import torch
    except ImportError as exc:
        raise ExportError(torch_missing_hint()) from exc
    module = load_torch_model(Path(recipe.model))
    # Inference behaviour (dropout off, batch-norm statistics frozen); ExportedProgram modules
    # refuse .eval() since they were exported in their final mode.
    with contextlib.suppress(Exception):
        module.eval()
    report: JobReport[Export] = JobReport(kind=recipe.kind)
    exporter = recipe.exporter
    if Path(recipe.model).suffix == ".pt" and exporter == "dynamo":
        # torch.export cannot trace a ScriptModule; the TorchScript-based exporter is made for it.
        exporter = "legacy"
        report.warnings.append(
            "A TorchScript (.pt) file is exported with the TorchScript-based "
            "(legacy) exporter: the dynamo exporter cannot read TorchScript."
        )
    example = _example(recipe, report.warnings)
    for note in report.warnings:
        reporter.warn(note)

    dynamic_axes: dict[str, dict[int, str]] = {}
    for d in recipe.dynamic:
        dynamic_axes.setdefault(d.tensor, {})[d.axis] = str(d.value)
    unknown = set(dynamic_axes) - {i.name for i in recipe.inputs}
    if unknown:
        raise ExportError(
            f"--dynamic names {', '.join(sorted(unknown))}, which is not an input "
            f"(inputs: {', '.join(i.name for i in recipe.inputs)})."
        )
    input_names = [i.name for i in recipe.inputs]
    output_names = list(recipe.output_names) or _default_output_names(module, example)
    name = Path(recipe.output or "model.onnx").name
    reporter.stage(f"Exporting with the {exporter} exporter", 0.2)
    with (
        tempfile.TemporaryDirectory(dir=staging) as scratch,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        raw = Path(scratch) / name
        try:
            with torch.no_grad():
                if exporter == "dynamo":
                    torch.onnx.export(
                        module,
                        example,
                        str(raw),
                        input_names=input_names,
                        output_names=output_names,
                        opset_version=recipe.opset,
                        dynamo=True,
                        dynamic_shapes=_dynamic_shapes(recipe, dynamic_axes),
                        external_data=False,
                    )
                else:
                    torch.onnx.export(
                        module,
                        example,
                        str(raw),
                        input_names=input_names,
                        output_names=output_names,
                        dynamic_axes=dynamic_axes or None,
                        opset_version=recipe.opset,
                        dynamo=False,
                    )
        except Exception as exc:
            raise ExportError(export_failure(exporter, exc)) from exc
        model = onnx.load(str(raw))  # the exporter's own output, external data included
    seen: set[str] = set()
    for record in caught:
        text = plain(f"{record.category.__name__}: {record.message}")
        if (
            issubclass(record.category, (DeprecationWarning, FutureWarning))
            or text in seen
            or "training mode" in text
        ):  # the module was put in eval mode above
            continue
        seen.add(text)
        if len(seen) <= _MAX_WARNINGS:
            reporter.warn(text)
            report.warnings.append(text)

    got = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if got != recipe.opset:
        msg = f"Asked for opset {recipe.opset}, the exporter produced opset {got}."
        reporter.warn(msg)
        report.warnings.append(msg)
    reporter.stage("Writing the result", 0.6)
    report.files = save_model(model, staging, name)

    reporter.stage("Checking against PyTorch", 0.7)

    def reference(feeds: Feeds) -> list[np.ndarray]:
        with torch.no_grad():
            out = module(*[torch.from_numpy(np.ascontiguousarray(feeds[n])) for n in input_names])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o.detach().numpy() for o in outs]

    symbols = sorted({str(d.value) for d in recipe.dynamic})
    report.check = check_against(
        staging / name,
        reference,
        example_spec(recipe),
        recipe.tolerance.atol,
        recipe.tolerance.rtol,
        second_sizes=dict.fromkeys(symbols, 3),
    )
    if not report.check.session_ok:
        raise ExportError(
            f"onnxruntime cannot load the exported model: {report.check.session_message}"
        )
    report.result = Export(recipe.model, exporter, got)
    reporter.stage(f"Done: {report.check.verdict()}", 1.0)
    return report


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def plain(text: str) -> str:
    """``text`` without terminal colour codes (PyTorch colours its guard errors)."""
    return _ANSI.sub("", text)


def export_failure(exporter: str, exc: BaseException) -> str:
    """The exporter's failure in plain words, the part a user can act on first."""
    text = plain(str(exc)).strip()
    if "Constraints violated" in text or "guard" in text.lower():
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), text)
        return (
            f"The {exporter} exporter could not keep an axis dynamic: the model's code "
            f"fixes its size ({first[:300]}). Make that axis static, or export with the "
            "other exporter."
        )
    lines = [ln for ln in text.splitlines() if ln.strip()]
    summary = " ".join(lines[:3])
    return (
        f"The {exporter} exporter failed: {type(exc).__name__}: "
        f"{summary[:600]}{'…' if len(summary) > 600 else ''}"
    )


def _default_output_names(module: Any, example: tuple[Any, ...]) -> list[str]:
    """``output`` (or ``output_0``, ``output_1``…) rather than the exporter's numbers."""
    import torch

    try:
        with torch.no_grad():
            out = module(*example)
    except Exception:  # the export itself will report the problem
        return ["output"]
    count = len(out) if isinstance(out, (tuple, list)) else 1
    return ["output"] if count == 1 else [f"output_{i}" for i in range(count)]


def example_spec(recipe: ExportRecipe) -> InputSpecification:
    """The check's inputs: the example shapes, with the recipe's dynamic axes as symbols."""
    symbols = {(d.tensor, d.axis): str(d.value) for d in recipe.dynamic}
    entries = []
    for i in recipe.inputs:
        integer = i.dtype.startswith("int")
        entries.append(
            InputEntry(
                i.name,
                i.dtype,
                tuple(i.shape),
                Domain("integers", 0, 2) if integer else Domain("normal"),
                tuple(symbols.get((i.name, a), n) for a, n in enumerate(i.shape)),
            )
        )
    return InputSpecification(tuple(entries))


def _dynamic_shapes(
    recipe: ExportRecipe, axes: dict[str, dict[int, str]]
) -> tuple[dict[int, Any] | None, ...] | None:
    """torch.export's ``dynamic_shapes``: one Dim per symbol, shared where names repeat."""
    if not axes:
        return None
    import torch

    dims: dict[str, Any] = {}
    return tuple(
        {axis: dims.setdefault(sym, torch.export.Dim(sym)) for axis, sym in axes[i.name].items()}
        if i.name in axes
        else None
        for i in recipe.inputs
    )
