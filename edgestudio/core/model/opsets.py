"""What opsets a model's operators need, from onnx's own operator schemas."""

from __future__ import annotations

from functools import lru_cache

import onnx
import onnx.defs

from edgestudio.core.model.op_categories import QUANTIZED_OPS

DEFAULT_DOMAIN = "ai.onnx"

# Domains onnxruntime implements besides the standard one (its contrib and internal ops).
RUNTIME_DOMAINS = frozenset(
    {
        "",
        DEFAULT_DOMAIN,
        "ai.onnx.ml",
        "com.microsoft",
        "com.microsoft.nchwc",
        "com.microsoft.dml",
        "ai.onnx.preview.training",
        "com.ms.internal.nhwc",
    }
)


def normalise_domain(domain: str) -> str:
    """Return the canonical name of an operator domain (``""`` is ``"ai.onnx"``)."""
    return DEFAULT_DOMAIN if domain in ("", DEFAULT_DOMAIN) else domain


@lru_cache(maxsize=1)
def _introduced_in() -> dict[tuple[str, str], int]:
    """Map (domain, op_type) to the opset that first defined the operator."""
    first: dict[tuple[str, str], int] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        key = (normalise_domain(schema.domain), schema.name)
        first[key] = min(first.get(key, schema.since_version), schema.since_version)
    return first


def op_introduced_in(op_type: str, domain: str = "") -> int | None:
    """Return the opset that introduced ``op_type`` (None when onnx does not know it)."""
    return _introduced_in().get((normalise_domain(domain), op_type))


def max_onnx_opset() -> int:
    """Return the newest default-domain opset the installed onnx package knows."""
    return int(onnx.defs.onnx_opset_version())


def iter_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """Return every node of ``graph`` including the nodes of its subgraphs (If/Loop/Scan bodies)."""
    out: list[onnx.NodeProto] = []
    stack = [graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            out.append(node)
            for attr in node.attribute:
                if attr.HasField("g"):
                    stack.append(attr.g)
                stack.extend(attr.graphs)
    return out


def op_kinds(model: onnx.ModelProto) -> set[tuple[str, str]]:
    """Every ``(op_type, domain)`` the model's nodes use, subgraphs included (what the per-op
    checks need: one pass over a 50k-node graph instead of one per check)."""
    return {(node.op_type, node.domain) for node in iter_nodes(model.graph)}


def min_opset_required(
    model: onnx.ModelProto, kinds: set[tuple[str, str]] | None = None
) -> int | None:
    """Return the lowest default-domain opset that defines every standard operator of ``model``
    (its :func:`op_kinds` when already known).

    This is where each operator was introduced; a conversion below it cannot succeed.
    None when the model uses no standard operator.
    """
    needed = [
        op_introduced_in(op, domain)
        for op, domain in (op_kinds(model) if kinds is None else kinds)
        if normalise_domain(domain) == DEFAULT_DOMAIN
    ]
    known = [v for v in needed if v is not None]
    return max(known) if known else None


def unknown_operators(
    model: onnx.ModelProto, kinds: set[tuple[str, str]] | None = None
) -> list[str]:
    """Return the standard-domain op types that onnx has no schema for (sorted, unique)."""
    return sorted(
        {
            op
            for op, domain in (op_kinds(model) if kinds is None else kinds)
            if normalise_domain(domain) == DEFAULT_DOMAIN and op_introduced_in(op) is None
        }
    )


def quantized_ops_in(model: onnx.ModelProto) -> list[str]:
    """The quantized operators the model contains, sorted (empty for a float model)."""
    return sorted({n.op_type for n in iter_nodes(model.graph)} & QUANTIZED_OPS)
