"""The graph of each real model as a new user first sees it: the first view, the whole graph and
a selected node, saved as PNG artefacts (``$EDGESTUDIO_ARTEFACTS/graph_views``, else the test's
temporary folder) to look at, with the checks a screenshot can be read by: real operators in
the first view, no box over another, labels short enough for their room."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from edgestudio.core.model.graph_ir import NodeKind
from edgestudio.gui.main_window import MainWindow
from tests.gui.conftest import open_and_wait
from tests.realmodels.corpus import CORPUS, SKIP_REASON, RealModel

# The real-model corpus: end to end, in `make test-e2e` (and CI), not the fast tier.
pytestmark = pytest.mark.e2e


def _artefacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("EDGESTUDIO_ARTEFACTS", tmp_path)) / "graph_views"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("model", CORPUS, ids=lambda m: m.name)
def test_first_view_whole_graph_and_selection(
    qtbot,
    window: MainWindow,
    model: RealModel,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    if not model.path.is_file():
        pytest.skip(reason=SKIP_REASON)
    out = _artefacts(tmp_path)
    window.resize(1280, 820)
    open_and_wait(qtbot, window, model.path)
    doc = window.current_document()
    assert doc is not None and doc.show_panel("graph")
    panel = doc.graph_panel
    qtbot.waitUntil(lambda: panel.is_ready, timeout=60_000)
    view, ir, geometry = panel.view, panel.ir, panel.view.geometry_
    assert ir is not None and geometry is not None

    # first view: real operators (not a row of Constants), at a readable size, nothing overlaps
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    shown = [i for i in range(ir.node_count) if visible.intersects(geometry.rects[i])]
    operators = [i for i in shown if ir.kinds[i] == NodeKind.OPERATOR]
    assert operators, model.name
    assert not any(ir.op_types[i] == "Constant" for i in shown)
    assert view.transform().m11() >= 0.5 or ir.node_count < 40
    xs, ys = geometry.x[shown], geometry.y[shown]
    same = (np.abs(xs[:, None] - xs[None, :]) < geometry.rects[0].width()) & (
        np.abs(ys[:, None] - ys[None, :]) < geometry.rects[0].height()
    )
    assert same.sum() == len(shown)  # each box overlaps only itself
    assert (geometry.label_room[shown] > 0).all()
    window.grab().save(str(out / f"{model.name}_1_first.png"))

    view.fit_all()  # the whole graph: closed groups keep a big one readable
    window.grab().save(str(out / f"{model.name}_2_whole.png"))

    view.fit()
    target = next(iter(ir.members), operators[0])
    if ir.is_group(target):  # open the first group, as a double-click would
        panel.open_group(ir.names[target])
        qtbot.waitUntil(lambda: panel.is_ready and panel.ir is not ir, timeout=60_000)
    else:
        view.select_node(target, centre=True)
    assert panel.view.selected >= 0
    window.grab().save(str(out / f"{model.name}_3_selected.png"))
