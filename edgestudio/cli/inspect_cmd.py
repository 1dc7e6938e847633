"""``edgestudio inspect MODEL [--json]``: print a model's summary without opening a window."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgestudio.cli.job_ui import add_input_args
from edgestudio.cli.json_option import add_json_option, write_json
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.formatting import human_bytes
from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.command import positional, spelled
from edgestudio.core.model.runtime_info import runtime_info
from edgestudio.core.serialise import to_json

if TYPE_CHECKING:
    from edgestudio.core.model.cost_recipe import ModelCost
    from edgestudio.core.model.summary import ModelSummary
    from edgestudio.core.model.tensor_shapes import TensorShapes


@dataclass(frozen=True)
class Inspection:
    """What ``inspect`` prints beyond the summary (its flags, declared once)."""

    model: str = positional(help="path to an .onnx file")
    shapes: bool = spelled(
        False,
        "--shapes",
        help="also run shape inference (in a worker) and list every tensor's shape",
    )
    cost: bool = spelled(
        False,
        "--cost",
        help="also count every node's MACs, FLOPs, parameters and output bytes, and the peak "
        "activation memory, at the input sizes (derived, or --shape)",
    )
    top: int = spelled(
        15, "--top", help="with --cost: list this many nodes, most MACs first (default 15)"
    )


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``inspect`` subcommand."""
    p = subparsers.add_parser(
        "inspect", help="print a model's summary", description="Print a model's summary."
    )
    add_spelled(p, Inspection)
    add_json_option(p, "the summary")
    add_input_args(p)
    p.set_defaults(func=run)


def format_summary(s: ModelSummary) -> str:
    """Return the human-readable text form of a summary."""
    rows = [
        ("File", f"{s.path} ({human_bytes(s.file_size)})"),
        ("IR version", str(s.ir_version)),
        ("Opsets", ", ".join(f"{d} {v}" for d, v in s.opset_imports.items()) or "none"),
        ("Producer", f"{s.producer_name} {s.producer_version}".strip() or "unknown"),
        ("Graph", s.graph_name or "(unnamed)"),
        (
            "Nodes",
            f"{s.nodes:,}"
            + (f" (+{s.nodes_in_subgraphs:,} in subgraphs)" if s.nodes_in_subgraphs else "")
            + (f", {s.constant_nodes:,} only compute constants" if s.constant_nodes else ""),
        ),
        ("Parameters", f"{s.parameters:,} ({human_bytes(s.parameter_bytes)})"),
        ("Opset range", _opset_range(s)),
    ]
    for ext in s.external_data:
        rows.append(
            (
                "External data",
                f"{ext.location} ({human_bytes(ext.size_bytes)}, {ext.tensor_count} tensors)",
            )
        )
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
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job

    job = run_job(ShapesRecipe(model=model), timeout=600)
    if job.state is not JobState.SUCCEEDED or job.report is None:
        raise EdgeStudioError(f"shape inference {job.state.value}: {job.error}")
    for warning in job.warnings:
        print(f"edgestudio: warning: {warning}", file=sys.stderr)
    return job.report.result.tensors


def _count_cost(model: str, args: argparse.Namespace) -> ModelCost:
    from edgestudio.core.model.cost_recipe import CostRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job

    job = run_job(
        CostRecipe(model=model, shapes=tuple(args.shape), ranges=tuple(args.range)),
        timeout=1800,
    )
    if job.state is not JobState.SUCCEEDED or job.report is None:
        raise EdgeStudioError(f"counting the cost {job.state.value}: {job.error}")
    for warning in job.warnings:
        print(f"edgestudio: warning: {warning}", file=sys.stderr)
    return job.report.result


NODE_CHARS = 56  # a node's name in the cost table: exporters' paths run to hundreds


def middle_cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, its middle replaced by "…" (the start names the
    block, the end the layer; --json keeps every name whole)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return f"{text[:head]}…{text[len(text) - (limit - 1 - head) :]}"


def print_cost(cost: ModelCost, top: int) -> None:
    """The totals, then the ``top`` nodes by MACs as a table."""
    from edgestudio.cli.output import print_table

    t = cost.total
    print(f"Cost at {cost.inputs_text()}:")
    print(f"  MACs {t.macs:,} ({t.macs / 1e9:.3g} G), FLOPs {t.flops:,}")
    print(
        f"  parameters {t.params:,} ({human_bytes(t.param_bytes)}), peak activation memory "
        f"{human_bytes(t.peak_activation_bytes)}"
    )
    if cost.unknown:
        print(f"  {len(cost.unknown)} node(s) of unknown shape counted as 0")
    for node in cost.bodies:  # work inside Loop/Scan/If bodies, and how it was counted
        print(f"  {node.node} ({node.op}): {node.body}")
    ranked = sorted(cost.nodes, key=lambda n: -n.macs)[: max(0, top)]
    print_table(
        ["node", "op", "MACs", "share", "params", "output"],
        [
            [
                middle_cut(n.node, NODE_CHARS),
                n.op,
                f"{n.macs:,}",
                f"{n.macs / max(1, t.macs):.1%}",
                f"{n.params:,}",
                human_bytes(n.output_bytes),
            ]
            for n in ranked
        ],
        title=f"The {len(ranked)} nodes with the most MACs:",
        numeric=(2, 3, 4, 5),
    )


def run(args: argparse.Namespace) -> int:
    """Print the summary; exit 1 when the model has problems that stop it from running."""
    from edgestudio.core.model.summary import summarize_file  # onnx: imported only when needed

    asked = Inspection(**spelled_values(args, Inspection))
    summary = summarize_file(asked.model, runtime_info())
    shapes = _infer_shapes(asked.model) if asked.shapes else None
    cost = _count_cost(asked.model, args) if asked.cost else None
    if args.json:
        data = to_json(summary)
        if shapes is not None:
            data["tensors"] = {
                k: {"dtype": dtype, "shape": shape} for k, (dtype, shape) in shapes.items()
            }
        if cost is not None:
            data["cost"] = to_json(cost)
        write_json(args.json, data)
    # the human-readable form (on standard error with --json -)
    print(format_summary(summary))
    if shapes is not None:
        from edgestudio.cli.output import print_table

        print_table(
            ["tensor", "dtype", "shape"],
            [
                [
                    name,
                    dtype,
                    "?"
                    if shape is None
                    else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]",
                ]
                for name, (dtype, shape) in shapes.items()
            ],
            title="Tensors:",
        )
    if cost is not None:
        print_cost(cost, asked.top)
    for problem in summary.problems:
        print(f"edgestudio: error: {problem}", file=sys.stderr)
    return 1 if summary.problems else 0
