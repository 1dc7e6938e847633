"""Reading onnxruntime's profile (Chrome trace JSON): per-node and per-op time, and which
execution provider ran each node. Pure Python, no onnxruntime import."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KERNEL_SUFFIX = "_kernel_time"


def load_events(path: str | Path) -> list[dict[str, Any]]:
    """The trace's events (ORT writes a bare list; Chrome traces wrap it in ``traceEvents``)."""
    data = json.loads(Path(path).read_text())
    return list(data["traceEvents"] if isinstance(data, dict) else data)


@dataclass(frozen=True)
class GraphNode:
    """What the profile mapping needs to know of one model node."""

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def _named_after(
    kernel: str, by_name: dict[str, GraphNode], producer: dict[str, GraphNode]
) -> GraphNode | None:
    """The node a fused kernel is named after: its name, or the longest prefix of it (cut at
    an underscore: ``X_nchwc``, ``X_token_12``) that is a node's name or a node's output."""
    candidate = kernel
    while candidate:
        if candidate in by_name:
            return by_name[candidate]
        if candidate in producer:
            return producer[candidate]
        if "_" not in candidate:
            return None
        candidate = candidate.rsplit("_", 1)[0]
    return None


def _covered(
    kernel: str, op_type: str, by_name: dict[str, GraphNode], producer: dict[str, GraphNode]
) -> list[str]:
    """Model nodes a fused kernel stands for.

    ORT names fused kernels after a node or an output tensor; only whole names count (a tensor
    called ``x`` is not in every kernel whose name contains an x). When the named node is not
    of the kernel's op type (Conv fused with the BatchNormalization or Relu after it), the chain
    is followed up through single-activation producers to the node of that type.
    """
    node = _named_after(kernel, by_name, producer)
    if node is None:
        return []
    chain = [node]
    while chain[-1].op_type != op_type and len(chain) <= 4:
        # Constant nodes feed weights, not activations (many exports keep weights in them).
        activations = [
            t for t in chain[-1].inputs if t in producer and producer[t].op_type != "Constant"
        ]
        if len(activations) != 1:
            break
        chain.append(producer[activations[0]])
    if chain[-1].op_type != op_type:
        chain = [node]
    return list(dict.fromkeys(c.name for c in chain))


def summarize_profile(
    events: list[dict[str, Any]], graph: list[GraphNode], runs: int
) -> dict[str, Any]:
    """Per-node mean time (µs per run), per-op-type totals, and placement by provider.

    Kernels whose name is not a node of the model were created by ORT's fusions; each is
    mapped back to the model nodes it stands for where its name allows, else listed as fused.
    """
    node_names = {n.name for n in graph if n.name}
    producer = {t: n for n in graph for t in n.outputs}
    by_name = {n.name: n for n in graph if n.name}
    per_node: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.get("cat") != "Node" or not str(event.get("name", "")).endswith(KERNEL_SUFFIX):
            continue
        name = str(event["name"])[: -len(KERNEL_SUFFIX)]
        args = event.get("args", {})
        entry = per_node.setdefault(
            name,
            {
                "node": name,
                "op_type": args.get("op_name", "?"),
                "ep": args.get("provider", "?"),
                "time_us": 0.0,
                "calls": 0,
            },
        )
        entry["time_us"] += float(event.get("dur", 0))
        entry["calls"] += 1
    nodes = []
    for entry in per_node.values():
        entry["time_us"] = entry["time_us"] / max(1, runs)  # per inference
        if entry["node"] in node_names:
            entry["fused"] = False
            entry["covers"] = [entry["node"]]
        else:
            entry["fused"] = True
            entry["covers"] = _covered(entry["node"], entry["op_type"], by_name, producer)
        nodes.append(entry)
    nodes.sort(key=lambda e: -e["time_us"])
    total = sum(e["time_us"] for e in nodes) or 1.0
    for e in nodes:
        e["share"] = e["time_us"] / total
    by_op: dict[str, float] = defaultdict(float)
    for e in nodes:
        by_op[e["op_type"]] += e["time_us"]
    placement: dict[str, str] = {}
    for e in nodes:
        for covered in e["covers"]:
            placement[covered] = e["ep"]
    return {
        "nodes": nodes,
        "op_types": sorted(
            ({"op_type": k, "time_us": v, "share": v / total} for k, v in by_op.items()),
            key=lambda r: -r["time_us"],
        ),
        "placement": placement,
        "unplaced": sorted(n for n in node_names if n not in placement),
        "total_us": total if nodes else 0.0,
    }


def placement_summary(
    placement: dict[str, str], op_types: dict[str, str], first_choice: str
) -> tuple[str, list[str]]:
    """("412 nodes on CUDA, 7 on CPU: Resize, NonMaxSuppression", warnings)."""
    counts: dict[str, int] = defaultdict(int)
    fell_back: dict[str, set[str]] = defaultdict(set)
    for node, ep in placement.items():
        counts[ep] += 1
        if ep != first_choice:
            fell_back[ep].add(op_types.get(node, "?"))
    parts = []
    for ep, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        short = ep.removesuffix("ExecutionProvider")
        ops = f": {', '.join(sorted(fell_back[ep]))}" if ep in fell_back else ""
        parts.append(f"{n} node{'s' * (n != 1)} on {short}{ops}")
    warnings = []
    if first_choice != "CPUExecutionProvider" and fell_back:
        moved = sum(counts[ep] for ep in fell_back)
        warnings.append(
            f"{moved} node(s) fell back from {first_choice} to "
            f"{', '.join(sorted(fell_back))}: "
            f"{', '.join(sorted(set().union(*fell_back.values())))}."
        )
    return ", ".join(parts), warnings
