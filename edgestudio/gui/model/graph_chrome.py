"""What floats over the graph view: the overlay's legend (a colour scale or category
swatches) in its corner, the minimap of the whole graph, and a node's tooltip."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPen, QPixmap
from PySide6.QtWidgets import QFrame, QGraphicsView, QLabel, QVBoxLayout, QWidget

from edgestudio.core.model.graph_ir import GraphIR, NodeKind

MINIMAP_SIZE = 170
# A perceptually ordered ramp (viridis stops) for scalar overlays.
_RAMP = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"]


def ramp_colour(t: float) -> QColor:
    """Colour at ``t`` in 0..1 along the scalar ramp."""
    t = min(1.0, max(0.0, t)) * (len(_RAMP) - 1)
    i = min(int(t), len(_RAMP) - 2)
    a, b = QColor(_RAMP[i]), QColor(_RAMP[i + 1])
    f = t - i
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * f,
        a.greenF() + (b.greenF() - a.greenF()) * f,
        a.blueF() + (b.blueF() - a.blueF()) * f,
    )


LEGEND_RAMP_WIDTH = 150
LEGEND_NOTE_WIDTH = 260  # the legend's note wraps: a long one must not cover the graph


def _ramp_pixmap(width: int, height: int) -> QPixmap:
    """The scalar ramp as a horizontal gradient."""
    pixmap = QPixmap(width, height)
    painter = QPainter(pixmap)
    for x in range(width):
        painter.setPen(ramp_colour(x / max(1, width - 1)))
        painter.drawLine(x, 0, x, height - 1)
    painter.setPen(QColor("#909090"))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRect(0, 0, width - 1, height - 1)
    painter.end()
    return pixmap


class Legend(QFrame):
    """Overlay legend in the view's top-right corner: a colour scale or category swatches."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("overlay_legend")
        self.setStyleSheet(
            "QFrame#overlay_legend { background: rgba(255,255,255,235);"
            " border: 1px solid #b0b0b0; border-radius: 4px; }"
        )
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.ramp = QLabel()  # the colour scale, drawn as a gradient (rich text cannot size it)
        self.ramp.setObjectName("legend_ramp")
        self.ramp.setPixmap(_ramp_pixmap(LEGEND_RAMP_WIDTH, 12))
        self.ends = QLabel()
        self.note = QLabel()
        self.note.setStyleSheet("color: #777")
        self.note.setWordWrap(True)
        self.note.setMaximumWidth(LEGEND_NOTE_WIDTH)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(2)
        for widget in (self.label, self.ramp, self.ends, self.note):
            layout.addWidget(widget)
        self.hide()

    def show_scale(self, title: str, low: float, high: float, log: bool, missing: int) -> None:
        """Show a ramp from ``low`` to ``high``."""
        scale = " (log)" if log else ""
        self.label.setText(f"<b>{title}</b>{scale}")
        self.ends.setText(
            f"<table width={LEGEND_RAMP_WIDTH}><tr><td>{low:.4g}</td>"
            f"<td align=right>{high:.4g}</td></tr></table>"
        )
        self.note.setText(f"{missing} nodes without a value" if missing else "")
        for widget in (self.ramp, self.ends):
            widget.show()
        self.note.setVisible(bool(missing))
        self.adjustSize()
        self.show()

    def show_categories(
        self, title: str, counts: Mapping[str, int], colours: Mapping[str, str], note: str = ""
    ) -> None:
        """Show one swatch per category with its node count (and ``note`` beneath)."""
        rows = "".join(
            f'<tr><td style="background:{colours.get(k, "#999")}; width:14px;">&nbsp;</td>'
            f"<td>&nbsp;{html.escape(k)}</td><td align=right>&nbsp;{n}</td></tr>"
            for k, n in counts.items()
        )
        self.label.setText(f"<b>{title}</b><table>{rows}</table>")
        for widget in (self.ramp, self.ends):
            widget.hide()
        self.note.setText(note)
        self.note.setVisible(bool(note))
        self.adjustSize()
        self.show()


