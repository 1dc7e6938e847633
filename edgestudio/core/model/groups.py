"""Hierarchical groups: nodes grouped by their name scope, drawn collapsed until opened.

Exporters name nodes after the module that made them (``/encoder/layer.3/attention/MatMul``);
those scopes make a tree, and a big graph reads best as its top blocks, opened one by one
(Model Explorer's idea). :func:`grouped_ir` turns a flat :class:`GraphIR` and the set of opened
groups into the IR the view draws: each closed group one node, edges between groups merged.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx

from edgestudio.core.model.graph_ir import GraphIR, NodeKind

GROUP_OP = "Group"  # the op type of a closed group's node
FLAT_BELOW = 200  # graphs with fewer operators open fully expanded
FIRST_VIEW_UNITS = 60  # open whole levels while the first view stays below this many boxes


@dataclass
class Group:
    """One name scope: its sub-scopes and the nodes directly in it (flat IR indices)."""

    path: str
    parent: str | None
    children: list[str] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    size: int = 0  # operators inside, at any depth
    ops: Counter[str] = field(default_factory=Counter)
    # Filled once by GroupTree.build, for drawing the group closed:
    members: list[int] = field(default_factory=list)  # operators inside, at any depth
    inputs: list[str] = field(default_factory=list)  # tensors it reads from outside
    outputs: list[str] = field(default_factory=list)
    mix_text: str = ""

    @property
    def label(self) -> str:
        """The scope's own name (its last segment)."""
        return self.path.rsplit("/", 1)[-1] or "(model)"

    def mix(self, top: int = 3) -> str:
        """The commonest op types inside: ``MatMul×6 Add×4 Softmax``."""
        return " ".join(f"{op}×{n}" if n > 1 else op for op, n in self.ops.most_common(top))


def _scope(name: str) -> list[str]:
    """``/encoder/layer.3/attention/MatMul`` -> ``["encoder", "layer.3", "attention"]``."""
    parts = [p for p in name.split("/") if p]
    return parts[:-1]


