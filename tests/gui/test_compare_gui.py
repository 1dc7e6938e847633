"""Two models side by side: differences coloured and listed, selection followed across."""

from __future__ import annotations

from pathlib import Path

from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_MODEL
from tests import models
from tests.models import quantized_sample


def _quantized(tmp_path: Path) -> Path:
    out = quantized_sample(tmp_path)
    return out


def test_compare_float_with_quantized(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = window.compare(SAMPLE_MODEL, _quantized(tmp_path))
    assert view.parent() is window and view.isWindow()  # Qt deletes it, on the GUI thread
    qtbot.waitUntil(lambda: view.is_ready, timeout=30_000)
    assert view.result is not None and view.left is not None and view.right is not None
    assert view.list.count() == len(view.result.differences) > 0
    assert "inserted" in view.summary.text()
    assert "Difference" in view.left.view.legend.label.text()
    assert "Difference" in view.right.view.legend.label.text()
    # selecting a node on the left selects its match on the right
    assert view.left.select_by_name("/features/features.0/Conv")
    right = view.right
    assert (
        right.ir is not None and right.ir.names[right.view.selected] == "/features/features.0/Conv"
    )
    # stepping to an inserted Q/DQ node selects it on the right (the node a folded weight
    # dequantization feeds, for those)
    for row, d in enumerate(view.result.differences):
        if d.change.value == "inserted" and d.node_b:
            view.list.setCurrentRow(row)
            assert right.view.selected == right.ir.index_of(d.node_b)
    view.grab().save(str(tmp_path / "compare.png"))
    view.close()


def test_compare_run_colours_the_quantized_side_by_sqnr(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    view = window.compare(
        SAMPLE_MODEL, _quantized(tmp_path), sqnr={"/features/features.0/Conv": 35.0}
    )
    qtbot.waitUntil(lambda: view.is_ready, timeout=30_000)
    assert view.right is not None and "SQNR" in view.right.view.legend.label.text()
    view.close()


def _fp16_weights_behind_a_cast(path: Path) -> Path:
    """The conv model with its weight stored as float16 and a Cast to float32 before the Conv
    (what a float16 conversion keeping float32 inputs writes): a folded constant chain."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = models.conv_relu_gemm()
    weight = next(t for t in model.graph.initializer if t.name == "conv.w")
    half = numpy_helper.from_array(numpy_helper.to_array(weight).astype(np.float16), "conv.w16")
    model.graph.initializer.remove(weight)
    model.graph.initializer.append(half)
    model.graph.node.insert(
        0,
        helper.make_node(
            "Cast", ["conv.w16"], ["conv.w"], name="conv.w_cast", to=onnx.TensorProto.FLOAT
        ),
    )
    return models.save(model, path)


def test_compare_window_fits_a_small_screen_and_shows_a_folded_difference(  # type: ignore[no-untyped-def]
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    a = models.save(models.conv_relu_gemm(), tmp_path / "a.onnx")
    b = _fp16_weights_behind_a_cast(tmp_path / "b.onnx")
    view = window.compare(a, b)
    qtbot.waitUntil(lambda: view.is_ready, timeout=30_000)
    assert view.minimumSizeHint().width() <= 1280 and view.minimumSizeHint().height() <= 720
    view.resize(1280, 720)
    assert view.width() == 1280
    assert view.result is not None and view.left is not None and view.right is not None
    # N steps to the first difference (the Conv's weight now computed by a Cast), then to the
    # inserted Cast itself, folded on the right into the Conv it feeds: selected and said
    right = view.right
    view.step(1)
    assert view.result.differences[view.list.currentRow()].kind == "weight"
    assert right.ir is not None and right.ir.names[right.view.selected] == "conv"
    view.step(1)
    assert view.result.differences[view.list.currentRow()].node_b == "conv.w_cast"
    assert right.ir.names[right.view.selected] == "conv"
    assert "folded into Conv conv (its C badge)" in view.detail.text()
    view.grab().save(str(tmp_path / "compare_small.png"))
    view.close()


def test_sqnr_colours_are_absolute_in_the_compare_window_and_the_graph(  # type: ignore[no-untyped-def]
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    """A layer at 1.4 dB is drawn in the lowest band's colour, never at the bright end of a
    min-max ramp (which made the worst layer look best)."""
    from edgestudio.core.quant.verdicts import band_of, sqnr_bands
    from edgestudio.gui.model.graph_view import GraphView

    worst, best = "/features/features.0/Conv", "/classifier/classifier.3/Gemm"
    view = window.compare(SAMPLE_MODEL, _quantized(tmp_path), sqnr={worst: 1.4, best: 35.0})
    qtbot.waitUntil(lambda: view.is_ready, timeout=30_000)
    right = view.right
    assert right is not None and right.ir is not None
    neutral = sqnr_bands(False)  # no analysis given: figures of unknown provenance
    for name, value in ((worst, 1.4), (best, 35.0)):
        index = right.ir.index_of(name)
        assert index is not None
        assert right.view.node_colour(index).name() == band_of(value, neutral)[2]
    view.close()
    graph = GraphView()
    qtbot.addWidget(graph)
    from edgestudio.core.model.graph_ir import build_graph_ir
    from edgestudio.core.model.layout import layered_layout

    ir = build_graph_ir(models.conv_relu_gemm().graph)
    graph.set_graph(ir, layered_layout(ir.node_count, ir.edge_src, ir.edge_dst))
    graph.show_sqnr({"conv": 1.4, "fc": 35.0}, representative=True, title="SQNR (dB)")
    verdict = sqnr_bands(True)
    assert graph.node_colour(0).name() == band_of(1.4, verdict)[2]  # poor: red
    assert graph.node_colour(3).name() == band_of(35.0, verdict)[2]  # good: green
