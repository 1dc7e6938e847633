"""One open model: its panels (Summary, Graph, Inputs, Quantization, Performance, Netron).

The state lives in a Qt-free :class:`~edgestudio.core.workspace.document.ModelDocument`; this
view builds the panels, which render it and change it through its methods.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QMenu, QTabWidget, QVBoxLayout, QWidget

from edgestudio.core.edit.edit_recipe import EditRecipe, edited_path
from edgestudio.core.inputs import input_memory
from edgestudio.core.model.cost_recipe import CostRecipe, ModelCost
from edgestudio.core.perf.providers import provider_colour, short_name
from edgestudio.core.quant.quant_runs import QuantRun, RunState
from edgestudio.core.serialise import to_json
from edgestudio.core.targets.target_recipe import PLACEMENT_COLOURS
from edgestudio.core.workspace.document import ModelDocument, Overlay, OverlayKind
from edgestudio.gui.inputs.inputs_panel import InputsPanel
from edgestudio.gui.model.graph_panel import GraphPanel
from edgestudio.gui.model.model_loader import LoadedModel
from edgestudio.gui.model.netron_view import NetronView
from edgestudio.gui.model.summary_panel import SummaryPanel
from edgestudio.gui.model.surgery_menu import add_surgery_actions
from edgestudio.gui.panel_names import slug
from edgestudio.gui.perf.perf_panel import PerfPanel
from edgestudio.gui.quant.quant_panel import QuantPanel


class DocumentView(QWidget):
    """A model document: a "loading…" placeholder until :meth:`set_loaded` fills the panels."""

    requantize_requested = Signal(object)  # frozenset[str]: exclude these and quantize again
    int16_requested = Signal(object)  # frozenset[str]: keep these in 16-bit, quantize again
    cost_requested = Signal(object)  # a CostRecipe for the window's job queue
    edit_requested = Signal(object)  # an EditRecipe (model surgery) for the job queue

    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self.document = ModelDocument(path)
        self.loaded: LoadedModel | None = None
        self.panels = QTabWidget()
        self.panels.setObjectName("panels")
        self.panels.setDocumentMode(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self._placeholder = QLabel(f"Loading {path.name}…")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self._placeholder)
        layout.addWidget(self.panels)
        self.panels.hide()

    @property
    def is_loaded(self) -> bool:
        """True once the model has been parsed and its panels built."""
        return self.loaded is not None

    def set_loaded(self, loaded: LoadedModel) -> None:
        """Build the panels for a parsed model."""
        self.loaded = loaded
        document = self.document
        document.summary = to_json(loaded.summary)
        document.model_hash, document.file_stamp = loaded.sha256, loaded.stamp
        document.inputs = input_memory.recall(loaded.path)
        self.summary_panel = SummaryPanel(loaded.summary)
        self.panels.addTab(self.summary_panel, "Summary")
        self.graph_panel = GraphPanel(
            loaded.model.graph, loaded.path, constants=loaded.constants, table=loaded.table
        )
        self.graph_panel.subgraph_requested.connect(self.open_subgraph)
        self.panels.addTab(self.graph_panel, "Graph")
        self.inputs_panel = InputsPanel(document, loaded.model)
        self.panels.addTab(self.inputs_panel, "Inputs")
        self.graph_panel.view.node_context_menu.connect(self._node_menu)
        self.quant_panel = QuantPanel(document, loaded.model)
        self.quant_panel.node_chosen.connect(self.graph_panel.select_by_name)
        self.panels.addTab(self.quant_panel, "Quantization")
        self.perf_panel = PerfPanel(document)
        self.perf_panel.node_chosen.connect(self.graph_panel.select_by_name)
        self.panels.addTab(self.perf_panel, "Performance")
        document.events.inputs.connect(self._remember_inputs)
        document.events.excluded.connect(self._show_excluded)
        document.events.overlay.connect(self._show_overlay)
        # a bound method: psygnal holds it weakly (a lambda would keep this view alive)
        document.events.sensitivity.connect(self._sensitivity_changed)
        document.restored.connect(self._on_restored)
        self.summary_panel.cost_box.count_requested.connect(self._count_cost)
        self.summary_panel.rename_requested.connect(
            lambda old, new: self.edit(EditRecipe(rename=(f"{old}={new}",)), "renamed")
        )
        self.summary_panel.cost_box.overlay_requested.connect(self._colour_by)
        document.events.cost.connect(self._cost_changed)
        document.cost_failed.connect(self.summary_panel.cost_box.count_failed)
        document.events.tensor_shapes.connect(self.graph_panel.show_shapes)
        document.tensor_shapes_failed.connect(self.graph_panel.shapes_failed)
        self.graph_panel.ready.connect(self._on_restored)  # marks need the laid-out graph
        # Netron's web view is heavy: built the first time its tab is shown.
        self.netron_holder = QWidget()
        QVBoxLayout(self.netron_holder).setContentsMargins(0, 0, 0, 0)
        self.netron_view: NetronView | None = None
        self.panels.addTab(self.netron_holder, "Netron")
        self.panels.currentChanged.connect(self._on_panel_shown)
        self._placeholder.hide()
        self.panels.show()

    @property
    def excluded(self) -> frozenset[str]:
        """Nodes to keep in float in the next quantization (the document's)."""
        return self.document.excluded

    def set_excluded(self, nodes: set[str] | frozenset[str]) -> None:
        """Keep ``nodes`` in float in the next quantization; they are outlined on the graph."""
        self.document.exclude(nodes)

    def _show_excluded(self, nodes: frozenset[str]) -> None:
        self.graph_panel.view.set_marked(sorted(nodes))

    def _remember_inputs(self, overrides: object) -> None:
        input_memory.remember(self.path, overrides)  # type: ignore[arg-type]

    def _show_overlay(self, overlay: Overlay) -> None:
        """Colour the graph as the document's overlay says, and outline the excluded nodes."""
        view = self.graph_panel.view
        shown = self.document.overlay_values()
        if shown is None:
            return
        title, values = shown
        if overlay.kind is OverlayKind.PROVIDER:
            placement = {node: short_name(str(ep)) for node, ep in values.items()}
            colours = {short_name(str(ep)): provider_colour(str(ep)) for ep in values.values()}
            view.set_category_overlay(placement, colours, title)
        elif overlay.kind is OverlayKind.TARGET:  # the accelerator, or the CPU and why
            view.set_category_overlay(
                values,  # type: ignore[arg-type]
                PLACEMENT_COLOURS,
                title,
            )
        elif overlay.kind is OverlayKind.SQNR:  # the absolute scale of the Quantization tab
            run = self.document.run(overlay.run or 0)
            representative = bool(run and run.analysis and run.analysis.representative)
            view.show_sqnr(
                values,  # type: ignore[arg-type]
                representative,
                title,
                self.document.overlay_note(),
            )
        elif overlay.kind in (OverlayKind.MACS, OverlayKind.MEMORY):  # orders of magnitude
            view.set_scalar_overlay(
                values,  # type: ignore[arg-type]
                title,
                log=True,
                aggregate="sum",
            )  # a group shows its sum
        elif overlay.kind is OverlayKind.SENSITIVITY:  # a group shows its best layer's gain
            view.set_scalar_overlay(values, title, aggregate="max")  # type: ignore[arg-type]
        else:  # a closed group shows its summed time share
            view.set_scalar_overlay(values, title, aggregate="sum")  # type: ignore[arg-type]
        view.set_marked(sorted(self.document.excluded))

    def _count_cost(self) -> None:
        self.cost_requested.emit(CostRecipe(model=str(self.path)))

    def _colour_by(self, kind: OverlayKind) -> None:
        self.document.overlay = Overlay(kind)
        self.panels.setCurrentWidget(self.graph_panel)

    def _cost_changed(self, cost: ModelCost | None) -> None:
        self.summary_panel.cost_box.show_cost(cost)
        self.graph_panel.properties.set_costs(cost)
        if self.document.overlay.kind in (OverlayKind.MACS, OverlayKind.MEMORY):
            self._show_overlay(self.document.overlay)

    def _sensitivity_changed(self, _result: object) -> None:
        self._show_overlay(self.document.overlay)

    def _on_restored(self) -> None:
        self.summary_panel.cost_box.show_cost(self.document.cost)
        self.graph_panel.properties.set_costs(self.document.cost)
        self._show_excluded(self.document.excluded)
        self._show_overlay(self.document.overlay)

    def _node_menu(self, index: int, global_pos: object) -> None:
        menu = self.node_menu_for(index)
        if menu is not None:
            menu.popup(global_pos)  # type: ignore[arg-type]

    def node_menu_for(self, index: int) -> QMenu | None:
        """The right-click menu of graph node ``index`` (a closed group stands for its
        operators): exclude or include it, or exclude it and quantize again at once."""
        ir = self.graph_panel.ir
        if ir is None or (ir.onnx_node(index) is None and not ir.is_group(index)):
            return None
        name = ir.names[index]
        # a closed group stands for its operators
        nodes = frozenset(ir.members[index]) if ir.is_group(index) else frozenset({name})
        what = (
            f"group '{ir.group_labels.get(index, name)}' ({len(nodes)} nodes)"
            if ir.is_group(index)
            else f"'{name}'"
        )
        menu = QMenu(self)
        if nodes <= self.excluded:
            action = menu.addAction(f"Quantize {what} again")
            action.triggered.connect(lambda: self.set_excluded(self.excluded - nodes))
        else:
            action = menu.addAction(f"Exclude {what} from quantization")
            action.triggered.connect(lambda: self.set_excluded(self.excluded | nodes))
            base = self.requantize_base()
            again = menu.addAction(f"Exclude {what} and re-quantize")
            again.setEnabled(base is not None)
            again.setToolTip(
                "Quantize as the last run did, keeping these in float too, and compare the two runs"
                if base
                else "Quantize the model once first (Tools › Quantize…)"
            )
            again.triggered.connect(lambda: self.requantize_requested.emit(nodes))
            wide = menu.addAction(f"Keep {what} in 16-bit and re-quantize")
            wide.setEnabled(
                base is not None
                and base.recipe.mode == "qdq"
                and base.recipe.activation_type in ("uint8", "int8")
            )
            wide.setToolTip(
                "Quantize as the last QDQ run did with these nodes' activations in "
                "16-bit (the rest 8-bit, nothing in float), and compare the two "
                "runs"
                if wide.isEnabled()
                else "Needs an 8-bit QDQ run to start from (Tools › Quantize…)"
            )
            wide.triggered.connect(lambda: self.int16_requested.emit(nodes))
        add_surgery_actions(menu.addMenu("Model surgery"), ir, index, self.edit, self)
        self.node_menu = menu  # kept alive while it is shown
        return menu

    def edit(self, recipe: EditRecipe, what: str) -> EditRecipe:
        """Ask for ``recipe`` on this model, written to a new file beside it."""
        full = replace(recipe, model=str(self.path), output=edited_path(str(self.path), what))
        self.edit_requested.emit(full)
        return full

    def requantize_base(self) -> QuantRun | None:
        """The run an "exclude and re-quantize" starts from: the latest that wrote a model."""
        return next(
            (
                r
                for r in reversed(self.document.runs)
                if r.output and r.state.is_final and r.state is not RunState.FAILED
            ),
            None,
        )

    def _on_panel_shown(self, index: int) -> None:
        # The first look at the Inputs tab finds the inputs (a background job); Netron's web
        # view is built the first time its tab is shown.
        if self.panels.widget(index) is self.inputs_panel and self.inputs_panel.state in (
            "unknown",
            "edited",
        ):
            self.inputs_panel.request_find()
        if self.panels.widget(index) is self.netron_holder and self.netron_view is None:
            self.netron_view = NetronView(self.path)
            layout = self.netron_holder.layout()
            assert layout is not None
            layout.addWidget(self.netron_view)

    def open_subgraph(self, title: str, graph: object) -> GraphPanel:
        """Open an If/Loop/Scan body in a tab of its own."""
        panel = GraphPanel(graph, None)  # type: ignore[arg-type]
        panel.subgraph_requested.connect(self.open_subgraph)
        self.panels.addTab(panel, f"Graph: {title}")
        self.panels.setCurrentWidget(panel)
        return panel

    def graph_panels(self) -> list[GraphPanel]:
        """Every graph panel of this document (main graph first, then opened subgraphs)."""
        panels = [self.panels.widget(i) for i in range(self.panels.count())]
        return [p for p in panels if isinstance(p, GraphPanel)]

    @property
    def is_ready(self) -> bool:
        """Loaded, and every graph panel has finished its layout."""
        return self.is_loaded and all(p.is_ready for p in self.graph_panels())

    def shutdown(self) -> None:
        """Stop background work (closing)."""
        for panel in self.graph_panels():
            panel.shutdown()
        if self.netron_view is not None:
            self.netron_view.shutdown()

    def panel_names(self) -> list[str]:
        """Return the names ``--panel`` accepts: each tab, and each tab inside one
        (``performance/profile``), as :mod:`edgestudio.gui.panel_names` spells them."""
        names = []
        for i in range(self.panels.count()):
            outer = slug(self.panels.tabText(i))
            names.append(outer)
            inner = getattr(self.panels.widget(i), "tabs", None)
            if isinstance(inner, QTabWidget):
                names += [f"{outer}/{slug(inner.tabText(k))}" for k in range(inner.count())]
        return names

    def show_panel(self, name: str) -> bool:
        """Bring the panel called ``name`` (case-insensitive; ``outer/inner`` for a tab inside
        one) to the front; False if none."""
        if name.lower() not in self.panel_names():
            return False
        outer, _, inner = name.lower().partition("/")
        titles = [slug(self.panels.tabText(i)) for i in range(self.panels.count())]
        self.panels.setCurrentIndex(titles.index(outer))
        tabs = getattr(self.panels.currentWidget(), "tabs", None)
        if inner and isinstance(tabs, QTabWidget):
            tabs.setCurrentIndex([slug(tabs.tabText(k)) for k in range(tabs.count())].index(inner))
        return True
