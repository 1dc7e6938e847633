"""The model summary: everything the summary panel and ``edgestudio inspect`` show.

Computed from the parsed protobuf and tensor metadata only: parameter counts and bytes come from
dims and external-data lengths, so no weight is ever loaded.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from edgestudio.core.errors import ModelLoadError
from edgestudio.core.model.dtypes import dtype_bits, dtype_name
from edgestudio.core.model.external_data import (
    ExternalDataFile,
    check_external_data,
    external_refs,
    iter_graph_tensors,
)
from edgestudio.core.model.graph_ir import NodeTable, constant_nodes
from edgestudio.core.model.model_io import load_model
from edgestudio.core.model.opsets import (
    DEFAULT_DOMAIN,
    RUNTIME_DOMAINS,
    iter_nodes,
    max_onnx_opset,
    min_opset_required,
    normalise_domain,
    op_kinds,
    unknown_operators,
)
from edgestudio.core.model.runtime_info import RuntimeInfo
from edgestudio.core.serialise import register_format, without

Dim = int | str | None  # a fixed size, a symbolic name, or unknown


@dataclass(frozen=True)
class TensorSpec:
    """A graph input or output: name, element type and shape (None when the rank is unknown)."""

    name: str
    dtype: str
    shape: list[Dim] | None

    def shape_text(self) -> str:
        """Return the shape as people write it: ``[batch, 1, 8, 8]``, ``?`` for unknown dims."""
        if self.shape is None:
            return "unknown rank"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"


@dataclass
class ModelSummary:
    """Headline facts about one model file."""

    path: str
    file_size: int
    ir_version: int
    opset_imports: dict[str, int]
    producer_name: str
    producer_version: str
    graph_name: str
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    nodes: int
    nodes_in_subgraphs: int
    op_types: dict[str, int]
    parameters: int
    parameter_bytes: int
    initializers: int
    external_data: list[ExternalDataFile]
    metadata: dict[str, str]
    min_opset_required: int | None
    max_onnx_opset: int
    runtime_version: str | None = None
    max_runtime_opset: int | None = None
    problems: list[str] = field(default_factory=list)
    # Top-level nodes that only compute constants (folded into their users in the graph view).
    constant_nodes: int = 0

    @property
    def default_opset(self) -> int | None:
        """The model's opset for the standard (``ai.onnx``) domain."""
        return self.opset_imports.get(DEFAULT_DOMAIN)


# The ``edgestudio inspect --json`` format names the default opset beside the imports.
register_format(
    ModelSummary,
    lambda summary, data: {**data, "default_opset": summary.default_opset},
    without("default_opset"),
)


def value_spec(value: onnx.ValueInfoProto) -> TensorSpec:
    """A graph input or output as a :class:`TensorSpec` (name, element type, shape)."""
    t = value.type
    kind = t.WhichOneof("value")
    if kind == "tensor_type" or kind == "sparse_tensor_type":
        tensor = t.tensor_type if kind == "tensor_type" else t.sparse_tensor_type
        shape: list[Dim] | None = None
        if tensor.HasField("shape"):
            shape = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in tensor.shape.dim
            ]
        return TensorSpec(value.name, dtype_name(tensor.elem_type), shape)
    if kind is None:
        return TensorSpec(value.name, "unknown", None)
    return TensorSpec(value.name, kind.replace("_type", ""), None)


def _tensor_size(tensor: onnx.TensorProto) -> tuple[int, int]:
    """Return (element count, bytes) of a tensor from its metadata alone."""
    count = math.prod(tensor.dims) if tensor.dims else 1
    ref = external_refs(tensor)
    if ref is not None and ref.length is not None:
        return count, ref.length
    bits = dtype_bits(tensor.data_type)
    if bits is None:  # strings: the stored bytes are the size
        return count, sum(len(s) for s in tensor.string_data)
    return count, (count * bits + 7) // 8


