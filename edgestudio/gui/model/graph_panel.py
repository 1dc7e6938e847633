"""The Graph panel: search bar, graph view and properties; layout and shape inference run in
the background with progress and cancel."""

from __future__ import annotations

from pathlib import Path

import onnx
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.model.graph_ir import GraphIR, NodeTable, TensorInfo
from edgestudio.core.model.groups import GroupTree
from edgestudio.core.model.laid_out import LaidOut, lay_out
from edgestudio.core.model.layout import Layout
from edgestudio.core.model.tensor_shapes import ShapesRecipe, TensorShapes
from edgestudio.core.progress import CancelledError
from edgestudio.gui.background import Background
from edgestudio.gui.model.graph_bar import GraphBar
from edgestudio.gui.model.graph_view import GraphView
from edgestudio.gui.model.properties_panel import PropertiesPanel

QUICK_RELAYOUT = 3000  # below this many nodes a new layout is quick: no progress page


class GraphPanel(QWidget):
    """One graph (the main graph or a subgraph) with search and node properties."""

    ready = Signal()  # layout done (or failed): the panel shows its final content
    node_selected = Signal(int)
    subgraph_requested = Signal(str, object)
    shapes_requested = Signal(object)  # a ShapesRecipe for the window's job queue

    def __init__(
        self,
        graph: onnx.GraphProto,
        model_path: Path | None,
        parent: QWidget | None = None,
        compact: bool = False,
        constants: dict[int, str] | None = None,
        table: NodeTable | None = None,
    ) -> None:
        """``compact``: one of two graphs side by side (the Compare window): a narrower bar,
        the status on its own line, no minimap box (M still shows it), and no shape-inference
        job asked for (the labels show the shapes the model declares)."""
        super().__init__(parent)
        self.compact = compact
        # The graph's constant-only nodes and node table, if the loader found them.
        self._constants, self._table = constants, table
        self.setObjectName("graph_panel")
        self.graph = graph
        self.model_path = model_path
        self.ir: GraphIR | None = None
        self.layout_result: Layout | None = None
        self.is_ready = False
        self.error: str | None = None
        self._keep_selection: str | None = None
        # The flat graph and its groups, per constants setting, and the groups open now.
        self._known: dict[bool, tuple[GraphIR, GroupTree]] = {}
        self.flat: GraphIR | None = None
        self.tree: GroupTree | None = None
        self.opened: set[str] | None = None
        self._generation = 0
        self._shapes_asked = False
        self._shapes: TensorShapes | None = None  # inferred once, applied to every layout
        self._layout_note = ""
        self.shapes_note = ""  # what the status says of shapes: inferring, or why there are none

        self.view = GraphView()
        self.properties = PropertiesPanel(model_path.parent if model_path else Path("."))
        self.properties.subgraph_requested.connect(self.subgraph_requested)
        self.view.node_selected.connect(self._on_node_selected)
        self.view.node_activated.connect(self._activated)
        self.view.close_requested.connect(self.close_group_of)

        bar = GraphBar(
            self.view, lambda _: self._relayout(), lambda _: self._groups_toggled(), compact
        )
        self.finder, self.status = bar.finder, bar.status
        self.constants_toggle, self.groups_toggle = bar.constants_toggle, bar.groups_toggle
        self.minimap_toggle = bar.minimap_toggle

        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.cancel_button = QPushButton("Cancel layout")
        self.cancel_button.clicked.connect(self.cancel_layout)
        busy = QWidget()
        busy_layout = QVBoxLayout(busy)
        busy_layout.addStretch(1)
        busy_layout.addWidget(
            QLabel(f"Laying out {len(graph.node):,} nodes…"), 0, Qt.AlignmentFlag.AlignHCenter
        )
        busy_layout.addWidget(self.progress)
        busy_layout.addWidget(self.cancel_button, 0, Qt.AlignmentFlag.AlignHCenter)
        busy_layout.addStretch(1)
        self.stack = QStackedWidget()
        self.stack.addWidget(busy)
        self.stack.addWidget(self.view)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.stack)
        splitter.addWidget(self.properties)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([900, 340])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        if compact:
            layout.addWidget(self.status)
        layout.addWidget(splitter, 1)

        for keys, slot in (
            ("Ctrl+F", self.focus_search),
            ("F3", self.finder.next_hit),
            ("Shift+F3", self.finder.previous_hit),
        ):
            shortcut = QShortcut(QKeySequence(keys), self)
            # A document's graph works from anywhere in its window while it is shown (Qt skips
            # a shortcut whose widget is hidden), e.g. right after its tab was clicked; the
            # compact pair of a comparison share a window, so each keeps to its own focus.
            shortcut.setContext(
                Qt.ShortcutContext.WidgetWithChildrenShortcut
                if compact
                else Qt.ShortcutContext.WindowShortcut
            )
            shortcut.activated.connect(slot)

        self._background = Background(self)
        self._start_layout()

    def _start_layout(self) -> None:
        self.is_ready = False
        self._generation += 1
        generation = self._generation  # results of a layout replaced since are dropped

        def done(result: LaidOut) -> None:
            if generation == self._generation:
                self._on_layout(result)

        def failed(exc: Exception) -> None:
            if generation == self._generation:
                self._on_layout_failed(exc)

        fold = not self.constants_toggle.isChecked()
        known, opened, grouped = self._known.get(fold), self.opened, self.groups_toggle.isChecked()
        self._layout_task = self._background.run(
            lambda progress, cancelled: lay_out(
                self.graph,
                fold,
                known,
                opened,
                grouped,
                progress,
                cancelled,
                self._constants,
                self._table,
            ),
            done,
            failed,
            lambda f: self.progress.setValue(int(f * 1000)),
        )

    def _relayout(self, keep: str | None = None) -> None:
        """Lay the graph out again (constants shown or folded, groups opened or closed); the
        selection (or ``keep``) is selected again."""
        self._layout_task.cancel()
        self._background.wait(10_000)
        self._keep_selection = keep or (
            self.ir.names[self.view.selected]
            if self.ir is not None and self.view.selected >= 0
            else None
        )
        self.progress.setValue(0)
        if self.flat is None or self.flat.node_count > QUICK_RELAYOUT:
            self.stack.setCurrentIndex(0)  # a progress bar for the big ones only
        self._start_layout()

    # ----- groups --------------------------------------------------------------------------------
    def open_group(self, path: str) -> None:
        """Open the closed group ``path`` (its first box or operator is then selected)."""
        if (
            self.tree is None
            or path not in self.tree.groups
            or self.opened is None
            or self.flat is None
        ):
            return
        group = self.tree.groups[path]
        first = (
            group.children[0]
            if group.children
            else self.flat.names[group.nodes[0]]
            if group.nodes
            else path
        )
        self.opened = self.opened | {path}
        self._relayout(first)

    def close_group_of(self, index: int) -> None:
        """Close the innermost open group holding node ``index`` (the group is then selected)."""
        if self.ir is None or self.tree is None or self.flat is None or self.opened is None:
            return
        name = self.ir.names[index]
        if self.ir.is_group(index):
            path = self.tree.groups[name].parent
        else:
            flat_index = self.flat.index_of(name)
            scopes = self.tree.path_to(flat_index, self.flat) if flat_index is not None else []
            path = scopes[-1] if scopes else None
        if not path:
            return  # already at the top
        self.opened = {p for p in self.opened if p != path and not p.startswith(path + "/")}
        self._relayout(path)

    def _activated(self, index: int) -> None:
        if self.ir is not None and self.ir.is_group(index):
            self.open_group(self.ir.names[index])

    def _groups_toggled(self) -> None:
        self.opened = None  # back to the first view's choice (or everything when off)
        self._relayout()

    # ----- layout ------------------------------------------------------------------------------
    def cancel_layout(self) -> None:
        """Stop a running layout (the panel then says so)."""
        self._layout_task.cancel()

    def _on_layout(self, result: LaidOut) -> None:
        ir, layout = result.ir, result.layout
        self._known[not self.constants_toggle.isChecked()] = (result.flat, result.tree)
        self.flat, self.tree, self.opened = result.flat, result.tree, result.opened
        self.ir = ir
        self.layout_result = layout
        self.view.set_graph(ir, layout, result.routes)
        self.properties.set_graph(ir, self.graph)
        self.stack.setCurrentWidget(self.view)
        note = f" · {len(layout.cyclic)} nodes on a cycle" if len(layout.cyclic) else ""
        if ir.folded_count:
            note += f" · {ir.folded_count:,} constants folded"
        if ir.members:
            note += f" · {len(ir.members):,} groups closed"
        layers = sum(1 for path in result.tree.groups if path.startswith("layer "))
        if result.tree.note:  # the names had no scopes: say how the groups were found
            note += f" · {layers} repeated layers found" if layers else " · stages (no name scopes)"
        self._layout_note = f"{len(self.graph.node):,} nodes{note}"
        self._show_status()
        kept, self._keep_selection = self._keep_selection, None
        if kept is not None:
            self.select_by_name(kept)
        self.is_ready = True
        if self._shapes is not None:
            self.show_shapes(self._shapes)
        self.ready.emit()
        if self.model_path is not None and not self._shapes_asked and not self.compact:
            self._shapes_asked = True  # the main graph of a file: ask for every tensor's shape
            self.shapes_note = "shapes: inferring…"
            self._show_status()
            self.shapes_requested.emit(ShapesRecipe(model=str(self.model_path)))

    def _show_status(self) -> None:
        """The bar's status: node count, what is folded and closed, and where shapes stand."""
        text = self._layout_note + (f" · {self.shapes_note}" if self.shapes_note else "")
        self.status.setText(text)
        tips = []
        if self.tree is not None and self.tree.note:
            tips.append(self.tree.note[0].upper() + self.tree.note[1:] + ".")
        if self.ir is not None and self.ir.folded_count:
            tips.append(
                "Nodes in the graph; constants folded into the nodes that use them are "
                "drawn as C badges (tick 'Constants as nodes' to see them)."
            )
        if self.shapes_note:
            tips.append(
                "Edges are labelled with the shapes the model declares; the others "
                "show their tensor's name until shape inference (a background job) "
                "has given them theirs."
                if self._shapes is None
                else self.shapes_note
            )
        self.status.setToolTip("\n".join(tips))

    def _on_layout_failed(self, exc: Exception) -> None:
        message = (
            "Layout cancelled."
            if isinstance(exc, CancelledError)
            else f"Layout failed: {type(exc).__name__}: {exc}"
        )
        self.error = message
        self.progress.hide()
        self.cancel_button.hide()
        self.status.setText(message)
        self.is_ready = True
        self.ready.emit()

    def wait(self, msecs: int = 60_000) -> bool:
        """Block until the layout thread finished (shutdown and tests)."""
        return self._background.wait(msecs)

    def shutdown(self) -> None:
        """Cancel background work and wait for it (the tab is closing)."""
        self._layout_task.cancel()
        self._background.wait(10_000)

    # ----- shapes --------------------------------------------------------------------------------
    def show_shapes(self, shapes: TensorShapes) -> None:
        """Every tensor's inferred type and shape (the shape-inference job's result)."""
        self._shapes = shapes
        self.shapes_note = ""
        self._show_status()
        if self.ir is None:
            return
        for name, (dtype, shape) in shapes.items():
            self.ir.tensor_info[name] = TensorInfo(
                str(dtype), None if shape is None else tuple(shape)
            )
        self.view.viewport().update()
        if self.view.selected >= 0:
            self.properties.show_node(self.view.selected)

    def shapes_failed(self, message: str) -> None:
        """Shape inference gave nothing: the labels keep the declared shapes, the bar says why."""
        self.shapes_note = "shapes: only those the model declares"
        self._show_status()
        self.status.setToolTip(f"Shape inference did not finish: {message}")

    # ----- search and selection ---------------------------------------------------------------
    def focus_search(self) -> None:
        """Put the cursor in the search field."""
        self.finder.focus()

    def _on_node_selected(self, index: int) -> None:
        self.properties.show_node(index)
        self.node_selected.emit(index)

    def select_by_name(self, name: str) -> bool:
        """Select (and centre) the node called ``name``; the way other views drive the graph.

        A node inside closed groups opens them first (laid out again, then selected); a folded
        constant node (a Cast of a weight) selects the node that reads it.
        """
        if self.flat is not None and name in self.flat.folded_names:
            consumer = self.flat.index_of(name)
            if consumer is not None:
                name = self.flat.names[consumer]
        if (
            self.ir is not None
            and self.tree is not None
            and self.flat is not None
            and name in self.ir.hidden
            and self.opened is not None
        ):
            flat_index = self.flat.index_of(name)
            if flat_index is not None:
                self.opened = self.opened | set(self.tree.path_to(flat_index, self.flat))
                self._relayout(name)
                return True
        return self.view.select_by_name(name)