@dataclass
class GroupTree:
    """Every scope with at least two operators, under the root ``""``."""

    groups: dict[str, Group]
    depth_of: dict[str, int]
    home: dict[int, str] = field(default_factory=dict)  # operator -> its innermost group
    note: str = ""  # how groups were found where the names had no scopes (said in the bar)

    @classmethod
    def build(cls, ir: GraphIR) -> GroupTree:
        """Group ``ir``'s operators by name scope (scopes holding one operator are dropped)."""
        by_scope: dict[str, list[int]] = {}  # the nodes of each distinct scope, in order
        for i in np.flatnonzero(ir.kinds == NodeKind.OPERATOR).tolist():
            by_scope.setdefault("/".join(_scope(ir.names[i])), []).append(i)
        totals: Counter[str] = Counter()  # operators under each scope, at any depth
        for scope, nodes in by_scope.items():
            parts = scope.split("/") if scope else []
            for k in range(1, len(parts) + 1):
                totals["/".join(parts[:k])] += len(nodes)
        groups = {"": Group("", None)}
        depth_of = {"": 0}
        for scope, nodes in by_scope.items():  # distinct scopes: far fewer than nodes
            parent = ""
            parts = scope.split("/") if scope else []
            for k in range(1, len(parts) + 1):
                path = "/".join(parts[:k])
                if totals[path] < 2:
                    break  # a scope of one operator is no group
                if path not in groups:
                    groups[path] = Group(path, parent)
                    groups[parent].children.append(path)
                    depth_of[path] = depth_of[parent] + 1
                parent = path
            groups[parent].nodes.extend(nodes)
        note = ""
        if not groups[""].children and len(groups[""].nodes) >= FLAT_BELOW:
            # No scopes in the names (torch.export, Keras, Paddle): the layers a model repeats,
            # else cuts at the narrow points.
            note = _repeated_layers(ir, groups, depth_of) or _stages(ir, groups, depth_of)
        home = {i: path for path, group in groups.items() for i in group.nodes}
        for path in sorted(groups, key=lambda p: -depth_of[p]):  # bottom up
            group = groups[path]
            group.members = list(group.nodes)
            for child in group.children:
                group.members += groups[child].members
            group.size = len(group.members)
        return cls(groups, depth_of, home, note)

    def describe(self, path: str, ir: GraphIR) -> Group:
        """``path``'s group with its op mix and outside tensors filled in (once, when it is
        first drawn closed)."""
        group = self.groups[path]
        if not group.mix_text and group.members:
            group.ops = Counter(ir.op_types[i] for i in group.members)
            produced = {t for i in group.members for t in ir.node_outputs[i]}
            group.outputs = sorted(produced)
            group.inputs = sorted({t for i in group.members for t in ir.node_inputs[i]} - produced)
            group.mix_text = group.mix()
        return group

    def first_view(self) -> set[str]:
        """The groups to open at first: everything for a small graph; else whole levels, from
        the top, while the view stays readable."""
        root = self.groups[""]
        if root.size < FLAT_BELOW:
            return set(self.groups)
        opened = {""}
        level = [""]
        while True:
            deeper = [c for p in level for c in self.groups[p].children]
            if not deeper:
                return opened
            trial = opened | set(deeper)
            if len(self.units(trial)) > FIRST_VIEW_UNITS:
                return opened
            opened, level = trial, deeper

    def units(self, opened: set[str]) -> list[tuple[str, int | str]]:
        """What is drawn: ``("node", index)`` and ``("group", path)`` for closed groups."""
        out: list[tuple[str, int | str]] = []

        def walk(path: str) -> None:
            group = self.groups[path]
            for child in group.children:
                if child in opened:
                    walk(child)
                else:
                    out.append(("group", child))
            out.extend(("node", i) for i in group.nodes)

        walk("")
        return out

    def path_to(self, node: int, ir: GraphIR) -> list[str]:
        """The groups that hold operator ``node``, outermost first (what to open to show it)."""
        path = self.home.get(node, "")
        chain = []
        while path:
            chain.append(path)
            path = self.groups[path].parent or ""
        return chain[::-1]


STAGE_SIZE = 24  # operators a stage of an unscoped graph gathers, at least


def _alive(ir: GraphIR, order: list[int]) -> np.ndarray:
    """How many tensors flow on after each position of ``order`` (operators in file order)."""
    position = np.full(ir.node_count, -1, dtype=np.int64)
    position[order] = np.arange(len(order))
    src, dst = position[ir.edge_src], position[ir.edge_dst]
    inner = (src >= 0) & (dst > src)  # between operators (graph inputs stay out)
    last_use: dict[tuple[int, str], int] = {}
    for s, d, tensor in zip(
        src[inner].tolist(),
        dst[inner].tolist(),
        [t for t, k in zip(ir.edge_tensor, inner.tolist(), strict=True) if k],
        strict=True,
    ):
        key = (s, tensor)
        last_use[key] = max(last_use.get(key, d), d)
    live = np.zeros(len(order) + 1, dtype=np.int64)  # tensors alive after each position
    for (s, _), d in last_use.items():
        live[s] += 1
        live[d] -= 1
    return np.cumsum(live)


MIN_LAYER = 8  # operators in a repeated layer, at least (shorter repeats are motifs)
MAX_LAYERS = 96  # more copies than this read better as stages
MAX_PERIOD = 2000  # the longest layer looked for (a 50k-node graph stays quick)