def summarize_model(
    model: onnx.ModelProto,
    path: str | Path,
    runtime: RuntimeInfo | None = None,
    constants: Mapping[int, str] | None = None,
    table: NodeTable | None = None,
) -> ModelSummary:
    """Build the summary of an already-parsed model.

    Parameters
    ----------
    model
        The model as parsed by :func:`edgestudio.core.model.model_io.load_model`.
    path
        Where it was read from (for file size and external data).
    runtime
        The installed onnxruntime's facts, when known; enables the runtime opset check.
    constants
        The main graph's :func:`constant_nodes`, when already found (the graph view folds the
        same nodes: found once for both).
    table
        The main graph's :class:`NodeTable`, when already read (shared the same way).

    Raises
    ------
    ModelLoadError
        When an external-data reference breaks our policy or its file is missing.
    """
    path = Path(path)
    graph = model.graph
    external = check_external_data(model, path.parent)
    opsets = {normalise_domain(o.domain): int(o.version) for o in model.opset_import}
    all_nodes = iter_nodes(graph)
    uses = Counter((n.op_type, n.domain) for n in all_nodes)  # one pass: every check reads it
    op_counts: Counter[str] = Counter()
    for (op, domain), n in uses.most_common():
        op_counts[op if normalise_domain(domain) == DEFAULT_DOMAIN else f"{domain}.{op}"] += n
    params = bytes_total = count = 0
    for tensor in iter_graph_tensors(graph):
        n, b = _tensor_size(tensor)
        params += n
        bytes_total += b
        count += 1
    initializer_names = {t.name for t in graph.initializer}

    summary = ModelSummary(
        constant_nodes=len(constant_nodes(graph, table) if constants is None else constants),
        path=str(path),
        file_size=path.stat().st_size,
        ir_version=int(model.ir_version),
        opset_imports=dict(sorted(opsets.items())),
        producer_name=model.producer_name,
        producer_version=model.producer_version,
        graph_name=graph.name,
        inputs=[value_spec(v) for v in graph.input if v.name not in initializer_names],
        outputs=[value_spec(v) for v in graph.output],
        nodes=len(graph.node),
        nodes_in_subgraphs=len(all_nodes) - len(graph.node),
        op_types=dict(op_counts.most_common()),
        parameters=params,
        parameter_bytes=bytes_total,
        initializers=count,
        external_data=external,
        metadata={p.key: p.value for p in model.metadata_props},
        min_opset_required=min_opset_required(model, set(uses)),
        max_onnx_opset=max_onnx_opset(),
        runtime_version=runtime.version if runtime else None,
        max_runtime_opset=runtime.max_opset if runtime else None,
    )
    summary.problems = find_problems(summary, model, set(uses), table)
    return summary


def find_problems(
    summary: ModelSummary,
    model: onnx.ModelProto,
    kinds: set[tuple[str, str]] | None = None,
    table: NodeTable | None = None,
) -> list[str]:
    """Return what would stop this model from running, each as one sentence for the user
    (``kinds``: the model's ``(op_type, domain)`` pairs, ``table`` its main graph's nodes, when
    already read)."""
    problems: list[str] = []
    opset = summary.default_opset
    kinds = op_kinds(model) if kinds is None else kinds
    used_domains = {normalise_domain(domain) for _, domain in kinds}
    uses_default = DEFAULT_DOMAIN in used_domains
    if opset is None and uses_default:
        problems.append("The model uses standard operators but declares no ai.onnx opset.")
    if opset is not None and opset > summary.max_onnx_opset:
        problems.append(
            f"The model declares opset {opset}, but the installed onnx knows opsets up to "
            f"{summary.max_onnx_opset}: it was made by a newer tool or is corrupt."
        )
    elif opset is not None and summary.max_runtime_opset and opset > summary.max_runtime_opset:
        problems.append(
            f"The model declares opset {opset}, but onnxruntime {summary.runtime_version} runs "
            f"opsets up to {summary.max_runtime_opset}: it can be viewed but not run, quantized or "
            "benchmarked until it is converted to a lower opset."
        )
    unknown_domains = sorted(d for d in summary.opset_imports if d not in RUNTIME_DOMAINS)
    for domain in unknown_domains:
        if domain in used_domains:
            problems.append(
                f"The model uses operators of domain '{domain}', which onnxruntime does not "
                "implement (custom operators need their library registered)."
            )
    problems += structural_problems(model.graph, table=table)
    unknown = unknown_operators(model, kinds)
    if unknown:
        problems.append(
            "Operators unknown to onnx in the standard domain: " + ", ".join(unknown) + "."
        )
    return problems


