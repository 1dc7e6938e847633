"""Batched graph drawing: ~256 nodes or edges per QGraphicsItem, with level of detail.

One QGraphicsItem per node costs seconds to build and ~1 s per zoomed-out frame at 50k nodes;
batches cost a fraction of that (ARCHITECTURE.md). Far out, nodes are flat rectangles drawn with one
``drawRects`` call per colour; closer, outlines; close up, rounded boxes with op type, name and a
weight badge, and edges labelled with their tensor's type and shape.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from edgestudio.core.model.edge_routes import EdgeRoutes, route_edges
from edgestudio.core.model.graph_ir import GraphIR, NodeKind
from edgestudio.core.model.groups import GROUP_OP
from edgestudio.core.model.layout import NODE_HEIGHT, NODE_WIDTH, Layout

BATCH_SIZE = 256
BLOCKS_PER_BATCH = 16
LOD_BLOCKS = 0.03  # below: each batch is a few coloured blocks, edges are not drawn
LOD_FLAT = 0.12  # below: flat rectangles, no outlines, no text
LOD_TEXT = 0.45  # above: rounded boxes with labels
LOD_EDGE_LABELS = 0.7  # above: tensor type/shape on edges
LABEL_MAX = 360  # the widest an edge label is drawn (scene units), elided in the middle beyond
GROUP_COLOUR = "#546e7a"  # closed groups (slate: no operator category uses it)


class GraphGeometry:
    """Node rectangles, edge routes and colours shared by every batch item of one scene."""

    def __init__(
        self, ir: GraphIR, layout: Layout, colours: list[QColor], routes: EdgeRoutes | None = None
    ) -> None:
        self.ir = ir
        self.x = layout.x
        self.y = layout.y
        self.routes = (
            routes if routes is not None else route_edges(layout, ir.edge_src, ir.edge_dst)
        )
        starts = self.routes.ptr[:-1]
        # Each edge's horizontal extent (detours included), for its batch's bounds.
        self.edge_left = np.minimum.reduceat(self.routes.x, starts) if len(starts) else np.zeros(0)
        self.edge_right = np.maximum.reduceat(self.routes.x, starts) if len(starts) else np.zeros(0)
        self.rects = [
            QRectF(x - NODE_WIDTH / 2, y - NODE_HEIGHT / 2, NODE_WIDTH, NODE_HEIGHT)
            for x, y in zip(layout.x.tolist(), layout.y.tolist(), strict=True)
        ]
        self.colours = colours
        self.weights = [
            [t for t in ir.node_inputs[i] if t in ir.initializer_names]
            for i in range(ir.node_count)
        ]
        self.label_room = _label_room(self.x, self.y)
        # One label per source, at its bottom: the first tensor it sends on, and how many more
        # (a closed group sending three tensors drew three labels on one spot).
        sent: dict[int, list[str]] = {}
        for source, tensor in zip(ir.edge_src.tolist(), ir.edge_tensor, strict=True):
            tensors = sent.setdefault(source, [])
            if tensor not in tensors:
                tensors.append(tensor)
        self.first_sent = {s: t[0] for s, t in sent.items()}
        self.more_tensors = {s: len(t) - 1 for s, t in sent.items() if len(t) > 1}
        # Folded constants each node reads (Constant nodes and chains computed from weights).
        self.constants = [
            [t for t in ir.node_inputs[i] if t in ir.constants] for i in range(ir.node_count)
        ]

    def node_at(self, point: QPointF) -> int | None:
        """The node under ``point`` (scene coordinates), if any."""
        if not len(self.x):
            return None
        hit = np.flatnonzero(
            (np.abs(self.x - point.x()) <= NODE_WIDTH / 2)
            & (np.abs(self.y - point.y()) <= NODE_HEIGHT / 2)
        )
        return int(hit[0]) if len(hit) else None


def _label_room(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """How wide each node's output label may be: up to the next node to its right on the same
    row (labels start at the node's centre), unbounded at the end of a row."""
    room = np.full(len(x), np.inf)
    if not len(x):
        return room
    order = np.lexsort((x, y))
    same_row = y[order][1:] == y[order][:-1]
    gaps = x[order][1:] - x[order][:-1] - 10
    room[order[:-1][same_row]] = gaps[same_row]
    return room


class NodeBatchItem(QGraphicsItem):
    """Draws a batch of nodes."""

    def __init__(self, geometry: GraphGeometry, indices: np.ndarray) -> None:
        super().__init__()
        self.geometry = geometry
        self.indices = indices.tolist()
        rects = [geometry.rects[i] for i in self.indices]
        left = min(r.left() for r in rects)
        top = min(r.top() for r in rects)
        right = max(r.right() for r in rects)
        bottom = max(r.bottom() for r in rects)
        self._bounds = QRectF(left, top, right - left, bottom - top).adjusted(-4, -4, 4, 4)
        self._groups: list[tuple[QColor, list[QRectF]]] = []
        self._blocks: list[tuple[QColor, QRectF]] = []
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.refresh_colours()

    def refresh_colours(self) -> None:
        """Regroup nodes by colour after an overlay changed."""
        groups: dict[int, tuple[QColor, list[QRectF]]] = {}
        for i in self.indices:
            colour = self.geometry.colours[i]
            key = colour.rgba()
            if key not in groups:
                groups[key] = (colour, [])
            groups[key][1].append(self.geometry.rects[i])
        self._groups = list(groups.values())
        # Far out, a batch is drawn as a few blocks, each in the colour most of its nodes have.
        self._blocks = []
        step = max(1, len(self.indices) // BLOCKS_PER_BATCH)
        for start in range(0, len(self.indices), step):
            part = self.indices[start : start + step]
            rect = QRectF(self.geometry.rects[part[0]])
            for i in part[1:]:
                rect = rect.united(self.geometry.rects[i])
            colours = [self.geometry.colours[i] for i in part]
            dominant = max(colours, key=lambda c: sum(1 for o in colours if o == c))
            self._blocks.append((dominant, rect))
        self.update()

    def boundingRect(self) -> QRectF:
        """Qt: the area the item paints in."""
        return self._bounds

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        """Qt: draw the item."""
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        if lod < LOD_BLOCKS:
            for colour, rect in self._blocks:
                painter.fillRect(rect, colour)
            return
        if lod < LOD_FLAT:
            painter.setPen(Qt.PenStyle.NoPen)
            for colour, rects in self._groups:
                painter.setBrush(colour)
                painter.drawRects(rects)
            return
        if lod < LOD_TEXT:
            painter.setPen(QPen(QColor("#333333"), 0))
            for colour, rects in self._groups:
                painter.setBrush(colour)
                painter.drawRects(rects)
            return
        self._paint_detailed(painter, option.exposedRect)

    def _paint_detailed(self, painter: QPainter, exposed: QRectF) -> None:
        geo = self.geometry
        ir = geo.ir
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        bold = QFont(painter.font())
        bold.setPointSizeF(9.5)
        bold.setBold(True)
        small = QFont(painter.font())
        small.setPointSizeF(7.5)
        outline = QPen(QColor("#202020"), 0.8)
        for i in self.indices:
            rect = geo.rects[i]
            if not rect.intersects(exposed):
                continue
            colour = geo.colours[i]
            painter.setPen(outline)
            group = ir.is_group(i)
            if group:  # a closed group: a stack of cards
                painter.setBrush(colour.lighter(130))
                painter.drawRoundedRect(rect.translated(4, 4), 6.0, 6.0)
            painter.setBrush(colour)
            radius = NODE_HEIGHT / 2 if ir.kinds[i] != NodeKind.OPERATOR else 6.0
            painter.drawRoundedRect(rect, radius, radius)
            text_colour = QColor("white") if colour.lightness() < 150 else QColor("#111111")
            painter.setPen(text_colour)
            inner = rect.adjusted(8, 3, -8, -3)
            painter.setFont(bold)
            kind = ir.kinds[i]
            title = ir.op_types[i] if kind == NodeKind.OPERATOR else ir.names[i]
            subtitle = ir.names[i] if kind == NodeKind.OPERATOR else ir.op_types[i].lower()
            if group:
                title, subtitle = f"▸ {ir.group_labels[i]}", ir.group_mix[i]
            metrics = painter.fontMetrics()
            painter.drawText(
                inner.adjusted(0, 0, 0, -inner.height() / 2),
                Qt.AlignmentFlag.AlignCenter,
                metrics.elidedText(title, Qt.TextElideMode.ElideRight, int(inner.width())),
            )
            painter.setFont(small)
            metrics = painter.fontMetrics()
            painter.drawText(
                inner.adjusted(0, inner.height() / 2, 0, 0),
                Qt.AlignmentFlag.AlignCenter,
                metrics.elidedText(subtitle, Qt.TextElideMode.ElideMiddle, int(inner.width())),
            )
            if group:
                continue  # a group's weights are its operators' (shown when opened)
            # Small badges: weights feeding this node (W), folded constants (C).
            right = rect.right() + 4
            for names, letter, fill, ink in (
                (geo.weights[i], "W", "#fff3c4", "#5a4500"),
                (geo.constants[i], "C", "#dde7f3", "#23415f"),
            ):
                if not names:
                    continue
                badge = QRectF(right - 24, rect.top() - 7, 24, 14)
                painter.setPen(QPen(QColor("#202020"), 0.6))
                painter.setBrush(QColor(fill))
                painter.drawRoundedRect(badge, 7, 7)
                painter.setPen(QColor(ink))
                painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, f"{letter}{len(names)}")
                right -= 27


class EdgeBatchItem(QGraphicsItem):
    """Draws a batch of edges along their routes (curves between rows, straight through the
    passages of the rows they skip), labelled close up; nothing when far out (the node blocks
    say it all there). Curves are built on first paint, so opening a huge graph builds only what
    is on screen."""

    def __init__(self, geometry: GraphGeometry, edges: np.ndarray) -> None:
        super().__init__()
        self.geometry = geometry
        self.edges = edges
        ir = geometry.ir
        src, dst = ir.edge_src[edges], ir.edge_dst[edges]
        ys = np.concatenate([geometry.y[src], geometry.y[dst]])
        left = float(geometry.edge_left[edges].min())
        right = float(geometry.edge_right[edges].max())
        self._bounds = QRectF(
            left - 2,
            float(ys.min()),
            right - left + LABEL_MAX + 12,
            float(ys.max() - ys.min()) + 16,
        )
        self.path: QPainterPath | None = None
        # (where, tensor, room in pixels, how many more tensors the source sends)
        self.labels: list[tuple[QPointF, str, float, int]] = []
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(-1)

    def _build(self) -> QPainterPath:
        ir = self.geometry.ir
        routes = self.geometry.routes
        path = QPainterPath()
        labelled: set[int] = set()
        for e in self.edges.tolist():
            s = int(ir.edge_src[e])
            points = routes.points(e)
            start = QPointF(*points[0])
            path.moveTo(start)
            for (x1, y1), (x2, y2) in pairwise(points):
                if x1 == x2:  # a passage through a row, or straight down
                    path.lineTo(x2, y2)
                elif y2 > y1:
                    # Vertical tangents with the control points inside the piece's box: the curve
                    # stays in the gap between the rows, clear of every node.
                    bend = (y2 - y1) * 0.45
                    path.cubicTo(QPointF(x1, y1 + bend), QPointF(x2, y2 - bend), QPointF(x2, y2))
                else:  # up, to a node on a cycle (a malformed model or groups in a loop)
                    path.cubicTo(QPointF(x1, y1 + 20), QPointF(x2, y2 - 20), QPointF(x2, y2))
            if s not in labelled:  # a source is labelled once, with its first tensor
                labelled.add(s)
                self.labels.append(
                    (
                        QPointF(start.x() + 4, start.y() + 12),
                        self.geometry.first_sent[s],
                        float(self.geometry.label_room[s]),
                        self.geometry.more_tensors.get(s, 0),
                    )
                )
        self.path = path
        return path

    def boundingRect(self) -> QRectF:
        """Qt: the area the item paints in."""
        return self._bounds

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        """Qt: draw the item."""
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        if lod < LOD_BLOCKS:
            return
        path = self.path if self.path is not None else self._build()
        painter.setPen(QPen(QColor("#7a7a7a"), 0))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, lod >= LOD_TEXT)
        painter.drawPath(path)
        if lod >= LOD_EDGE_LABELS:
            font = QFont(painter.font())
            font.setPointSizeF(7)
            painter.setFont(font)
            painter.setPen(QColor("#4a4a4a"))
            exposed = option.exposedRect
            info = self.geometry.ir.tensor_info  # looked up now: shapes may arrive later
            metrics = painter.fontMetrics()
            for point, tensor, room, more in self.labels:
                if exposed.contains(point):
                    known = info.get(tensor)
                    text = (known.text() if known else tensor) + (f"  (+{more})" if more else "")
                    # Shortened so that it never runs into its neighbour's, nor past the
                    # item's bounds (Qt would cut it off there: a long shape lost its end).
                    text = metrics.elidedText(
                        text, Qt.TextElideMode.ElideMiddle, max(int(min(room, LABEL_MAX)), 24)
                    )
                    painter.drawText(point, text)


