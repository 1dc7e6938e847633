"""Edge routes: no piece of an edge crosses a node box that is not one of its ends, on generated
graphs and on every corpus model (as it opens, with its groups, and whole)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import onnx
import pytest

from edgestudio.core.model.edge_routes import EdgeRoutes, route_edges
from edgestudio.core.model.graph_ir import GraphIR, build_graph_ir
from edgestudio.core.model.groups import GroupTree, grouped_ir
from edgestudio.core.model.layout import NODE_HEIGHT, NODE_WIDTH, Layout, layered_layout
from edgestudio.core.model.model_io import load_model
from tests import models
from tests.graph_builders import conv_branches, transformer_like
from tests.realmodels.corpus import CORPUS, SKIP_REASON, RealModel


def crossings(ir: GraphIR, layout: Layout, routes: EdgeRoutes) -> list[tuple[str, str, str]]:
    """(edge source, edge target, node crossed) for every piece whose box overlaps the inside of
    a node box other than its ends. A piece's box holds the curve drawn for it (vertical
    tangents, control points inside). Edges that point up (cycles) are not routed: left out."""
    rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for layer in np.unique(layout.layer).tolist():
        members = np.flatnonzero(layout.layer == layer)
        rows[layer] = (members, layout.x[members])
    row_y = {layer: float(layout.y[members[0]]) for layer, (members, _) in rows.items()}
    hw, hh = NODE_WIDTH / 2, NODE_HEIGHT / 2
    found = []
    for e, (s, d) in enumerate(zip(ir.edge_src.tolist(), ir.edge_dst.tolist(), strict=True)):
        if layout.layer[d] <= layout.layer[s]:
            continue
        points = routes.points(e)
        for (x1, y1), (x2, y2) in pairwise(points):
            lo_x, hi_x, lo_y, hi_y = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
            for layer, (members, xs) in rows.items():
                y = row_y[layer]
                if not (lo_y < y + hh and hi_y > y - hh):
                    continue
                hit = members[(lo_x < xs + hw) & (hi_x > xs - hw)]
                found += [
                    (ir.names[s], ir.names[d], ir.names[n]) for n in hit.tolist() if n not in (s, d)
                ]
    return found


def _straight(ir: GraphIR, layout: Layout) -> EdgeRoutes:
    """Every edge drawn straight from its source to its target (the drawing before routing)."""
    half = NODE_HEIGHT / 2
    x = np.stack([layout.x[ir.edge_src], layout.x[ir.edge_dst]], axis=1).ravel()
    y = np.stack([layout.y[ir.edge_src] + half, layout.y[ir.edge_dst] - half], axis=1).ravel()
    return EdgeRoutes(np.arange(0, len(x) + 1, 2, dtype=np.int64), x, y)


def _views(graph: onnx.GraphProto) -> list[GraphIR]:
    """The graph as it first opens (groups closed as the window closes them) and whole."""
    flat = build_graph_ir(graph, fold_constants=True)
    tree = GroupTree.build(flat)
    first = tree.first_view()
    shown = [flat] if first >= set(tree.groups) else [grouped_ir(flat, tree, first), flat]
    return shown


def test_silu_reads_the_conv_past_the_sigmoid() -> None:
    ir = build_graph_ir(models.silu_detector().graph)
    layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    # the test can fail: drawn straight, Conv → Mul goes through the Sigmoid under the Conv
    assert ("conv0", "silu0", "sigmoid0") in crossings(ir, layout, _straight(ir, layout))
    routes = route_edges(layout, ir.edge_src, ir.edge_dst)
    assert crossings(ir, layout, routes) == []
    conv, mul = ir.index_of("conv0"), ir.index_of("silu0")
    edge = next(
        e for e in range(len(ir.edge_src)) if ir.edge_src[e] == conv and ir.edge_dst[e] == mul
    )
    xs = [x for x, _ in routes.points(edge)]
    assert max(abs(x - layout.x[conv]) for x in xs) > NODE_WIDTH / 2  # it goes round


@pytest.mark.parametrize("builder", [transformer_like, conv_branches])
def test_generated_graphs_have_no_crossings(builder) -> None:  # type: ignore[no-untyped-def]
    ir = build_graph_ir(builder(1500).graph)
    layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    routes = route_edges(layout, ir.edge_src, ir.edge_dst)
    assert crossings(ir, layout, routes) == []
    assert len(routes.ptr) == len(ir.edge_src) + 1


def test_edges_from_a_cycle_are_drawn_without_routing() -> None:
    # two nodes in a loop (a malformed model): the layout parks them, routes still come back
    layout = layered_layout(3, np.array([0, 1, 2]), np.array([1, 2, 1]))
    routes = route_edges(layout, np.array([0, 1, 2]), np.array([1, 2, 1]))
    assert len(routes.ptr) == 4 and np.isfinite(routes.x).all()


@pytest.mark.e2e
@pytest.mark.parametrize("model", CORPUS, ids=lambda m: m.name)
def test_corpus_graphs_have_no_crossings(model: RealModel) -> None:
    if not model.path.is_file():
        pytest.skip(reason=SKIP_REASON)
    for ir in _views(load_model(model.path).graph):
        layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
        routes = route_edges(layout, ir.edge_src, ir.edge_dst)
        assert crossings(ir, layout, routes)[:5] == [], model.name
