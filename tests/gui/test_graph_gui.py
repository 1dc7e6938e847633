"""Graph panel in pytest-qt: rendering, search, selection both ways, overlays, properties."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel, QPushButton, QTableWidget

from edgestudio.core.model.graph_ir import build_graph_ir
from edgestudio.core.model.layout import layered_layout
from edgestudio.gui.main_window import MainWindow
from edgestudio.gui.model.graph_panel import GraphPanel
from edgestudio.gui.model.graph_view import GraphView
from tests import models
from tests.gui.conftest import open_and_wait


def _graph_panel(qtbot, window: MainWindow, path: Path) -> GraphPanel:  # type: ignore[no-untyped-def]
    open_and_wait(qtbot, window, path)
    doc = window.current_document()
    assert doc is not None and doc.show_panel("graph")
    panel = doc.graph_panel
    qtbot.waitUntil(lambda: panel.is_ready, timeout=30_000)
    return panel


def _node_viewport_pos(view: GraphView, index: int) -> QPoint:
    assert view.geometry_ is not None
    return view.mapFromScene(
        QPointF(float(view.geometry_.x[index]), float(view.geometry_.y[index]))
    )


@pytest.mark.e2e
def test_click_a_node_shows_its_properties_and_weights(
    qtbot, window: MainWindow, conv_model: Path
) -> None:
    panel = _graph_panel(qtbot, window, conv_model)
    view = panel.view
    view.centre_on_node(0)
    with qtbot.waitSignal(view.node_selected) as selected:
        QTest.mouseClick(
            view.viewport(), Qt.MouseButton.LeftButton, pos=_node_viewport_pos(view, 0)
        )
    assert selected.args == [0]
    props = panel.properties
    assert props.node_index == 0
    assert "Conv" in props.widget().findChild(QLabel, "node_title").text()
    weights = onnx.numpy_helper.to_array(models.conv_relu_gemm().graph.initializer[0])
    assert props.stats_labels["min"].text() == f"{weights.min():.6g}"
    assert props.stats_labels["max"].text() == f"{weights.max():.6g}"
    assert props.stats_labels["std"].text() == f"{weights.astype(np.float64).std():.6g}"
    assert props.stats_labels["shape"].text() == "4×3×3×3"
    assert props.histogram is not None and props.histogram.getPlotItem().listDataItems()
    attrs = props.widget().findChild(QTableWidget, "attributes_table")
    assert attrs is not None and attrs.item(0, 0).text() == "pads"


@pytest.mark.e2e
def test_search_selects_and_centres(qtbot, window: MainWindow, conv_model: Path) -> None:
    panel = _graph_panel(qtbot, window, conv_model)
    panel.focus_search()
    qtbot.keyClicks(panel.finder.search, "relu")
    assert panel.finder.hit_label.text() == "1 of 1"
    assert panel.view.selected == 1
    panel.finder.search.clear()
    qtbot.keyClicks(panel.finder.search, "c")  # conv, relu's tensor "c", conv.w … several matches
    assert panel.finder.hit_label.text().endswith(f"of {len(panel.ir.find('c'))}")  # type: ignore[union-attr]
    first = panel.view.selected
    panel.finder.next_hit()
    assert panel.view.selected != first
    panel.finder.previous_hit()
    assert panel.view.selected == first
    panel.finder.search.setText("zzz")
    assert panel.finder.hit_label.text() == "no match"


@pytest.mark.e2e
def test_selection_from_elsewhere_selects_in_the_graph(
    qtbot, window: MainWindow, conv_model: Path
) -> None:
    panel = _graph_panel(qtbot, window, conv_model)
    with qtbot.waitSignal(panel.node_selected) as selected:
        assert panel.select_by_name("fc")
    assert selected.args == [3]
    assert panel.properties.node_index == 3
    assert not panel.select_by_name("nope")


@pytest.mark.e2e
def test_scalar_overlay_colours_nodes_with_a_legend(
    qtbot, window: MainWindow, conv_model: Path
) -> None:
    view = _graph_panel(qtbot, window, conv_model).view
    view.set_scalar_overlay({"conv": 10.0, "relu": 40.0, "fc": 25.0}, "SQNR (dB)", reverse=True)
    assert view.legend.isVisible() and "SQNR (dB)" in view.legend.label.text()
    assert "3 nodes without a value" in view.legend.note.text()  # flatten, input, output
    assert view.node_colour(2) == QColor("#d6d6d6")
    assert view.node_colour(0) != view.node_colour(1)
    assert "overlay value: <b>10</b>" in view.node_tooltip(0)
    view.set_category_overlay(
        {"conv": "CPU", "relu": "CPU", "fc": "CUDA"},
        {"CPU": "#1f77b4", "CUDA": "#2ca02c"},
        "Execution provider",
    )
    assert view.node_colour(3) == QColor("#2ca02c")
    assert "CUDA" in view.legend.label.text()
    view.set_marked(["relu", "fc"])
    assert view.marked == [1, 3]
    view.clear_overlay()
    assert not view.legend.isVisible()


@pytest.mark.e2e
def test_subgraph_opens_in_its_own_tab(qtbot, window: MainWindow, tmp_path: Path) -> None:
    panel = _graph_panel(
        qtbot, window, models.save(models.with_if_subgraph(), tmp_path / "if.onnx")
    )
    assert panel.select_by_name("If_0")
    button = panel.properties.widget().findChild(QPushButton, "subgraph:then_branch")
    assert button is not None
    button.click()
    doc = window.current_document()
    assert doc is not None
    sub = doc.graph_panels()[-1]
    qtbot.waitUntil(lambda: sub.is_ready, timeout=10_000)
    assert sub.ir is not None and sub.ir.op_types[0] == "Identity"
    assert doc.panels.tabText(doc.panels.currentIndex()).startswith("Graph: If_0/then_branch")


@pytest.mark.e2e
def test_edge_labels_get_inferred_shapes(qtbot, window: MainWindow, sample_model: Path) -> None:
    panel = _graph_panel(qtbot, window, sample_model)
    assert panel.ir is not None
    qtbot.waitUntil(
        lambda: "/features/features.0/Conv_output_0" in panel.ir.tensor_info, timeout=60_000
    )
    info = panel.ir.tensor_info["/features/features.0/Conv_output_0"]
    assert info.text() == "float32[batch, 16, 8, 8]"
    # the shape inference ran as a job of the window's queue (never beside a benchmark), quietly
    shapes = [j for j in window.jobs.jobs if j.recipe.kind == "shapes"]
    assert len(shapes) == 1 and shapes[0].id in window.jobs.background


def test_big_graph_renders_zoomed_out_and_in(qtbot) -> None:  # type: ignore[no-untyped-def]
    from tests.graph_builders import transformer_like

    ir = build_graph_ir(transformer_like(20_000).graph)
    layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    view.set_graph(ir, layout)
    view.fitInView(view.scene().itemsBoundingRect())
    far = view.grab()
    view.centre_on_node(100)
    near = view.grab()
    assert far.width() == near.width() == view.width()
    assert view.minimap.isVisible()
    # the minimap sits in a strip beside the graph, never over it; M hides it
    assert view.viewportMargins().right() > 0
    assert view.minimap.geometry().left() >= view.viewport().geometry().right()
    # a narrow legend goes above the minimap, hiding none of the graph; a wide one, which
    # the strip cannot hold, keeps to the graph's top-right corner
    names = [view.ir.names[i] for i in range(50)]
    view.set_banded_overlay(dict.fromkeys(names, 40.0), [(30, "good", "#2e7d32")], "SQNR")
    legend = view.legend.geometry()
    assert legend.left() >= view.viewport().geometry().right()
    assert legend.bottom() < view.minimap.geometry().top()
    view.set_category_overlay(dict.fromkeys(names, "A" * 60), {"A" * 60: "#2e7d32"}, "EP")
    assert view.legend.geometry().right() <= view.viewport().geometry().right()
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_M)
    assert not view.minimap.isVisible() and view.viewportMargins().right() == 0


def test_every_node_suite_and_zoo_model_renders(
    qtbot,
    node_suite_models: list[Path],  # type: ignore[no-untyped-def]
    light_zoo_models: list[Path],
) -> None:
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    for path in [*node_suite_models, *light_zoo_models]:
        graph = onnx.load(str(path), load_external_data=False).graph
        ir = build_graph_ir(graph)
        view.set_graph(ir, layered_layout(ir.node_count, ir.edge_src, ir.edge_dst))
        view.viewport().repaint()


@pytest.mark.e2e
def test_constants_are_folded_and_can_be_shown(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import onnx

    from tests.core.model.test_graph_ir import _model

    path = tmp_path / "consts.onnx"
    onnx.save(_model(), path)
    panel = _graph_panel(qtbot, window, path)
    assert panel.ir is not None and panel.ir.folded_count == 3
    assert "3 constants folded" in panel.status.text()
    assert panel.select_by_name("mm1")
    geometry = panel.view.geometry_
    assert geometry is not None
    mm1 = panel.ir.index_of("mm1") or 0
    assert geometry.weights[mm1] == [] and geometry.constants[mm1] == ["w_deq"]
    panel.properties.show_node(mm1)
    assert (
        "constant: DequantizeLinear"
        in panel.properties.widget().findChild(QLabel, "node_inputs").text()
    )
    panel.constants_toggle.setChecked(True)  # drawn as nodes: laid out again, selection kept
    qtbot.waitUntil(
        lambda: panel.is_ready and panel.ir is not None and panel.ir.folded_count == 0,
        timeout=30_000,
    )
    assert len(panel.ir.onnx_nodes) == 9
    assert panel.ir.names[panel.view.selected] == "mm1"
    assert "constants folded" not in panel.status.text()


@pytest.mark.e2e
def test_groups_open_close_and_carry_overlays(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import onnx

    from tests.graph_builders import transformer_like

    path = tmp_path / "blocks.onnx"
    onnx.save(transformer_like(2_000), path)
    panel = _graph_panel(qtbot, window, path)
    ir = panel.ir
    assert ir is not None and ir.members and "groups closed" in panel.status.text()
    first = next(iter(ir.members))
    block = ir.names[first]
    inside = ir.members[first]
    # an overlay gives a closed group its worst member value
    panel.view.set_scalar_overlay({inside[0]: 12.0, inside[1]: 40.0}, "SQNR (dB)")
    assert panel.view.overlay_values is not None and panel.view.overlay_values[first] == 12.0
    # Enter on the selected group opens it; the first operator inside is selected
    panel.view.select_node(first)
    panel.view.setFocus()
    QTest.keyClick(panel.view, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.is_ready and panel.ir is not ir, timeout=30_000)
    opened = panel.ir
    assert opened is not None and block not in opened.names and inside[0] in opened.names
    assert opened.names[panel.view.selected] == inside[0]
    # Backspace closes it again, the group selected
    QTest.keyClick(panel.view, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: panel.is_ready and panel.ir is not opened, timeout=30_000)
    assert panel.ir is not None and panel.ir.names[panel.view.selected] == block
    # selecting a hidden node (search, a plot) opens the groups around it
    other = panel.ir.members[panel.ir.names.index(ir.names[list(ir.members)[5]])][2]
    panel.select_by_name(other)
    qtbot.waitUntil(
        lambda: panel.is_ready and panel.ir is not None and other in panel.ir.names, timeout=30_000
    )
    assert panel.ir.names[panel.view.selected] == other
    # Groups off: every node
    panel.groups_toggle.setChecked(False)
    qtbot.waitUntil(
        lambda: panel.is_ready and panel.ir is not None and not panel.ir.members, timeout=30_000
    )


def test_small_windows_keep_their_width_for_the_graph(qtbot) -> None:  # type: ignore[no-untyped-def]
    from tests.graph_builders import transformer_like

    ir = build_graph_ir(transformer_like(3000).graph)
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    view.set_graph(ir, layered_layout(ir.node_count, ir.edge_src, ir.edge_dst))
    view.centre_on_node(100)
    assert view.minimap.isVisible() and view.viewportMargins().right() > 0
    view.resize(480, 400)  # a small window: the strip would leave the graph under 360 px
    qtbot.waitUntil(lambda: not view.minimap.isVisible())
    assert view.viewportMargins().right() == 0
    view.resize(900, 160)  # short: a smaller minimap, still inside the view
    qtbot.waitUntil(lambda: view.minimap.isVisible())
    assert view.minimap.geometry().bottom() < view.height()
    assert view.minimap.geometry().left() >= view.viewport().geometry().right()


def test_edges_go_round_the_nodes_they_skip(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.core.model.test_edge_routes import crossings

    ir = build_graph_ir(models.silu_detector().graph)
    layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(700, 600)
    view.show()
    view.set_graph(ir, layout)
    geometry = view.geometry_
    assert geometry is not None and crossings(ir, layout, geometry.routes) == []
    view.centre_on_node(ir.index_of("sigmoid0") or 0)
    view.viewport().repaint()
    # each edge batch paints within bounds that hold its detours
    for item in view.scene().items():
        edges = getattr(item, "edges", None)
        if edges is None:
            continue
        assert item.path is not None  # built by the paint
        assert item.boundingRect().contains(item.path.boundingRect())


def test_status_says_while_shapes_are_inferred(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = models.save(models.silu_detector(), tmp_path / "silu.onnx")
    panel = GraphPanel(onnx.load(str(path)).graph, path)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.shapes_requested, timeout=30_000):
        pass
    assert panel.is_ready
    assert "shapes: inferring…" in panel.status.text()
    panel.show_shapes({"c0": ("float32", [1, 4, 8, 8])})
    assert "shapes" not in panel.status.text()
    assert panel.ir is not None and panel.ir.tensor_info["c0"].text() == "float32[1, 4, 8, 8]"
    panel.shapes_failed("the worker crashed")
    assert "only those the model declares" in panel.status.text()
    assert "the worker crashed" in panel.status.toolTip()


def test_an_unscoped_model_opens_as_its_repeated_layers(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.core.model.test_groups import unscoped_blocks_model

    path = models.save(unscoped_blocks_model([8] * 20), tmp_path / "blocks.onnx")
    panel = GraphPanel(onnx.load(str(path)).graph, path)
    qtbot.addWidget(panel)
    qtbot.waitUntil(lambda: panel.is_ready, timeout=30_000)
    assert panel.ir is not None
    labels = sorted(panel.ir.group_labels.values())
    assert len(labels) == 20 and all(label.startswith("layer ") for label in labels)
    assert "20 repeated layers found" in panel.status.text()
    assert "20 repeated layers of 11 operators" in panel.status.toolTip()


def test_a_node_sending_several_tensors_has_one_label(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A Split (or a closed group) sending two tensors on: one label saying how many more, not
    two labels drawn on one spot."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=0, num_outputs=2),
            helper.make_node("Relu", ["a"], ["ra"], name="ra"),
            helper.make_node("Relu", ["b"], ["rb"], name="rb"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(t, TensorProto.FLOAT, [2]) for t in ("ra", "rb")],
    )
    ir = build_graph_ir(graph)
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(600, 500)
    view.show()
    view.set_graph(ir, layered_layout(ir.node_count, ir.edge_src, ir.edge_dst))
    view.resetTransform()
    view.scale(1.2, 1.2)
    view.viewport().repaint()
    split = ir.index_of("split")
    labels = [
        label
        for item in view.scene().items()
        for label in getattr(item, "labels", [])
        if label[1] in ("a", "b")
    ]
    assert len(labels) == 1 and labels[0][3] == 1
    assert split is not None and view.geometry_ is not None
    assert view.geometry_.more_tensors[split] == 1
