"""The Graph panel: search bar, graph view and properties; layout and shape inference run in
the background with progress and cancel."""

from __future__ import annotations

import threading
from pathlib import Path

import onnx
from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.graph_ir import GraphIR, TensorInfo, build_graph_ir
from edgestudio.core.layout import Layout, layered_layout
from edgestudio.core.progress import CancelledError
from edgestudio.core.recipes import ShapesRecipe
from edgestudio.gui.graph_view import GraphView
from edgestudio.gui.properties_panel import PropertiesPanel
from edgestudio.jobs.runner import Job, JobState


class _LayoutSignals(QObject):
    progressed = Signal(float)
    finished = Signal(object, object)  # GraphIR, Layout
    failed = Signal(str)


class _LayoutTask(QRunnable):
    """Builds the IR and the layout on a pool thread; stops early when cancelled."""

    def __init__(self, graph: onnx.GraphProto, signals: _LayoutSignals,
                 cancel: threading.Event) -> None:
        super().__init__()
        self.graph = graph
        self.signals = signals
        self.cancel = cancel

    def run(self) -> None:
        try:
            ir = build_graph_ir(self.graph)
            layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst,
                                    progress=self.signals.progressed.emit,
                                    cancelled=self.cancel.is_set)
        except CancelledError:
            self.signals.failed.emit("Layout cancelled.")
        except Exception as exc:  # a malformed graph must not take the app down
            self.signals.failed.emit(f"Layout failed: {type(exc).__name__}: {exc}")
        else:
            self.signals.finished.emit(ir, layout)


