"""``edgestudio inspect MODEL [--json]``: print a model's summary without opening a window."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from edgestudio.cli.json_option import add_json_option, write_json
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.formatting import human_bytes
from edgestudio.core.model.runtime_info import runtime_info
from edgestudio.core.serialise import to_json

if TYPE_CHECKING:
    from edgestudio.core.model.summary import ModelSummary
    from edgestudio.core.model.tensor_shapes import TensorShapes


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``inspect`` subcommand."""
    p = subparsers.add_parser(
        "inspect", help="print a model's summary", description="Print a model's summary."
    )
    p.add_argument("model", help="path to an .onnx file")
    add_json_option(p, "the summary")
    p.add_argument("--shapes", action="store_true",
                   help="also run shape inference (in a worker) and list every tensor's shape")
    p.set_defaults(func=run)


def format_summary(s: ModelSummary) -> str:
    """Return the human-readable text form of a summary."""
    rows = [
        ("File", f"{s.path} ({human_bytes(s.file_size)})"),
        ("IR version", str(s.ir_version)),
        ("Opsets", ", ".join(f"{d} {v}" for d, v in s.opset_imports.items()) or "none"),
        ("Producer", f"{s.producer_name} {s.producer_version}".strip() or "unknown"),
        ("Graph", s.graph_name or "(unnamed)"),
        ("Nodes", f"{s.nodes:,}" + (f" (+{s.nodes_in_subgraphs:,} in subgraphs)"
                                    if s.nodes_in_subgraphs else "")
         + (f", {s.constant_nodes:,} only compute constants" if s.constant_nodes else "")),
        ("Parameters", f"{s.parameters:,} ({human_bytes(s.parameter_bytes)})"),
        ("Opset range", _opset_range(s)),
    ]
    for ext in s.external_data:
        rows.append(("External data", f"{ext.location} ({human_bytes(ext.size_bytes)}, "
                                      f"{ext.tensor_count} tensors)"))
    for key, value in s.metadata.items():
        rows.append((f"meta: {key}", _clip(value)))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    for title, specs in (("Inputs", s.inputs), ("Outputs", s.outputs)):
        lines.append(f"{title}:")
        name_w = max((len(t.name) for t in specs), default=0)
        lines += [f"  {t.name:<{name_w}}  {t.dtype:<8} {t.shape_text()}" for t in specs]
    lines.append("Operators: " + ", ".join(f"{op} ×{n}" for op, n in s.op_types.items()))
    return "\n".join(lines)


METADATA_CHARS = 300  # a vocabulary or a config stored as metadata can be megabytes


def _clip(value: str) -> str:
    """One line of at most METADATA_CHARS characters (--json keeps the whole value)."""
    flat = " ".join(str(value).split())
    if len(flat) <= METADATA_CHARS:
        return flat
    return f"{flat[:METADATA_CHARS]}… ({len(flat):,} characters; --json prints all)"


def _opset_range(s: ModelSummary) -> str:
    need = f"operators need ≥ {s.min_opset_required}" if s.min_opset_required else "no standard ops"
    if s.max_runtime_opset is None:
        return f"{need}; onnxruntime not found"
    return f"{need}; onnxruntime {s.runtime_version} runs ≤ {s.max_runtime_opset}"


def _infer_shapes(model: str) -> TensorShapes:
    from edgestudio.core.model.tensor_shapes import ShapesRecipe
    from edgestudio.jobs.runner import JobState, run_job

    job = run_job(ShapesRecipe(model=model), timeout=600)
    if job.state is not JobState.SUCCEEDED or job.report is None:
        raise EdgeStudioError(f"shape inference {job.state.value}: {job.error}")
    for warning in job.warnings:
        print(f"edgestudio: warning: {warning}", file=sys.stderr)
    from edgestudio.core.model.tensor_shapes import shapes_of

    return shapes_of(job.report.details)


def run(args: argparse.Namespace) -> int:
    """Print the summary; exit 1 when the model has problems that stop it from running."""
    from edgestudio.core.model.summary import summarize_file  # onnx: imported only when needed

    summary = summarize_file(args.model, runtime_info())
    shapes = _infer_shapes(args.model) if args.shapes else None
    if args.json:
        data = to_json(summary)
        if shapes is not None:
            data["tensors"] = {k: {"dtype": dtype, "shape": shape}
                               for k, (dtype, shape) in shapes.items()}
        write_json(args.json, data)
    # the human-readable form (on standard error with --json -)
    print(format_summary(summary))
    if shapes is not None:
        from edgestudio.cli.output import print_table

        print_table(["tensor", "dtype", "shape"], [
            [name, dtype, "?" if shape is None else "[" + ", ".join(
                "?" if d is None else str(d) for d in shape) + "]"]
            for name, (dtype, shape) in shapes.items()], title="Tensors:")
    for problem in summary.problems:
        print(f"edgestudio: error: {problem}", file=sys.stderr)
    return 1 if summary.problems else 0