class Minimap(QWidget):
    """A thumbnail of the whole graph with the visible area outlined; click or drag to move."""

    def __init__(self, view: QGraphicsView) -> None:
        super().__init__(view)
        self.setObjectName("minimap")
        self.view = view
        self.setFixedSize(MINIMAP_SIZE, MINIMAP_SIZE)
        self._pixmap = QPixmap()
        self._scene_rect = QRectF()

    def render_scene(self) -> None:
        """Redraw the thumbnail (after layout or an overlay change)."""
        scene = self.view.scene()
        if scene is None:
            return
        self._scene_rect = scene.itemsBoundingRect()
        self._pixmap = QPixmap(self.size())
        self._pixmap.fill(QColor(255, 255, 255, 230))
        s, ox, oy = self._mapping()
        r = self._scene_rect
        target = QRectF(r.left() * s + ox, r.top() * s + oy, r.width() * s, r.height() * s)
        painter = QPainter(self._pixmap)
        scene.render(painter, target, r, Qt.AspectRatioMode.IgnoreAspectRatio)
        painter.end()
        self.update()

    def _mapping(self) -> tuple[float, float, float]:
        r = self._scene_rect
        if r.isEmpty():
            return 1.0, 0.0, 0.0
        s = min(self.width() / r.width(), self.height() / r.height())
        ox = (self.width() - r.width() * s) / 2 - r.left() * s
        oy = (self.height() - r.height() * s) / 2 - r.top() * s
        return s, ox, oy

    def paintEvent(self, event: QPaintEvent) -> None:
        """Qt: draw the widget."""
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._pixmap)
        painter.setPen(QPen(QColor("#909090"), 1))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        s, ox, oy = self._mapping()
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        painter.setPen(QPen(QColor("#d32f2f"), 1.5))
        box = QRectF(
            visible.left() * s + ox,
            visible.top() * s + oy,
            max(3.0, visible.width() * s),
            max(3.0, visible.height() * s),
        )
        painter.drawRect(box.intersected(QRectF(self.rect()).adjusted(1, 1, -1, -1)))

    def _jump(self, pos: QPointF) -> None:
        s, ox, oy = self._mapping()
        self.view.centerOn(QPointF((pos.x() - ox) / s, (pos.y() - oy) / s))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """Qt: a mouse button went down."""
        self._jump(event.position())

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        """Qt: the mouse moved."""
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._jump(event.position())


def node_tooltip(ir: GraphIR, index: int, overlay_values: np.ndarray | None = None) -> str:
    """HTML describing node ``index``: op, name, overlay value, tensors with their types and
    shapes."""

    def tensor_rows(names: list[str]) -> str:
        rows = []
        for t in names:
            info = ir.tensor_info.get(t)
            weight = (
                " <i>(weight)</i>"
                if t in ir.initializer_names
                else f" <i>(constant: {' → '.join(ir.constants[t])})</i>"
                if t in ir.constants
                else ""
            )
            shape = info.text() if info else "?"
            rows.append(f"<tr><td>{t}{weight}</td><td>{shape}</td></tr>")
        return "".join(rows)

    value = ""
    if overlay_values is not None and not math.isnan(overlay_values[index]):
        value = f"<br>overlay value: <b>{overlay_values[index]:.4g}</b>"
    kind = "" if ir.kinds[index] == NodeKind.OPERATOR else f" ({ir.op_types[index].lower()})"
    return (
        f"<b>{ir.op_types[index]}</b> {ir.names[index]}{kind}{value}"
        f"<table><tr><th colspan=2 align=left>inputs</th></tr>"
        f"{tensor_rows(ir.node_inputs[index])}"
        f"<tr><th colspan=2 align=left>outputs</th></tr>"
        f"{tensor_rows(ir.node_outputs[index])}</table>"
    )
