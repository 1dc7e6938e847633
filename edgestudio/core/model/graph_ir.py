"""The graph as the views see it: numbered nodes (operators plus graph inputs and outputs),
directed edges between them labelled by tensor, and lookups by name.

Built from the parsed protobuf only (no weights are loaded), in one linear pass. By default the
nodes that only compute constants — ``Constant`` nodes and chains that read nothing but weights
and constants (a Cast or Reshape of a weight, the DequantizeLinear of a stored int8 weight) — are
folded into the nodes that use them, as Netron does: a model's data flow is what is left.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx

from edgestudio.core.model.dtypes import dtype_name


class NodeKind(enum.IntEnum):
    """What a graph node stands for."""

    OPERATOR = 0
    INPUT = 1
    OUTPUT = 2


@dataclass(frozen=True)
class TensorInfo:
    """Element type and shape of a tensor, when known (``shape`` None: rank unknown)."""

    dtype: str
    shape: tuple[int | str | None, ...] | None

    def text(self) -> str:
        """``float32[batch, 3, 224, 224]``."""
        if self.shape is None:
            return self.dtype
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"


@dataclass
class GraphIR:
    """Nodes and edges of one graph (the main graph or a subgraph).

    Node ``i`` is ``onnx_nodes[i]`` for ``i < len(onnx_nodes)`` (the graph's operators, less the
    folded constant ones); graph inputs, then graph outputs, follow as pseudo-nodes.
    """

    name: str
    names: list[str]
    op_types: list[str]
    kinds: np.ndarray  # int8 NodeKind per node
    edge_src: np.ndarray  # int32
    edge_dst: np.ndarray  # int32
    edge_tensor: list[str]
    node_inputs: list[list[str]]
    node_outputs: list[list[str]]
    initializer_names: set[str]
    onnx_nodes: list[onnx.NodeProto | None]  # None: a closed group (see core.model.groups)
    tensor_info: dict[str, TensorInfo] = field(default_factory=dict)
    # Folded constants: tensor -> the ops that compute it, input side first ("Constant",
    # "DequantizeLinear", …), and the folded nodes' names (a search for one finds its consumer).
    constants: dict[str, list[str]] = field(default_factory=dict)
    folded_names: dict[str, str] = field(default_factory=dict)  # folded node -> its tensor
    # Closed groups (core.model.groups): node -> the names of the operators inside, and each
    # hidden operator's name -> the group node that holds it; labels and op mixes to draw.
    members: dict[int, list[str]] = field(default_factory=dict)
    hidden: dict[str, int] = field(default_factory=dict)
    group_labels: dict[int, str] = field(default_factory=dict)
    group_mix: dict[int, str] = field(default_factory=dict)

    def is_group(self, index: int) -> bool:
        """True for a closed group's node."""
        return index in self.members

    @property
    def folded_count(self) -> int:
        """How many operators were folded into their consumers."""
        return len(self.folded_names)

    def is_constant(self, tensor: str) -> bool:
        """True for a weight or a folded constant (drawn as a badge, not as an edge)."""
        return tensor in self.initializer_names or tensor in self.constants

    @property
    def node_count(self) -> int:
        """Number of nodes including graph input/output pseudo-nodes."""
        return len(self.names)

    def onnx_node(self, index: int) -> onnx.NodeProto | None:
        """The protobuf node behind ``index`` (None for input/output pseudo-nodes)."""
        return self.onnx_nodes[index] if index < len(self.onnx_nodes) else None

    def find(self, text: str) -> list[int]:
        """Nodes whose name, op type or any input/output tensor name contains ``text``
        (case-insensitive), in node order."""
        needle = text.strip().lower()
        if not needle:
            return []
        return [
            i
            for i in range(self.node_count)
            if needle in self.names[i].lower()
            or needle in self.op_types[i].lower()
            or any(needle in t.lower() for t in self.node_inputs[i])
            or any(needle in t.lower() for t in self.node_outputs[i])
        ]

    def index_of(self, name: str) -> int | None:
        """The node called ``name`` (operator name, or the tensor name of an input/output); for a
        folded constant node, the first node that uses its value; for an operator inside a
        closed group, the group."""
        try:
            return self.names.index(name)
        except ValueError:
            pass
        if name in self.hidden:
            return self.hidden[name]
        tensor = self.folded_names.get(name)
        if tensor is None:
            return None
        return next((i for i, inputs in enumerate(self.node_inputs) if tensor in inputs), None)


