"""A graph laid out for display, Qt-free: its flat IR and name-scope groups (kept for the next
opening), the groups open, the graph as drawn, where each node goes and its edges' routes. The
Graph panel runs :func:`lay_out` on a pool thread, with progress and cancel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import onnx

from edgestudio.core.model.edge_routes import EdgeRoutes, route_edges
from edgestudio.core.model.graph_ir import GraphIR, NodeTable, build_graph_ir
from edgestudio.core.model.groups import GroupTree, grouped_ir
from edgestudio.core.model.layout import Layout, layered_layout


@dataclass
class LaidOut:
    """A layout's result: the flat graph and its groups (kept for the next opening), the
    groups open, the graph as drawn, where its nodes go and the routes of its edges."""

    flat: GraphIR
    tree: GroupTree
    opened: set[str]
    ir: GraphIR
    layout: Layout
    routes: EdgeRoutes


def lay_out(
    graph: onnx.GraphProto,
    fold_constants: bool,
    known: tuple[GraphIR, GroupTree] | None,
    opened: set[str] | None,
    grouped: bool,
    progress: Callable[[float], None],
    cancelled: Callable[[], bool],
    constants: dict[int, str] | None = None,
    table: NodeTable | None = None,
) -> LaidOut:
    """Build the IR, its groups and the layout of what is shown, stopping early when
    ``cancelled``. ``known`` reuses the flat graph and groups of an earlier layout;
    ``constants`` and ``table`` the graph's constant-only nodes and node table when the
    loader found them; ``opened`` the groups open (None: the first view's)."""
    if known is None:
        flat = build_graph_ir(
            graph,
            fold_constants=fold_constants,
            constants=constants if fold_constants else None,
            table=table,
        )
        tree = GroupTree.build(flat)
    else:
        flat, tree = known
    shown = set(tree.groups) if not grouped else opened if opened is not None else tree.first_view()
    ir = flat if shown >= set(tree.groups) else grouped_ir(flat, tree, shown)
    layout = layered_layout(
        ir.node_count, ir.edge_src, ir.edge_dst, progress=progress, cancelled=cancelled
    )
    return LaidOut(flat, tree, shown, ir, layout, route_edges(layout, ir.edge_src, ir.edge_dst))
