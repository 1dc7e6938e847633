"""Tools › Check on target: the provider's placement colours the graph (NPU, CPU by design,
CPU refused), the document keeps it, and a workspace carries it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgestudio.core.workspace.document import OverlayKind
from edgestudio.gui.main_window import MainWindow
from tests.gui.conftest import open_and_wait

pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed here")


@pytest.mark.e2e
def test_check_on_target_colours_the_graph_by_placement(  # type: ignore[no-untyped-def]
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    from edgestudio.core.targets.target_recipe import CPU_BY_DESIGN, NPU, PLACEMENT_COLOURS
    from tests import models

    quant = models.quantized_sample(tmp_path)  # the digits sample, QDQ, dynamic batch
    open_and_wait(qtbot, window, quant)
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    job = window.check_on_target()
    assert job is not None
    qtbot.waitUntil(lambda: doc.document.target is not None, timeout=120_000)
    check = doc.document.target
    assert check is not None and check.after is not None and check.after.whole
    assert doc.document.overlay.kind is OverlayKind.TARGET
    shown = doc.document.overlay_values()
    assert shown is not None and "emulated" in shown[0]
    assert set(shown[1].values()) == {NPU, CPU_BY_DESIGN}
    view = doc.graph_panel.view
    assert view.ir is not None
    conv = view.ir.op_types.index("Conv")
    assert view.node_colour(conv).name() == PLACEMENT_COLOURS[NPU]  # on the NPU: green