def _value_info(value: onnx.ValueInfoProto) -> TensorInfo | None:
    t = value.type
    if not t.HasField("tensor_type"):
        return None
    tensor = t.tensor_type
    shape = None
    if tensor.HasField("shape"):
        shape = tuple(
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in tensor.shape.dim
        )
    return TensorInfo(dtype_name(tensor.elem_type), shape)


def collect_tensor_info(graph: onnx.GraphProto) -> dict[str, TensorInfo]:
    """Types and shapes the graph already declares (inputs, outputs, value_info, weights)."""
    info: dict[str, TensorInfo] = {}
    for value in [*graph.input, *graph.output, *graph.value_info]:
        ti = _value_info(value)
        if ti is not None:
            info[value.name] = ti
    for init in graph.initializer:
        info[init.name] = TensorInfo(dtype_name(init.data_type), tuple(int(d) for d in init.dims))
    return info


# Ops whose output is not a function of their inputs: never folded.
NONDETERMINISTIC_OPS = frozenset(
    {
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
    }
)


@dataclass(frozen=True)
class NodeTable:
    """A graph's nodes read out of protobuf once: op types, names, input and output tensors.

    Reading ``node.input`` of 50k protobuf nodes costs ~0.2 s a pass; opening a model needed
    four such passes (constants, problems, the graph's IR) before the table was shared.
    """

    ops: list[str]
    names: list[str]
    inputs: list[list[str]]
    outputs: list[list[str]]

    @classmethod
    def of(cls, graph: onnx.GraphProto) -> NodeTable:
        """Read ``graph``'s nodes (its own, not its subgraphs')."""
        nodes = list(graph.node)
        return cls(
            [n.op_type for n in nodes],
            [n.name for n in nodes],
            [list(n.input) for n in nodes],
            [list(n.output) for n in nodes],
        )


def constant_nodes(graph: onnx.GraphProto, table: NodeTable | None = None) -> dict[int, str]:
    """Nodes that compute only constants, with the tensor each yields (the first output);
    ``table``: the graph's :class:`NodeTable`, when already read.

    A node is constant when it is a ``Constant``, or when every input it reads is a weight or
    another constant node's output; random ops, nodes with subgraphs and nodes whose output is
    a graph output stay visible.
    """
    table = table or NodeTable.of(graph)
    return _constant_indices(
        table.ops,
        table.inputs,
        table.outputs,
        {t.name for t in graph.initializer},
        {v.name for v in graph.output},
    )


def _constant_indices(
    ops: list[str],
    inputs: list[list[str]],
    outputs: list[list[str]],
    initializers: set[str],
    graph_outputs: set[str],
) -> dict[int, str]:
    constant_tensors = set(initializers)
    produced: set[str] = set()
    found: dict[int, str] = {}
    unsorted = False
    for _ in range(len(ops) + 1):  # one pass for a topologically sorted graph (the ONNX rule)
        changed = False
        for i, op in enumerate(ops):
            outs = outputs[i]
            if not unsorted:
                produced.update(outs)
            if i in found or not outs or op in NONDETERMINISTIC_OPS or op in SUBGRAPH_OPS:
                continue
            ins = [t for t in inputs[i] if t]
            if not unsorted and any(t not in produced and t not in initializers for t in ins):
                unsorted = True  # reads a tensor made later: more passes may find more
            if (op == "Constant" or (ins and all(t in constant_tensors for t in ins))) and not any(
                o in graph_outputs for o in outs
            ):
                found[i] = outs[0]
                constant_tensors.update(o for o in outs if o)
                changed = True
        if not (unsorted and changed):
            return found
    return found


def _constant_chains(graph: onnx.GraphProto, folded: Mapping[int, str]) -> dict[str, list[str]]:
    """For each folded tensor, the op types that compute it (inputs first)."""
    producer = {
        graph.node[i].output[k]: i
        for i in folded
        for k in range(len(graph.node[i].output))
        if graph.node[i].output[k]
    }
    chains: dict[str, list[str]] = {}

    def chain(tensor: str, depth: int = 0) -> list[str]:
        if tensor in chains:
            return chains[tensor]
        i = producer.get(tensor)
        if i is None or depth > 50:
            return []
        node = graph.node[i]
        before = max((chain(t, depth + 1) for t in node.input if t), key=len, default=[])
        chains[tensor] = [*before, node.op_type]
        return chains[tensor]

    for tensor in producer:
        chain(tensor)
    return chains