class GraphPanel(QWidget):
    """One graph (the main graph or a subgraph) with search and node properties."""

    ready = Signal()  # layout done (or failed): the panel shows its final content
    node_selected = Signal(int)
    subgraph_requested = Signal(str, object)

    def __init__(self, graph: onnx.GraphProto, model_path: Path | None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graph_panel")
        self.graph = graph
        self.model_path = model_path
        self.ir: GraphIR | None = None
        self.layout_result: Layout | None = None
        self.is_ready = False
        self.error: str | None = None
        self._hits: list[int] = []
        self._hit = -1
        self._shape_job: Job | None = None

        self.view = GraphView()
        self.properties = PropertiesPanel(model_path.parent if model_path else Path("."))
        self.properties.subgraph_requested.connect(self.subgraph_requested)
        self.view.node_selected.connect(self._on_node_selected)

        self.search = QLineEdit()
        self.search.setObjectName("graph_search")
        self.search.setPlaceholderText("Find node, op type or tensor  (Ctrl+F, Enter: next)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._on_search)
        self.search.returnPressed.connect(self.next_hit)
        self.hit_label = QLabel("")
        self.hit_label.setMinimumWidth(90)
        prev_button, next_button = QToolButton(), QToolButton()
        prev_button.setText("▲")
        prev_button.setToolTip("Previous match (Shift+F3)")
        next_button.setText("▼")
        next_button.setToolTip("Next match (F3)")
        prev_button.clicked.connect(self.previous_hit)
        next_button.clicked.connect(self.next_hit)
        fit = QPushButton("Fit")
        fit.setToolTip("Readable overview (F or 0 in the graph)")
        fit.clicked.connect(self.view.fit)
        whole = QPushButton("Whole graph")
        whole.setToolTip("Zoom out until everything is in the window (A in the graph)")
        whole.clicked.connect(self.view.fit_all)
        self.status = QLabel("")
        bar = QHBoxLayout()
        bar.addWidget(self.search, 1)
        bar.addWidget(prev_button)
        bar.addWidget(next_button)
        bar.addWidget(self.hit_label)
        bar.addWidget(fit)
        bar.addWidget(whole)
        bar.addWidget(self.status)

        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.cancel_button = QPushButton("Cancel layout")
        self.cancel_button.clicked.connect(self.cancel_layout)
        busy = QWidget()
        busy_layout = QVBoxLayout(busy)
        busy_layout.addStretch(1)
        busy_layout.addWidget(QLabel(f"Laying out {len(graph.node):,} nodes…"),
                              0, Qt.AlignmentFlag.AlignHCenter)
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
        layout.addWidget(splitter, 1)

        for keys, slot in (("Ctrl+F", self.focus_search), ("F3", self.next_hit),
                           ("Shift+F3", self.previous_hit)):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)

        self._cancel = threading.Event()
        self._signals = _LayoutSignals(self)
        self._signals.progressed.connect(lambda f: self.progress.setValue(int(f * 1000)))
        self._signals.finished.connect(self._on_layout)
        self._signals.failed.connect(self._on_layout_failed)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._pool.start(_LayoutTask(graph, self._signals, self._cancel))
        self._shape_timer = QTimer(self)
        self._shape_timer.setInterval(100)
        self._shape_timer.timeout.connect(self._poll_shapes)

    # ----- layout ------------------------------------------------------------------------------
    def cancel_layout(self) -> None:
        """Stop a running layout (the panel then says so)."""
        self._cancel.set()

    def _on_layout(self, ir: GraphIR, layout: Layout) -> None:
        self.ir = ir
        self.layout_result = layout
        self.view.set_graph(ir, layout)
        self.properties.set_graph(ir, self.graph)
        self.stack.setCurrentWidget(self.view)
        note = f" · {len(layout.cyclic)} nodes on a cycle" if len(layout.cyclic) else ""
        self.status.setText(f"{len(self.graph.node):,} nodes{note}")
        self.is_ready = True
        self.ready.emit()
        self._start_shape_inference()

    def _on_layout_failed(self, message: str) -> None:
        self.error = message
        self.progress.hide()
        self.cancel_button.hide()
        self.status.setText(message)
        self.is_ready = True
        self.ready.emit()

    def wait(self, msecs: int = 60_000) -> bool:
        """Block until the layout thread finished (shutdown and tests)."""
        return bool(self._pool.waitForDone(msecs))

    def shutdown(self) -> None:
        """Cancel background work and wait for it (the tab is closing)."""
        self._cancel.set()
        self._pool.waitForDone(10_000)
        if self._shape_job is not None and not self._shape_job.state.is_final:
            self._shape_job.cancel()
            self._shape_job.wait(10)
        self._shape_timer.stop()

    # ----- shapes --------------------------------------------------------------------------------
    def _start_shape_inference(self) -> None:
        """Ask a worker for every tensor's shape (main graph of a file only)."""
        if self.model_path is None or self.ir is None:
            return
        self._shape_job = Job(ShapesRecipe(model=str(self.model_path)), timeout=600)
        try:
            self._shape_job.start()
        except Exception as exc:
            self.status.setText(f"{self.status.text()} · shapes unavailable: {exc}")
            return
        self._shape_timer.start()

    def _poll_shapes(self) -> None:
        job = self._shape_job
        if job is None or self.ir is None:
            return
        job.poll(0.0)
        if not job.state.is_final:
            return
        self._shape_timer.stop()
        if job.state is JobState.SUCCEEDED and job.report is not None:
            for name, (dtype, shape) in job.report.details.get("shapes", {}).items():
                self.ir.tensor_info[name] = TensorInfo(
                    str(dtype), None if shape is None else tuple(shape))
            self.view.viewport().update()
            if self.view.selected >= 0:
                self.properties.show_node(self.view.selected)

    # ----- search and selection ---------------------------------------------------------------
    def focus_search(self) -> None:
        """Put the cursor in the search field."""
        self.search.setFocus()
        self.search.selectAll()

    def _on_search(self, text: str) -> None:
        self._hits = self.ir.find(text) if self.ir is not None else []
        self._hit = -1
        if not text:
            self.hit_label.setText("")
        elif not self._hits:
            self.hit_label.setText("no match")
        else:
            self.next_hit()

    def next_hit(self) -> None:
        """Select and centre the next search match."""
        self._step(1)

    def previous_hit(self) -> None:
        """Select and centre the previous search match."""
        self._step(-1)

    def _step(self, delta: int) -> None:
        if not self._hits:
            return
        self._hit = (self._hit + delta) % len(self._hits)
        self.hit_label.setText(f"{self._hit + 1} of {len(self._hits)}")
        self.view.select_node(self._hits[self._hit], centre=True)

    def _on_node_selected(self, index: int) -> None:
        self.properties.show_node(index)
        self.node_selected.emit(index)

    def select_by_name(self, name: str) -> bool:
        """Select (and centre) the node called ``name``; the way other views drive the graph."""
        return self.view.select_by_name(name)