def _sorted_and_whole(table: NodeTable, available: set[str], outputs: set[str]) -> bool:
    """True when every node reads only what the graph's inputs, its weights or an earlier
    node provide, and every graph output is produced: then nothing dangles and nothing
    cycles."""
    for ins, outs in zip(table.inputs, table.outputs, strict=True):
        if not available.issuperset(ins) and any(t and t not in available for t in ins):
            return False
        available.update(outs)
    return outputs <= available


def structural_problems(
    graph: onnx.GraphProto, limit: int = 5, table: NodeTable | None = None
) -> list[str]:
    """Dangling tensor references and cycles in the main graph, named (``table``: its nodes,
    when already read)."""
    table = table or NodeTable.of(graph)
    produced = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    if _sorted_and_whole(table, set(produced), {o.name for o in graph.output}):
        return []  # the ONNX rule holds: no dangling read, no cycle (one pass, not Kahn's)
    producers: dict[str, int] = {}
    for i, outs in enumerate(table.outputs):
        for out in outs:
            produced.add(out)
            producers[out] = i
    problems = []
    dangling = [
        (table.names[i] or table.ops[i], t)
        for i, ins in enumerate(table.inputs)
        for t in ins
        if t and t not in produced
    ]
    if dangling:
        shown = ", ".join(f"'{node}' reads '{t}'" for node, t in dangling[:limit])
        more = f" (+{len(dangling) - limit} more)" if len(dangling) > limit else ""
        problems.append(f"Nodes read tensors that nothing produces: {shown}{more}.")
    missing_outputs = [o.name for o in graph.output if o.name not in produced]
    if missing_outputs:
        problems.append(f"Graph outputs that nothing produces: {', '.join(missing_outputs)}.")
    # Kahn's algorithm over the node graph: whatever never becomes ready sits on a cycle.
    count = len(table.ops)
    indegree = [0] * count
    users: dict[int, list[int]] = {}
    for i, ins in enumerate(table.inputs):
        feeders = {producers[t] for t in ins if t in producers}
        feeders.discard(i)
        for p in feeders:
            indegree[i] += 1
            users.setdefault(p, []).append(i)
    ready = [i for i, d in enumerate(indegree) if d == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for j in users.get(i, []):
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    if seen < count:
        on_cycle = _prune_downstream({i for i, d in enumerate(indegree) if d > 0}, users)
        stuck = [table.names[i] or table.ops[i] for i in sorted(on_cycle)]
        problems.append(
            f"The graph has a cycle (through {', '.join(stuck[:limit])}"
            f"{'…' if len(stuck) > limit else ''}); ONNX graphs must be acyclic."
        )
    return problems


def _prune_downstream(stuck: set[int], users: dict[int, list[int]]) -> set[int]:
    """Of the nodes Kahn's algorithm could not order, keep those on a cycle.

    The stuck set also holds everything downstream of a cycle; peeling off, again and again,
    nodes none of whose users are stuck leaves the cycles themselves.
    """
    feeders: dict[int, list[int]] = {}
    out_degree = dict.fromkeys(stuck, 0)
    for i in stuck:
        for u in users.get(i, []):
            if u in stuck:
                out_degree[i] += 1
                feeders.setdefault(u, []).append(i)
    leaves = [i for i, d in out_degree.items() if d == 0]
    remaining = set(stuck)
    while leaves:  # Kahn's algorithm again, backwards, within the stuck nodes
        i = leaves.pop()
        remaining.discard(i)
        for f in feeders.get(i, []):
            out_degree[f] -= 1
            if out_degree[f] == 0:
                leaves.append(f)
    return remaining or stuck


def summarize_file(path: str | Path, runtime: RuntimeInfo | None = None) -> ModelSummary:
    """Parse ``path`` (weights left on disk) and summarise it. Raises ModelLoadError."""
    model = load_model(path)
    try:
        return summarize_model(model, path, runtime)
    except ModelLoadError:
        raise
    except Exception as exc:  # a structure we did not foresee: classified, never a crash
        raise ModelLoadError(
            f"{Path(path).name} is malformed ({type(exc).__name__}: {exc}).", "malformed"
        ) from exc