def build_graph_ir(
    graph: onnx.GraphProto,
    fold_constants: bool = True,
    constants: Mapping[int, str] | None = None,
    table: NodeTable | None = None,
) -> GraphIR:
    """Number the nodes of ``graph`` and connect them through their tensors; with
    ``fold_constants`` the nodes that only compute constants are left out (see
    :func:`constant_nodes`; ``constants``: its result for this graph, when already known) and
    their values shown on the nodes that use them. ``table``: the graph's :class:`NodeTable`,
    when already read."""
    table = table or NodeTable.of(graph)
    all_ops, all_inputs, all_outputs = table.ops, table.inputs, table.outputs
    initializers = {t.name for t in graph.initializer}
    folded: Mapping[int, str] = {}
    if fold_constants:
        folded = (
            constants
            if constants is not None
            else _constant_indices(
                all_ops, all_inputs, all_outputs, initializers, {v.name for v in graph.output}
            )
        )
    kept = [i for i in range(len(all_ops)) if i not in folded]
    every = list(graph.node)  # one pass over the protobuf list: indexing it is slow
    nodes = [every[i] for i in kept] if folded else every
    graph_inputs = [v.name for v in graph.input if v.name not in initializers]
    graph_outputs = [v.name for v in graph.output]

    # Unnamed nodes are called after their place in the file, folded or not.
    names = [table.names[i] or f"{all_ops[i]}_{i}" for i in kept]
    op_types = [all_ops[i] for i in kept]
    node_inputs = [all_inputs[i] for i in kept]
    node_outputs = [all_outputs[i] for i in kept]
    kinds = [NodeKind.OPERATOR] * len(nodes)

    producer: dict[str, int] = {}
    for i, outs in enumerate(node_outputs):
        for out in outs:
            if out:
                producer[out] = i
    for name in graph_inputs:
        producer[name] = len(names)
        names.append(name)
        op_types.append("Input")
        node_inputs.append([])
        node_outputs.append([name])
        kinds.append(NodeKind.INPUT)

    src: list[int] = []
    dst: list[int] = []
    tensors: list[str] = []
    for i, n in enumerate(nodes):
        plain = op_types[i] not in SUBGRAPH_OPS and n.domain in ("", "ai.onnx")
        for tensor in (t for t in node_inputs[i] if t) if plain else _consumed(n):
            j = producer.get(tensor)
            if j is not None and j != i:
                src.append(j)
                dst.append(i)
                tensors.append(tensor)
    for name in graph_outputs:
        k = len(names)
        names.append(name)
        op_types.append("Output")
        node_inputs.append([name])
        node_outputs.append([])
        kinds.append(NodeKind.OUTPUT)
        j = producer.get(name)
        if j is not None:
            src.append(j)
            dst.append(k)
            tensors.append(name)

    return GraphIR(
        name=graph.name,
        names=names,
        op_types=op_types,
        kinds=np.array(kinds, dtype=np.int8),
        edge_src=np.array(src, dtype=np.int32),
        edge_dst=np.array(dst, dtype=np.int32),
        edge_tensor=tensors,
        node_inputs=node_inputs,
        node_outputs=node_outputs,
        initializer_names=initializers,
        onnx_nodes=nodes,
        tensor_info=collect_tensor_info(graph),
        constants=_constant_chains(graph, folded) if folded else {},
        folded_names={
            graph.node[i].name or f"{graph.node[i].op_type}_{i}": tensor
            for i, tensor in folded.items()
        },
    )


SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def _consumed(node: onnx.NodeProto) -> list[str]:
    """Tensors a node reads, including outer-scope tensors its subgraphs use."""
    names = [t for t in node.input if t]
    if node.op_type not in SUBGRAPH_OPS and node.domain in ("", "ai.onnx"):
        return names  # standard ops without subgraphs: skip the attribute scan
    for attr in node.attribute:
        subgraphs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
        for sub in subgraphs:
            local = {v.name for v in sub.input} | {t.name for t in sub.initializer}
            for inner in sub.node:
                local.update(inner.output)
            for inner in sub.node:
                names += [t for t in _consumed(inner) if t and t not in local]
    return names


def subgraphs(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    """The (attribute name, graph) pairs of an If/Loop/Scan node."""
    found: list[tuple[str, onnx.GraphProto]] = []
    for attr in node.attribute:
        if attr.HasField("g"):
            found.append((attr.name, attr.g))
        found += [(f"{attr.name}[{i}]", g) for i, g in enumerate(attr.graphs)]
    return found
