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
    qtbot, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgestudio.core.targets.target_recipe import CPU_BY_DESIGN, NPU, PLACEMENT_COLOURS
    from tests import models

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # its own devices
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
    # Performance › Target lists every node, those left to the CPU first, with the reason
    doc.show_panel("performance")
    doc.perf_panel.show_target()
    target = doc.perf_panel.target_view
    table = target.table
    assert table.rowCount() == len(check.after.nodes)
    assert table.item(0, 2).text() == CPU_BY_DESIGN
    assert "configured to not take" in table.item(0, 3).text()
    target.only_cpu.setChecked(True)
    assert table.rowCount() == len(check.after.on_cpu)
    assert "31 of 33 nodes on the target" in target.summary.text()

    # Compile for the NPU… writes the binary and says so in the Target tab
    out = tmp_path / "digits_ctx.onnx"
    assert target.compile_button.isEnabled()
    compiled = window.compile_for_target(out)
    assert compiled is not None
    qtbot.waitUntil(lambda: doc.document.compiled is not None, timeout=120_000)
    assert out.exists() and (out.parent / doc.document.compiled.binary).exists()
    assert "identical to the emulated run" in target.compiled.text()

    # …and on a device with the QNN package, chosen beside the button (this environment here)
    import sys

    from PySide6.QtWidgets import QFileDialog

    from edgestudio.core.remote.devices import add_device, make_device

    add_device(make_device("board", f"env:{sys.executable}"))
    target.show_check(check)  # the list is read again
    assert target.compile_on.itemText(0) == "this machine (emulated)"
    target.compile_on.setCurrentIndex(target.compile_on.findData("board"))
    on_board = tmp_path / "board" / "digits_ctx.onnx"
    on_board.parent.mkdir()
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(on_board), ""))
    )
    target.compile_button.click()
    qtbot.waitUntil(lambda: "on board" in target.compiled.text(), timeout=120_000)
    assert on_board.exists() and "identical to the run that compiled it on board" in (
        target.compiled.text()
    )