def _period(codes: np.ndarray) -> tuple[int, int, int] | None:
    """The repeat that covers most operators: ``(start, period, copies)`` of the longest run
    where the op-type sequence equals itself shifted by ``period`` (the shortest such period),
    at least 3 copies of :data:`MIN_LAYER` operators covering half the graph."""
    n = len(codes)
    best: tuple[int, int, int, int] | None = None  # (covered, -period, start, copies)
    # Half the graph in at most MAX_LAYERS copies bounds the period from below; the work
    # (one pass per period) stays under ~2e7 comparisons from above.
    lowest = max(MIN_LAYER, n // (2 * MAX_LAYERS))
    for period in range(lowest, min(MAX_PERIOD, n // 3, 20_000_000 // max(n, 1)) + 1):
        same = np.concatenate(([0], (codes[:-period] == codes[period:]).astype(np.int8), [0]))
        edges = np.flatnonzero(np.diff(same))
        if not len(edges):
            continue
        starts, ends = edges[::2], edges[1::2]
        k = int(np.argmax(ends - starts))
        copies = (int(ends[k] - starts[k]) + period) // period
        key = (copies * period, -period, int(starts[k]), copies)
        if copies >= 3 and (best is None or key[:2] > best[:2]):
            best = key
    if best is None or best[0] < n // 2:
        return None
    _, neg_period, start, copies = best
    return start, -neg_period, copies


def _repeated_layers(ir: GraphIR, groups: dict[str, Group], depth_of: dict[str, int]) -> str:
    """Group an unscoped graph by the layer it repeats (a transformer's N encoder layers, a
    CNN's blocks): ``layer 1`` … ``layer N``, each the same sequence of operators, cut where
    the fewest tensors flow between copies. Returns what was found, or "" (nothing repeats
    enough: the caller cuts stages instead)."""
    root = groups[""]
    order = root.nodes  # the file's order: topological, and a traced model's layer by layer
    kinds: dict[str, int] = {}
    codes = np.array([kinds.setdefault(ir.op_types[i], len(kinds)) for i in order], dtype=np.int32)
    found = _period(codes)
    if found is None:
        return ""
    start, period, copies = found
    alive = _alive(ir, order)
    # Any rotation of the layer repeats too: start where the fewest tensors cross the cut.
    span = copies * period
    shift = min(
        range(period),
        key=lambda r: (
            int(alive[start + r - 1]) if start + r > 0 else 0,
            -((span - r) // period),
            r,
        ),
    )
    first, count = start + shift, (span - shift) // period
    # The rotation may have cut a copy off an end: take whole copies back on both sides.
    while first >= period and np.array_equal(
        codes[first - period : first], codes[first : first + period]
    ):
        first, count = first - period, count + 1
    while first + (count + 1) * period <= len(codes) and np.array_equal(
        codes[first + count * period : first + (count + 1) * period], codes[first : first + period]
    ):
        count += 1
    if count < 3 or count > MAX_LAYERS:
        return ""
    root.nodes = [order[k] for k in range(first)]
    for number in range(1, count + 1):
        path = f"layer {number}"
        lo = first + (number - 1) * period
        groups[path] = Group(path, "", nodes=[order[k] for k in range(lo, lo + period)])
        root.children.append(path)
        depth_of[path] = 1
    root.nodes += [order[k] for k in range(first + count * period, len(order))]
    mix = Counter(ir.op_types[i] for i in groups["layer 1"].nodes)
    said = " ".join(f"{op}×{n}" if n > 1 else op for op, n in mix.most_common(3))
    return (
        f"no name scopes: {count} repeated layers of {period} operators ({said}…) "
        f"found, drawn as layer 1–{count}"
    )


def _stages(ir: GraphIR, groups: dict[str, Group], depth_of: dict[str, int]) -> str:
    """Group an unscoped graph into stages: runs of operators between the points where only
    one tensor flows on (the ends of a CNN's blocks, a decoder's steps), each at least
    :data:`STAGE_SIZE` operators. The stages replace the root's flat list of nodes."""
    root = groups[""]
    order = root.nodes  # the file's order: topological (the ONNX rule)
    alive = _alive(ir, order)
    stages = _cut(list(range(len(order))), alive, 1)
    if len(stages) < 2:
        return ""  # no narrow point: the graph stays flat
    root.nodes = []
    for number, positions in enumerate(stages, start=1):
        path = f"stage {number}"
        group = groups[path] = Group(path, "")
        root.children.append(path)
        depth_of[path] = 1
        # A big stage (a detector's neck…) is cut again where the fewest tensors flow on.
        parts = (
            _cut(positions, alive, int(alive[positions[:-1]].min()))
            if len(positions) > 4 * STAGE_SIZE
            else [positions]
        )
        if len(parts) < 2:
            group.nodes = [order[k] for k in positions]
            continue
        for sub, part in enumerate(parts, start=1):
            child = f"{path}.{sub}"
            groups[child] = Group(child, path, nodes=[order[k] for k in part])
            group.children.append(child)
            depth_of[child] = 2
    return (
        f"no name scopes and no repeated layer: cut into {len(stages)} stages where the "
        "fewest tensors flow on"
    )


def _cut(positions: list[int], alive: np.ndarray, narrow: int) -> list[list[int]]:
    """Runs of ``positions`` ended where at most ``narrow`` tensors flow on, each at least
    :data:`STAGE_SIZE` long."""
    runs: list[list[int]] = [[]]
    for k in positions:
        runs[-1].append(k)
        if alive[k] <= narrow and len(runs[-1]) >= STAGE_SIZE and k != positions[-1]:
            runs.append([])
    if len(runs) > 1 and len(runs[-1]) < STAGE_SIZE // 2:  # a short tail joins the run before
        tail = runs.pop()
        runs[-1] += tail
    return runs


def grouped_ir(ir: GraphIR, tree: GroupTree, opened: set[str]) -> GraphIR:
    """``ir`` with every closed group drawn as one node (edges between groups merged)."""
    units = tree.units(opened)
    unit_of = np.full(ir.node_count, -1, dtype=np.int64)
    names: list[str] = []
    op_types: list[str] = []
    inputs: list[list[str]] = []
    outputs: list[list[str]] = []
    protos: list[onnx.NodeProto | None] = []
    members: dict[int, list[str]] = {}
    hidden: dict[str, int] = {}
    labels: dict[int, str] = {}
    mixes: dict[int, str] = {}
    for u, (kind, ref) in enumerate(units):
        if kind == "node":
            i = int(ref)
            unit_of[i] = u
            names.append(ir.names[i])
            op_types.append(ir.op_types[i])
            inputs.append(ir.node_inputs[i])
            outputs.append(ir.node_outputs[i])
            protos.append(ir.onnx_node(i))
            continue
        group = tree.describe(str(ref), ir)
        unit_of[group.members] = u
        member_names = [ir.names[i] for i in group.members]
        members[u] = member_names
        hidden.update(dict.fromkeys(member_names, u))
        labels[u] = f"{group.label} ({group.size})"
        mixes[u] = group.mix_text
        names.append(group.path)
        op_types.append(GROUP_OP)
        inputs.append(group.inputs)
        outputs.append(group.outputs)
        protos.append(None)
    kinds = [int(NodeKind.OPERATOR)] * len(names)
    for i in np.flatnonzero(ir.kinds != NodeKind.OPERATOR).tolist():  # inputs and outputs stay
        unit_of[i] = len(names)
        names.append(ir.names[i])
        op_types.append(ir.op_types[i])
        inputs.append(ir.node_inputs[i])
        outputs.append(ir.node_outputs[i])
        kinds.append(int(ir.kinds[i]))
    src, dst = unit_of[ir.edge_src], unit_of[ir.edge_dst]
    between = np.flatnonzero(src != dst)
    # One edge per pair of boxes: the first tensor that joins them labels it.
    _, first = np.unique(src[between] * len(names) + dst[between], return_index=True)
    chosen = between[np.sort(first)]
    return GraphIR(
        name=ir.name,
        names=names,
        op_types=op_types,
        kinds=np.array(kinds, dtype=np.int8),
        edge_src=src[chosen].astype(np.int32),
        edge_dst=dst[chosen].astype(np.int32),
        edge_tensor=[ir.edge_tensor[e] for e in chosen.tolist()],
        node_inputs=inputs,
        node_outputs=outputs,
        initializer_names=ir.initializer_names,
        onnx_nodes=protos,
        tensor_info=ir.tensor_info,
        constants=ir.constants,
        folded_names=ir.folded_names,
        members=members,
        hidden=hidden,
        group_labels=labels,
        group_mix=mixes,
    )
