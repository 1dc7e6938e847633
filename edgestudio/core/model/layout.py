"""Layered top-to-bottom layout of a directed graph, fast enough for 50,000 nodes.

Longest-path layering (every edge points down; a graph input sits just above its first reader),
then x positions under each node's predecessors (trunks first), ordered and pushed apart within
each layer. Plain linear passes in
Python over compressed adjacency: ~0.2 s at 50k nodes, against seconds to minutes for dagre or
graphviz (ARCHITECTURE.md). Deterministic: same graph, same layout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edgestudio.core.progress import CancelledError

NODE_WIDTH = 160.0
NODE_HEIGHT = 40.0
H_GAP = 24.0
LAYER_GAP = 44.0

ProgressFn = Callable[[float], None]
CancelFn = Callable[[], bool]


@dataclass(frozen=True)
class Layout:
    """Node centres and layers. ``cyclic`` lists nodes that sat on a cycle (bad models)."""

    x: np.ndarray  # float64 centre x per node
    y: np.ndarray  # float64 centre y per node
    layer: np.ndarray  # int32 per node
    cyclic: np.ndarray  # int32 node indices

    @property
    def width(self) -> float:
        """Horizontal extent including node size."""
        return float(self.x.max() - self.x.min() + NODE_WIDTH) if len(self.x) else 0.0

    @property
    def height(self) -> float:
        """Vertical extent including node size."""
        return float(self.y.max() - self.y.min() + NODE_HEIGHT) if len(self.y) else 0.0


def _adjacency(n: int, first: np.ndarray, second: np.ndarray) -> tuple[list[int], list[int]]:
    """CSR lists: neighbours of v are ``targets[ptr[v]:ptr[v+1]]`` (stable order)."""
    order = np.argsort(first, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(first, minlength=n), out=ptr[1:])
    return ptr.tolist(), second[order].tolist()


def layered_layout(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    progress: ProgressFn | None = None,
    cancelled: CancelFn | None = None,
) -> Layout:
    """Lay out ``n`` nodes connected by edges ``src[i] -> dst[i]``.

    Raises
    ------
    CancelledError
        When ``cancelled()`` turns true during the work.
    """

    def check(fraction: float) -> None:
        if cancelled is not None and cancelled():
            raise CancelledError()
        if progress is not None:
            progress(fraction)

    if n == 0:
        empty = np.zeros(0)
        return Layout(empty, empty, np.zeros(0, np.int32), np.zeros(0, np.int32))
    keep = src != dst
    src, dst = src[keep].astype(np.int64), dst[keep].astype(np.int64)
    out_ptr, out_nbr = _adjacency(n, src, dst)
    in_ptr, in_nbr = _adjacency(n, dst, src)

    # 1. Longest-path layering by Kahn's algorithm, in node order (ONNX is topologically sorted).
    indeg = np.bincount(dst, minlength=n).tolist()
    layer = [0] * n
    ready = [v for v in range(n) if indeg[v] == 0]
    order: list[int] = []
    head = 0
    while head < len(ready):
        v = ready[head]
        head += 1
        order.append(v)
        lv = layer[v] + 1
        for k in range(out_ptr[v], out_ptr[v + 1]):
            w = out_nbr[k]
            if layer[w] < lv:
                layer[w] = lv
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
        if head % 8192 == 0:
            check(0.4 * head / n)
    cyclic = [v for v in range(n) if indeg[v] > 0]
    cyclic_set = set(cyclic)
    if cyclic:  # a malformed graph: park cycle members below everything else, in node order
        bottom = max(layer) + 1
        for v in cyclic:
            layer[v] = bottom
            order.append(v)
    check(0.4)
    # A source (a graph input) sits just above its first reader, not on the top row: a
    # decoder's 48 KV-cache inputs would otherwise make one row far above the layers using them.
    for v in range(n):
        if in_ptr[v] == in_ptr[v + 1] and out_ptr[v] < out_ptr[v + 1] and v not in cyclic_set:
            layer[v] = min(layer[out_nbr[k]] for k in range(out_ptr[v], out_ptr[v + 1])) - 1

    out_degree = [out_ptr[v + 1] - out_ptr[v] for v in range(n)]

    # 2. Rows: group by layer, each in first-seen order; 3. x from the predecessors' mean.
    layers: dict[int, list[int]] = {}
    for v in order:
        layers.setdefault(layer[v], []).append(v)
    step = NODE_WIDTH + H_GAP
    x = [0.0] * n
    placed = [False] * n
    for count, lv in enumerate(sorted(layers)):
        row = layers[lv]
        # Each node wants to sit under its predecessors, but a trunk (a tensor read by several
        # nodes: the residual stream) outweighs a branch, so the trunk stays straight instead of
        # drifting as a plain mean of branches would.
        desired: list[float | None] = []
        for v in row:
            preds = [u for u in in_nbr[in_ptr[v] : in_ptr[v + 1]] if placed[u]]
            if preds:
                top = max(out_degree[u] for u in preds)
                trunk = [x[u] for u in preds if out_degree[u] == top]
                desired.append(sum(trunk) / len(trunk))
            else:
                desired.append(None)
        if len(row) == 1:  # the common case in deep nets
            x[row[0]] = desired[0] if desired[0] is not None else 0.0
            placed[row[0]] = True
            continue
        _place_row(row, desired, x, step)
        for v in row:
            placed[v] = True
        if count % 2048 == 0:
            check(0.4 + 0.55 * count / max(1, len(layers)))
    check(1.0)
    xs = np.asarray(x, dtype=np.float64)
    layer_arr = np.asarray(layer, dtype=np.int32)
    return Layout(
        x=xs - xs.min() if n else xs,
        y=layer_arr * (NODE_HEIGHT + LAYER_GAP),
        layer=layer_arr,
        cyclic=np.asarray(cyclic, dtype=np.int32),
    )


def _place_row(row: list[int], desired: list[float | None], x: list[float], step: float) -> None:
    """Order ``row`` by desired x and set positions at least ``step`` apart, near their wishes."""
    known = [d for d in desired if d is not None]
    centre = sum(known) / len(known) if known else 0.0
    # Nodes without placed predecessors (graph inputs, constants) line up around the centre.
    filled = [
        d if d is not None else centre + (i - len(row) / 2) * step * 0.01
        for i, d in enumerate(desired)
    ]
    ranked = sorted(range(len(row)), key=lambda i: (filled[i], i))
    pos = [filled[i] for i in ranked]
    # Push apart left to right, then shift the row so its mean matches the wishes' mean.
    for i in range(1, len(pos)):
        if pos[i] < pos[i - 1] + step:
            pos[i] = pos[i - 1] + step
    shift = (sum(filled) - sum(pos)) / len(pos)
    for i, idx in enumerate(ranked):
        x[row[idx]] = pos[i] + shift
