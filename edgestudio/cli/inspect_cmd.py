"""``edgestudio inspect MODEL [--json]``: print a model's summary without opening a window."""

from __future__ import annotations

import argparse
import json
import sys

from edgestudio.core.formatting import human_bytes
from edgestudio.core.runtime_info import runtime_info
from edgestudio.core.summary import ModelSummary, summarize_file


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``inspect`` subcommand."""
    p = subparsers.add_parser(
        "inspect", help="print a model's summary", description="Print a model's summary."
    )
    p.add_argument("model", help="path to an .onnx file")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
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
                                    if s.nodes_in_subgraphs else "")),
        ("Parameters", f"{s.parameters:,} ({human_bytes(s.parameter_bytes)})"),
        ("Opset range", _opset_range(s)),
    ]
    for ext in s.external_data:
        rows.append(("External data", f"{ext.location} ({human_bytes(ext.size_bytes)}, "
                                      f"{ext.tensor_count} tensors)"))
    for key, value in s.metadata.items():
        rows.append((f"meta: {key}", value))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    for title, specs in (("Inputs", s.inputs), ("Outputs", s.outputs)):
        lines.append(f"{title}:")
        name_w = max((len(t.name) for t in specs), default=0)
        lines += [f"  {t.name:<{name_w}}  {t.dtype:<8} {t.shape_text()}" for t in specs]
    lines.append("Operators: " + ", ".join(f"{op} ×{n}" for op, n in s.op_types.items()))
    return "\n".join(lines)


def _opset_range(s: ModelSummary) -> str:
    need = f"operators need ≥ {s.min_opset_required}" if s.min_opset_required else "no standard ops"
    if s.max_runtime_opset is None:
        return f"{need}; onnxruntime not found"
    return f"{need}; onnxruntime {s.runtime_version} runs ≤ {s.max_runtime_opset}"


def run(args: argparse.Namespace) -> int:
    """Print the summary; exit 1 when the model has problems that stop it from running."""
    summary = summarize_file(args.model, runtime_info())
    if args.json:
        print(json.dumps(summary.to_json(), indent=2))
    else:
        print(format_summary(summary))
    for problem in summary.problems:
        print(f"edgestudio: error: {problem}", file=sys.stderr)
    return 1 if summary.problems else 0
