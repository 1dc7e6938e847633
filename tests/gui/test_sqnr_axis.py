"""The per-layer SQNR chart caps its axis: a lossless layer (hundreds of dB) must not squash
the range where the differences between layers matter."""

from __future__ import annotations

from pathlib import Path

import onnx

from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, LayerError
from edgestudio.core.quant.quant_runs import QuantRun, RunState
from edgestudio.core.workspace.document import ModelDocument
from edgestudio.gui.quant.quant_panel import QuantPanel
from edgestudio.gui.quant.sqnr_view import SQNR_AXIS_CAP_DB
from tests import models


def test_bars_above_the_cap_are_capped_and_said(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import pyqtgraph as pg

    model = models.residual_block()
    path = models.save(model, tmp_path / "m.onnx")
    panel = QuantPanel(ModelDocument(path), onnx.load(str(path)))
    qtbot.addWidget(panel)
    layers = [
        LayerError(f"t{k}", f"n{k}", "Conv", sqnr, 0.0, 0.0, 1.0)
        for k, sqnr in enumerate((12.0, 35.0, 361.0))
    ]
    run = QuantRun(
        1,
        QuantRecipe(mode="qdq"),
        state=RunState.ANALYSED,
        analysis=Analysis("f", "q", 4, layers=layers),
    )
    panel.show_run(run)
    item = panel.activations.plot.getPlotItem()
    bars = [i for i in item.items if isinstance(i, pg.BarGraphItem)]
    heights = list(bars[0].opts["height"])
    assert heights == [12.0, 35.0, SQNR_AXIS_CAP_DB]
    (_, top) = item.getViewBox().viewRange()[1]
    assert top < 2 * SQNR_AXIS_CAP_DB
    notes = [i for i in item.items if isinstance(i, pg.TextItem)]
    assert any("1 layer(s) above" in n.toPlainText() for n in notes)
    # the table keeps the true figure
    assert panel.activations.layers.item(2, 0).text().startswith("361")


def test_a_run_whose_weights_match_none_of_the_float_models_says_so(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # PP-OCR's classifier keeps its weights in Constant nodes and pre-processing fuses them:
    # the Weights tab was an empty table beside "Pick a weight in the table".
    import pyqtgraph as pg

    from edgestudio.gui.quant.weights_view import WeightsView

    model = models.residual_block()
    view = WeightsView(model, models.save(model, tmp_path / "m.onnx"))
    qtbot.addWidget(view)
    run = QuantRun(1, QuantRecipe(mode="qdq"), state=RunState.ANALYSED)
    run.analysis = Analysis("f", "q", 4)
    view.show_run(run)
    texts = [
        i.toPlainText()
        for i in view.weight_plot.getPlotItem().getViewBox().addedItems
        if isinstance(i, pg.TextItem)
    ]
    assert view.weights.rowCount() == 0
    assert any("per-weight figures are not available" in t for t in texts), texts


def test_an_analysis_on_a_target_shows_each_layer_there_beside_the_cpu(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path
) -> None:
    """A column and a dot per bar for the target's SQNR, and a line naming where it diverges
    most; on the CPU the column is hidden and nothing is said."""
    import pyqtgraph as pg

    from edgestudio.gui.quant.sqnr_view import TARGET_COL

    model = models.residual_block()
    path = models.save(model, tmp_path / "m.onnx")
    panel = QuantPanel(ModelDocument(path), onnx.load(str(path)))
    qtbot.addWidget(panel)
    layers = [
        LayerError("t0", "conv", "Conv", 30.0, 0.0, 0.0, 1.0, sqnr_db_target=22.0),
        LayerError("t1", "relu", "Relu", 40.0, 0.0, 0.0, 1.0, sqnr_db_target=39.5),
    ]
    analysis = Analysis("f", "q", 4, layers=layers, measured_on="qnn-htp")
    panel.show_run(QuantRun(1, QuantRecipe(mode="qdq"), RunState.ANALYSED, analysis=analysis))
    view = panel.activations
    assert not view.layers.isColumnHidden(TARGET_COL)
    assert view.layers.item(0, TARGET_COL).text() == "22.00"
    dots = [i for i in view.plot.getPlotItem().items if isinstance(i, pg.ScatterPlotItem)]
    assert len(dots) == 1 and list(dots[0].data["y"]) == [22.0, 39.5]
    assert "diverges most at conv (22.0 dB there vs 30.0 dB on the CPU)" in view.legend.text()
    cpu = Analysis("f", "q", 4, layers=[LayerError("t0", "conv", "Conv", 30.0, 0.0, 0.0, 1.0)])
    panel.show_run(QuantRun(2, QuantRecipe(mode="qdq"), RunState.ANALYSED, analysis=cpu))
    assert view.layers.isColumnHidden(TARGET_COL) and "diverges" not in view.legend.text()
