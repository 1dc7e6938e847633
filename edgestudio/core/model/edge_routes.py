"""Edge routes that never pass through a node box.

A layered layout puts every node on a row; an edge between neighbouring rows lies wholly in the
gap between them, but an edge that skips rows (a residual add, the x of a SiLU's ``x * sigmoid(x)``)
would be drawn straight through the nodes of the rows it skips: the picture then shows one input
where the node has two. Each skipped row is crossed through a passage (a vertical run at an x
where no box stands), as near the straight line to the target as the row allows; between rows an
edge runs only in the gap. Drawn with vertical tangents, every piece stays inside the box spanned
by its two ends, so no piece can touch a node that is not its end (``tests/core`` checks it on
the corpus).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from edgestudio.core.model.layout import H_GAP, LAYER_GAP, NODE_HEIGHT, NODE_WIDTH, Layout

CLEARANCE = 8.0  # least distance kept between a passage and a box (under H_GAP / 2)
_SIDE = NODE_WIDTH / 2 + H_GAP / 2  # a passage beside a box: the middle of the gap next to it


@dataclass(frozen=True)
class EdgeRoutes:
    """Polyline points per edge, from its source's bottom to its target's top.

    The points of edge ``e`` are ``x[ptr[e]:ptr[e + 1]]`` / ``y[...]``. A piece between two
    points is vertical inside a row (a passage) or lies in the gap between two rows.
    """

    ptr: np.ndarray  # int64, len = edges + 1
    x: np.ndarray  # float64
    y: np.ndarray  # float64

    def points(self, edge: int) -> list[tuple[float, float]]:
        """The points of one edge."""
        lo, hi = int(self.ptr[edge]), int(self.ptr[edge + 1])
        return list(zip(self.x[lo:hi].tolist(), self.y[lo:hi].tolist(), strict=True))


def _rows(layout: Layout) -> dict[int, list[float]]:
    """Each layer's node centres, sorted."""
    order = np.lexsort((layout.x, layout.layer))
    rows: dict[int, list[float]] = {}
    for layer, x in zip(layout.layer[order].tolist(), layout.x[order].tolist(), strict=True):
        rows.setdefault(layer, []).append(x)
    return rows


def _passage(row: list[float], want: float) -> float:
    """An x in ``row`` free of boxes, nearest ``want`` (``want`` itself when it is free)."""
    reach = NODE_WIDTH / 2 + CLEARANCE
    i = bisect_left(row, want)
    for j in (i - 1, i):
        if 0 <= j < len(row) and abs(row[j] - want) < reach:
            centre = row[j]
            # Rows are spaced by at least NODE_WIDTH + H_GAP, so the gap beside a box is free.
            return centre + _SIDE if want >= centre else centre - _SIDE
    return want


def route_edges(layout: Layout, src: np.ndarray, dst: np.ndarray) -> EdgeRoutes:
    """Routes for edges ``src[i] -> dst[i]`` of a graph laid out by ``layout``.

    An edge to a row further down passes each row between through a passage; an edge that does
    not point down (a cycle in a malformed model) is a straight piece between its ends.
    """
    half = NODE_HEIGHT / 2
    rows = _rows(layout)
    xs, ys, layers = layout.x.tolist(), layout.y.tolist(), layout.layer.tolist()
    ptr = [0]
    out_x: list[float] = []
    out_y: list[float] = []
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        out_x.append(xs[s])
        out_y.append(ys[s] + half)
        top, bottom = layers[s], layers[d]
        here, target = xs[s], xs[d]
        for lv in range(top + 1, bottom):
            # Head for the target in equal steps from where the edge is now.
            want = here + (target - here) / (bottom - lv + 1)
            # A layer may hold no node (one left empty below a cycle in a malformed model).
            x = _passage(rows.get(lv, []), want)
            y = lv * (NODE_HEIGHT + LAYER_GAP)
            if x == here and len(out_x) > ptr[-1] + 1 and out_x[-1] == x:
                out_y[-1] = y + half  # still straight down: lengthen the last vertical run
            else:
                out_x += (x, x)
                out_y += (y - half, y + half)
            here = x
        out_x.append(target)
        out_y.append(ys[d] - half)
        ptr.append(len(out_x))
    return EdgeRoutes(
        np.asarray(ptr, dtype=np.int64),
        np.asarray(out_x, dtype=np.float64),
        np.asarray(out_y, dtype=np.float64),
    )