def build_items(geometry: GraphGeometry) -> tuple[list[NodeBatchItem], list[EdgeBatchItem]]:
    """Cut nodes and edges into spatially compact batches."""
    ir = geometry.ir
    order = np.lexsort((geometry.x, geometry.y))  # row by row, left to right
    nodes = [
        NodeBatchItem(geometry, order[i : i + BATCH_SIZE]) for i in range(0, len(order), BATCH_SIZE)
    ]
    edge_items: list[EdgeBatchItem] = []
    if len(ir.edge_src):
        by_src = np.argsort(geometry.y[ir.edge_src] * 1e6 + geometry.x[ir.edge_src], kind="stable")
        edge_items = [
            EdgeBatchItem(geometry, by_src[i : i + BATCH_SIZE])
            for i in range(0, len(by_src), BATCH_SIZE)
        ]
    return nodes, edge_items


def default_colours(ir: GraphIR) -> list[QColor]:
    """Fill colours by operator category."""
    from edgestudio.core.model.op_categories import colour_of

    cache: dict[str, QColor] = {GROUP_OP: QColor(GROUP_COLOUR)}
    colours = []
    for op in ir.op_types:
        if op not in cache:
            cache[op] = QColor(colour_of(op))
        colours.append(cache[op])
    return colours


def marker_path(geometry: GraphGeometry, nodes: list[int], pad: float = 5.0) -> QPainterPath:
    """One path outlining ``nodes`` (for selections and marked sets)."""
    path = QPainterPath()
    for i in nodes:
        path.addRoundedRect(geometry.rects[i].adjusted(-pad, -pad, pad, pad), 8, 8)
    return path
