"""The graph view: pan, zoom, fit, click to select, overlays with a legend, and a minimap.

Overlay API (used by quantization error, per-op latency and EP placement views):
:meth:`GraphView.set_scalar_overlay`, :meth:`GraphView.set_category_overlay`,
:meth:`GraphView.clear_overlay`, :meth:`GraphView.set_marked`; selection both ways through
:meth:`GraphView.select_node` and the ``node_selected`` signal.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QHelpEvent,
    QKeyEvent,
    QMouseEvent,
    QNativeGestureEvent,
    QPen,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QGraphicsPathItem,
    QGraphicsScene,
    QGraphicsView,
    QToolTip,
    QWidget,
)

from edgestudio.core.model.edge_routes import EdgeRoutes
from edgestudio.core.model.graph_ir import GraphIR, NodeKind
from edgestudio.core.model.layout import Layout
from edgestudio.gui.model.graph_chrome import (
    MINIMAP_SIZE,
    Legend,
    Minimap,
    node_tooltip,
)
from edgestudio.gui.model.graph_items import (
    GraphGeometry,
    NodeBatchItem,
    build_items,
    default_colours,
    marker_path,
)
from edgestudio.gui.model.graph_overlays import NodeOverlays

READABLE_SCALE = 0.75  # below this node labels get too small to read
MINIMAP_STRIP = 186  # pixels beside the graph for the minimap, when it is shown
MINIMAP_MIN_GRAPH = 360  # the graph keeps at least this many pixels across for the minimap


def _cosmetic_pen(colour: str, width: float, style: Qt.PenStyle = Qt.PenStyle.SolidLine) -> QPen:
    """A pen whose width is in screen pixels whatever the zoom."""
    pen = QPen(QColor(colour), width, style)
    pen.setCosmetic(True)
    return pen


class GraphView(NodeOverlays, QGraphicsView):
    """Shows one :class:`GraphIR` laid out by a :class:`Layout` (its overlays:
    :class:`~edgestudio.gui.model.graph_overlays.NodeOverlays`)."""

    node_selected = Signal(int)  # node index, -1 when cleared
    node_activated = Signal(int)  # double click
    node_context_menu = Signal(int, object)  # node index, global QPoint
    minimap_toggled = Signal(bool)  # M pressed
    close_requested = Signal(int)  # Backspace on a node: close the group that holds it

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graph_view")
        self._scene = QGraphicsScene(self)  # held by the view, so it is never collected
        self.setScene(self._scene)
        self.setBackgroundBrush(QColor("#fafafa"))
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing, True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.viewport().grabGesture(Qt.GestureType.PinchGesture)
        self.ir: GraphIR | None = None
        self.geometry_: GraphGeometry | None = None
        self._node_items: list[NodeBatchItem] = []
        self._base_colours: list[QColor] = []
        self.selected = -1
        self.marked: list[int] = []
        self.overlay_values: np.ndarray | None = None
        self._selection_item = self._path_item(_cosmetic_pen("#ff6d00", 3), 10)
        self._mark_item = self._path_item(_cosmetic_pen("#d50000", 2.5, Qt.PenStyle.DashLine), 9)
        self.legend = Legend(self)
        self.minimap = Minimap(self)
        self.minimap.hide()
        self.minimap_wanted = True  # the user's choice (M, or the panel's check box)
        self._auto_fit = True  # keep fitting on resize until the user navigates

    # ----- content -------------------------------------------------------------------------
    def set_graph(self, ir: GraphIR, layout: Layout, routes: EdgeRoutes | None = None) -> None:
        """Replace the shown graph (builds the batched items on this, the UI, thread; the edges'
        ``routes`` are computed here when the caller did not compute them off it)."""
        self._scene.clear()
        self.ir = ir
        self._base_colours = default_colours(ir)
        self.geometry_ = GraphGeometry(ir, layout, list(self._base_colours), routes)
        nodes, edges = build_items(self.geometry_)
        for item in [*edges, *nodes]:
            self._scene.addItem(item)
        self._node_items = nodes
        # scene.clear() deleted the marker items too: make new ones
        self._selection_item = self._path_item(_cosmetic_pen("#ff6d00", 3), 10)
        self._mark_item = self._path_item(_cosmetic_pen("#d50000", 2.5, Qt.PenStyle.DashLine), 9)
        margin = 200.0
        self._scene.setSceneRect(
            self._scene.itemsBoundingRect().adjusted(-margin, -margin, margin, margin)
        )
        self.selected = -1
        self.marked = []
        self.overlay_values = None
        self.legend.hide()
        self.fit()
        self.minimap.render_scene()

    def _path_item(self, pen: QPen, z: float) -> QGraphicsPathItem:
        item = QGraphicsPathItem()
        item.setPen(pen)
        item.setZValue(z)
        self._scene.addItem(item)
        return item

    # ----- navigation --------------------------------------------------------------------------
    def fit(self) -> None:
        """Show the whole graph if it is readable that way; otherwise show it at a readable
        size from the top (the minimap then shows the whole)."""
        rect = self._scene.itemsBoundingRect()
        if rect.isEmpty():
            return
        view = self.viewport().rect()
        scale = min(view.width() / rect.width(), view.height() / rect.height(), 1.2)
        if scale < READABLE_SCALE:
            # Too big to read whole: start at the top, where the graph inputs are, above them.
            scale = max(min(1.0, view.width() / rect.width()), READABLE_SCALE)
            self.resetTransform()
            self.scale(scale, scale)
            self.centerOn(self._inputs_x(rect), rect.top() + view.height() / 2 / scale)
        else:
            self.resetTransform()
            self.scale(scale, scale)
            self.centerOn(rect.center())
        self._auto_fit = True
        self._update_minimap()

    def fit_all(self) -> None:
        """Zoom out until the whole graph is in the window, however small it gets."""
        self.fitInView(self._scene.itemsBoundingRect(), Qt.AspectRatioMode.KeepAspectRatio)
        self._auto_fit = False
        self._update_minimap()

    def _inputs_x(self, rect: QRectF) -> float:
        """Where the graph inputs are across (the main trunk starts there)."""
        if self.ir is None or self.geometry_ is None:
            return rect.center().x()
        inputs = np.flatnonzero(self.ir.kinds == NodeKind.INPUT)
        if not len(inputs):
            return rect.center().x()
        # The middle input by position (np.median would import numpy.ma: 0.15 s at first use,
        # on the way to the first frame).
        xs = np.sort(self.geometry_.x[inputs])
        return float(xs[len(xs) // 2])

    def show_minimap(self, wanted: bool) -> None:
        """Let the minimap appear when part of the graph is out of sight (or never)."""
        self.minimap_wanted = wanted
        self._update_minimap()

    def _update_minimap(self) -> None:
        """Show the minimap only when wanted and part of the graph is out of sight; it then
        takes a strip beside the graph instead of covering it."""
        scene_rect = self._scene.itemsBoundingRect()
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        # A small window keeps its width for the graph: no minimap where the strip would leave
        # the graph less than MINIMAP_MIN_GRAPH pixels, a smaller one where it is short.
        inner = self.width() - 2 * self.frameWidth()
        room = inner - MINIMAP_STRIP >= MINIMAP_MIN_GRAPH and self.height() >= 120
        shown = (
            self.minimap_wanted
            and self.ir is not None
            and room
            and not visible.contains(scene_rect)
        )
        strip = MINIMAP_STRIP if shown else 0
        if self.viewportMargins().right() != strip:
            self.setViewportMargins(0, 0, strip, 0)
        side = min(MINIMAP_SIZE, self.height() - 2 * self.frameWidth() - 16)
        if shown and self.minimap.width() != side:
            self.minimap.setFixedSize(side, side)
            self.minimap.render_scene()
        self.minimap.setVisible(shown)
        self._place_overlays()
        self.minimap.update()

    def _place_overlays(self) -> None:
        """The minimap in its strip; the legend at the top of that strip when it fits there
        (it then hides none of the graph), else in the graph's top-right corner."""
        frame = self.frameWidth()
        strip_x = frame + self.viewport().width()
        self.minimap.move(
            strip_x + (MINIMAP_STRIP - self.minimap.width()) // 2,
            frame + max(8, self.viewport().height() - self.minimap.height() - 8),
        )
        in_strip = (
            self.minimap.isVisibleTo(self)
            and self.legend.width() <= MINIMAP_STRIP - 8
            and self.legend.height() + 16 <= self.minimap.y() - frame
        )
        if in_strip:
            self.legend.move(strip_x + (MINIMAP_STRIP - self.legend.width()) // 2, frame + 8)
        else:
            self.legend.move(self.viewport().width() - self.legend.width() - 12, 12)

    def zoom(self, factor: float) -> None:
        """Zoom by ``factor`` around the mouse (or the centre), within sane limits."""
        self._auto_fit = False
        current = self.transform().m11()
        factor = min(max(factor, 1e-4 / current), 8.0 / current)
        self.scale(factor, factor)
        self._update_minimap()

    def centre_on_node(self, index: int) -> None:
        """Scroll so that node ``index`` is in the middle, zooming in to readable size."""
        if self.geometry_ is None:
            return
        if self.transform().m11() < 0.6:
            self.resetTransform()
            self.scale(0.9, 0.9)
        self._auto_fit = False
        self.centerOn(float(self.geometry_.x[index]), float(self.geometry_.y[index]))
        self._update_minimap()

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Qt: the wheel zooms; Shift+wheel scrolls."""
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            super().wheelEvent(event)  # shift+wheel scrolls
            return
        self.zoom(math.pow(1.0015, event.angleDelta().y()))

    def viewportEvent(self, event: QEvent) -> bool:
        """Qt: pinch gestures zoom; tooltips name the node under the mouse."""
        if event.type() == QEvent.Type.NativeGesture:
            gesture = event
            assert isinstance(gesture, QNativeGestureEvent)
            if gesture.gestureType() == Qt.NativeGestureType.ZoomNativeGesture:
                self.zoom(1.0 + gesture.value())
                return True
        if event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            self._show_tooltip(event)
            return True
        return super().viewportEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Qt: keyboard navigation and zoom keys."""
        key = event.key()
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom(0.8)
        elif key in (Qt.Key.Key_0, Qt.Key.Key_F):
            self.fit()
        elif key == Qt.Key.Key_A:
            self.fit_all()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.selected >= 0:
            self.node_activated.emit(self.selected)  # opens a closed group
        elif key == Qt.Key.Key_Backspace and self.selected >= 0:
            self.close_requested.emit(self.selected)  # closes the group around it
        elif key == Qt.Key.Key_M:
            self.show_minimap(not self.minimap_wanted)
            self.minimap_toggled.emit(self.minimap_wanted)
        elif key == Qt.Key.Key_Escape:
            self.select_node(-1)
        else:
            super().keyPressEvent(event)

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        """Qt: the view scrolled; the minimap follows."""
        super().scrollContentsBy(dx, dy)
        self.minimap.update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Qt: the view was resized; the legend and minimap keep to its corners."""
        super().resizeEvent(event)
        if self._auto_fit and self.ir is not None:
            self.fit()
        self._update_minimap()

    # ----- selection -----------------------------------------------------------------------------
    def node_at(self, viewport_pos: QPointF) -> int | None:
        """The node under a viewport position."""
        if self.geometry_ is None:
            return None
        return self.geometry_.node_at(self.mapToScene(viewport_pos.toPoint()))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """Qt: a mouse button went down."""
        self._auto_fit = False
        if event.button() == Qt.MouseButton.LeftButton:
            node = self.node_at(event.position())
            if node is not None:
                self.select_node(node, centre=False)
                return
        super().mousePressEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        """Qt: right click."""
        node = self.node_at(QPointF(event.pos()))
        if node is not None:
            self.select_node(node, centre=False)
            self.node_context_menu.emit(node, event.globalPos())

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        """Qt: double click."""
        node = self.node_at(event.position())
        if node is not None:
            self.node_activated.emit(node)
        else:
            super().mouseDoubleClickEvent(event)

    def select_node(self, index: int, centre: bool = True) -> None:
        """Select node ``index`` (-1 clears); emits ``node_selected`` when it changed."""
        if self.geometry_ is None:
            return
        changed = index != self.selected
        self.selected = index
        if index < 0:
            self._selection_item.setPath(marker_path(self.geometry_, []))
        else:
            self._selection_item.setPath(marker_path(self.geometry_, [index], pad=4))
            if centre:
                self.centre_on_node(index)
        if changed:
            self.node_selected.emit(index)

    def select_by_name(self, name: str, centre: bool = True) -> bool:
        """Select the node called ``name`` (or producing/consuming that tensor)."""
        if self.ir is None:
            return False
        index = self.ir.index_of(name)
        if index is None:
            hits = [i for i, outs in enumerate(self.ir.node_outputs) if name in outs]
            index = hits[0] if hits else None
        if index is None:
            return False
        self.select_node(index, centre)
        return True

    def _show_tooltip(self, event: QHelpEvent) -> None:
        node = self.node_at(QPointF(event.pos()))
        if node is None or self.ir is None:
            QToolTip.hideText()
            return
        QToolTip.showText(event.globalPos(), self.node_tooltip(node), self)

    def node_tooltip(self, index: int) -> str:
        """HTML describing node ``index`` (op, name, overlay value, tensors)."""
        assert self.ir is not None
        return node_tooltip(self.ir, index, self.overlay_values)
