"""Properties of the selected node: attributes, tensors with types and shapes, weight statistics
with a histogram, and buttons to open If/Loop/Scan subgraphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.formatting import human_bytes
from edgestudio.core.model.cost_recipe import ModelCost, NodeCost
from edgestudio.core.model.graph_ir import GraphIR, NodeKind, subgraphs
from edgestudio.core.model.weights import read_weight, weight_histogram, weight_stats
from edgestudio.gui.widgets.plots import add_histogram
from edgestudio.gui.widgets.tables import filled_table


def attribute_text(attr: onnx.AttributeProto) -> str:
    """A readable value for one node attribute."""
    if attr.type == onnx.AttributeProto.GRAPH:
        return f"graph '{attr.g.name}' ({len(attr.g.node)} nodes)"
    if attr.type == onnx.AttributeProto.GRAPHS:
        return f"{len(attr.graphs)} graphs"
    if attr.type == onnx.AttributeProto.TENSOR:
        t = attr.t
        dims = "×".join(str(d) for d in t.dims) or "scalar"
        if not t.dims or int(np.prod(t.dims)) <= 8:
            try:
                return f"tensor {onnx.numpy_helper.to_array(t).tolist()}"
            except Exception:  # exotic types: fall back to the shape
                pass
        return f"tensor {dims}"
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return "[" + ", ".join(v.decode() if isinstance(v, bytes) else str(v) for v in value) + "]"
    return str(value)


def _tensor_list(rows: list[list[str]], name: str) -> QLabel:
    """Tensors as wrapped text: name on one line, kind and type below (narrow panels)."""
    import html

    items = "".join(
        f"<p style='margin:0 0 6px 0'><code>{html.escape(t)}</code><br>"
        f"<span style='color:#666'>{html.escape(kind)}</span> · {html.escape(kind_type)}</p>"
        for t, kind, kind_type in rows
    )
    label = QLabel(items or "(none)")
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class PropertiesPanel(QScrollArea):
    """Shows one node of a graph; empty until a node is selected."""

    subgraph_requested = Signal(str, object)  # title, onnx.GraphProto

    def __init__(self, model_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("properties_panel")
        self.setWidgetResizable(True)
        self.setMinimumWidth(320)
        self.model_dir = model_dir
        self.ir: GraphIR | None = None
        self.initializers: dict[str, onnx.TensorProto] = {}
        self.constant_values: dict[str, onnx.TensorProto] = {}
        self.node_index = -1
        self.stats_labels: dict[str, QLabel] = {}
        self.histogram: pg.PlotWidget | None = None
        self.weight_combo: QComboBox | None = None
        self.costs: dict[str, NodeCost] = {}
        self.total_macs = 0
        self.show_node(-1)

    def set_costs(self, cost: ModelCost | None) -> None:
        """Every node's cost (None: not counted); shown for the selected node."""
        self.costs = cost.by_node() if cost is not None else {}
        self.total_macs = cost.total.macs if cost is not None else 0
        self.show_node(self.node_index)

    def set_graph(self, ir: GraphIR, graph: onnx.GraphProto) -> None:
        """The graph whose nodes will be shown."""
        self.ir = ir
        self.initializers = {t.name: t for t in graph.initializer}
        # Values of folded Constant nodes, shown with the weights of the node that reads them.
        self.constant_values = {
            n.output[0]: a.t
            for n in graph.node
            if n.op_type == "Constant" and n.output and n.output[0] in ir.constants
            for a in n.attribute
            if a.name == "value"
        }
        self.show_node(-1)

    def show_node(self, index: int) -> None:
        """Fill the panel for node ``index`` (-1: a hint to select one)."""
        self.node_index = index
        body = QWidget()
        layout = QVBoxLayout(body)
        self.stats_labels = {}
        self.histogram = None
        self.weight_combo = None
        if self.ir is None or index < 0:
            hint = QLabel("Click a node to see its attributes, tensors and weights.")
            hint.setWordWrap(True)
            hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
            layout.addWidget(hint)
            layout.addStretch(1)
            self.setWidget(body)
            return
        ir = self.ir
        if ir.is_group(index):
            self._show_group(index, layout)
            self.setWidget(body)
            return
        title = QLabel(f"<h3>{ir.op_types[index]}</h3><code>{ir.names[index]}</code>")
        title.setObjectName("node_title")
        title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        title.setWordWrap(True)
        layout.addWidget(title)
        node = ir.onnx_node(index)
        if node is not None:
            if node.domain:
                layout.addWidget(QLabel(f"domain: {node.domain}"))
            if node.attribute:
                rows = [[a.name, attribute_text(a)] for a in node.attribute]
                layout.addWidget(
                    self._box(
                        "Attributes",
                        filled_table(["Name", "Value"], rows, "attributes_table", max_visible=8),
                    )
                )
        layout.addWidget(
            self._box(
                "Inputs",
                _tensor_list(self._tensor_rows(ir.node_inputs[index], True), "node_inputs"),
            )
        )
        layout.addWidget(
            self._box(
                "Outputs",
                _tensor_list(self._tensor_rows(ir.node_outputs[index], False), "node_outputs"),
            )
        )
        cost = self.costs.get(ir.names[index])
        if cost is not None:
            layout.addWidget(self._cost_box([cost]))
        weights = [
            t for t in ir.node_inputs[index] if t in self.initializers or t in self.constant_values
        ]
        if weights:
            layout.addWidget(self._weights_box(weights))
        if node is not None:
            for attr_name, graph in subgraphs(node):
                button = QPushButton(f"Open subgraph {attr_name} ({len(graph.node)} nodes)")
                button.setObjectName(f"subgraph:{attr_name}")
                button.clicked.connect(
                    lambda _=False, a=attr_name, g=graph: self.subgraph_requested.emit(
                        f"{ir.names[index]}/{a}", g
                    )
                )
                layout.addWidget(button)
        layout.addStretch(1)
        self.setWidget(body)

    def _show_group(self, index: int, layout: QVBoxLayout) -> None:
        """A closed group: its size, what it is made of, and the data flowing in and out."""
        import html

        assert self.ir is not None
        ir = self.ir
        members = ir.members[index]
        text = QLabel(
            f"<h3>Group</h3><code>{html.escape(ir.names[index])}</code>"
            f"<p>{len(members):,} operators, mostly "
            f"{html.escape(ir.group_mix.get(index, ''))}</p>"
            "<p style='color:#666'>Double-click or Enter opens it; Backspace on a "
            "node inside closes it again.</p>"
        )
        text.setObjectName("node_title")
        text.setWordWrap(True)
        text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(text)
        costs = [self.costs[m] for m in members if m in self.costs]
        if costs:
            layout.addWidget(self._cost_box(costs))
        data = [t for t in ir.node_inputs[index] if not ir.is_constant(t)]
        layout.addWidget(
            self._box("Data in", _tensor_list(self._tensor_rows(data, True), "node_inputs"))
        )
        layout.addStretch(1)

    def _tensor_rows(self, names: list[str], inputs: bool) -> list[list[str]]:
        assert self.ir is not None
        rows = []
        for t in names:
            if not t:
                rows.append(["(omitted)", "", ""])
                continue
            info = self.ir.tensor_info.get(t)
            if t in self.initializers:
                kind = "weight"
            elif t in self.ir.constants:
                kind = "constant: " + " → ".join(self.ir.constants[t])
            elif (
                inputs
                and self.ir.index_of(t) is not None
                and self.ir.kinds[self.ir.index_of(t) or 0] == NodeKind.INPUT
            ):
                kind = "graph input"
            else:
                kind = "activation"
            rows.append([t, kind, info.text() if info else "?"])
        return rows

    def _cost_box(self, costs: list[NodeCost]) -> QGroupBox:
        """The cost of one node, or the sum over a group's."""
        macs = sum(c.macs for c in costs)
        share = f" ({macs / self.total_macs:.1%} of the model)" if self.total_macs else ""
        rows = [
            ["MACs", f"{macs:,}{share}"],
            ["FLOPs", f"{sum(c.flops for c in costs):,}"],
            [
                "Parameters",
                f"{sum(c.params for c in costs):,} "
                f"({human_bytes(sum(c.param_bytes for c in costs))})",
            ],
            ["Output memory", human_bytes(sum(c.output_bytes for c in costs))],
        ]
        if not all(c.known for c in costs):
            rows.append(["Note", "shape unknown: counted as 0"])
        return self._box(
            "Cost" if len(costs) == 1 else f"Cost ({len(costs)} operators)",
            filled_table(["", "Value"], rows, "cost_table"),
        )

    @staticmethod
    def _box(title: str, widget: QWidget) -> QGroupBox:
        box = QGroupBox(title)
        inner = QVBoxLayout(box)
        inner.setContentsMargins(6, 6, 6, 6)
        inner.addWidget(widget)
        return box

    def _weights_box(self, names: list[str]) -> QGroupBox:
        box = QGroupBox("Weights")
        layout = QVBoxLayout(box)
        self.weight_combo = QComboBox()
        self.weight_combo.setObjectName("weight_combo")
        self.weight_combo.addItems(names)
        layout.addWidget(self.weight_combo)
        form = QFormLayout()
        for key in ("shape", "dtype", "min", "max", "mean", "std", "zeros"):
            label = QLabel()
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.stats_labels[key] = label
            form.addRow(f"{key}:", label)
        layout.addLayout(form)
        self.histogram = pg.PlotWidget(background=None)
        self.histogram.setObjectName("weight_histogram")
        self.histogram.setMinimumHeight(170)
        self.histogram.getPlotItem().setMenuEnabled(False)
        self.histogram.getPlotItem().getAxis("left").setLabel("count")
        layout.addWidget(self.histogram)
        self.weight_combo.currentTextChanged.connect(self.show_weight)
        self.show_weight(names[0])
        return box

    def show_weight(self, name: str) -> None:
        """Show statistics and a histogram of the weight ``name``."""
        tensor = self.initializers.get(name)
        if tensor is None:
            tensor = self.constant_values.get(name)
        if tensor is None or self.histogram is None:
            return
        try:
            array = read_weight(tensor, self.model_dir)
        except (EdgeStudioError, OSError, ValueError) as exc:
            self.stats_labels["shape"].setText(f"cannot read: {exc}")
            return
        stats = weight_stats(array)
        self.stats_labels["shape"].setText("×".join(map(str, stats.shape)) or "scalar")
        self.stats_labels["dtype"].setText(stats.dtype)
        self.stats_labels["min"].setText(f"{stats.minimum:.6g}")
        self.stats_labels["max"].setText(f"{stats.maximum:.6g}")
        self.stats_labels["mean"].setText(f"{stats.mean:.6g}")
        self.stats_labels["std"].setText(f"{stats.std:.6g}")
        self.stats_labels["zeros"].setText(
            f"{stats.zeros:,} of {stats.count:,} ({stats.zero_fraction:.1%})"
        )
        counts, edges = weight_histogram(array)
        plot = self.histogram.getPlotItem()
        plot.clear()
        add_histogram(plot, counts, edges)
