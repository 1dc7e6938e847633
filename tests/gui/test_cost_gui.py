"""The cost on screen: the Summary's totals, the graph coloured by MACs and by memory (with the
legend's absolute scale), each node's cost in the Properties, and the workspace keeping it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgestudio.core.workspace import workspace
from edgestudio.core.workspace.document import OverlayKind
from edgestudio.gui.main_window import MainWindow
from tests.gui.conftest import open_and_wait


@pytest.mark.e2e
def test_count_colour_by_macs_and_read_a_nodes_cost(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
    tmp_path: Path,
) -> None:
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    box = doc.summary_panel.cost_box
    assert not box.macs_button.isEnabled()  # nothing to colour by before counting
    box.count_button.click()
    qtbot.waitUntil(lambda: doc.document.cost is not None, timeout=120_000)
    assert box.labels["MACs"].text() == "484,992 (485.0 K)"
    assert box.labels["Peak activation memory"].text() == "16.0 KiB"
    assert box.labels["Counted at"].text() == "image 1x1x8x8"
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)

    box.macs_button.click()
    assert doc.document.overlay.kind is OverlayKind.MACS
    view = doc.graph_panel.view
    assert "MACs (millions) at image 1x1x8x8" in view.legend.label.text()
    conv = view.ir.index_of("/features/features.3/Conv")  # type: ignore[union-attr]
    assert view.overlay_values[conv] == pytest.approx(0.294912)  # type: ignore[index]
    box.memory_button.click()
    assert "output memory (KiB)" in view.legend.label.text()

    doc.graph_panel.select_by_name("/features/features.3/Conv")
    from PySide6.QtWidgets import QTableWidget

    table = doc.graph_panel.properties.findChild(QTableWidget, "cost_table")
    assert table is not None
    assert table.item(0, 1).text() == "294,912 (60.8% of the model)"

    saved = workspace.save(doc.document, tmp_path / "w.edgestudio.json")
    restored = workspace.load(saved).document
    assert restored.cost is not None and restored.cost.total.macs == 484_992
    from edgestudio.core.workspace.report import report_from_document, write_report

    html, data = write_report(tmp_path / "r.html", report_from_document(restored))
    assert "484,992" in html.read_text() and '"macs": 484992' in data.read_text()


@pytest.mark.e2e
def test_the_profile_shows_macs_and_time_against_work(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
) -> None:
    from edgestudio.gui.perf.profile_view import PROFILE_COLUMNS

    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    qtbot.waitUntil(lambda: window.workflow.providers is not None, timeout=60_000)
    panel.profile_button.click()
    qtbot.waitUntil(lambda: panel.profile is not None, timeout=120_000)
    assert not panel.profile_view.work_scatter.rows  # no cost yet: the scatter says what it needs
    doc.summary_panel.cost_box.count_button.click()
    qtbot.waitUntil(lambda: bool(panel.profile_view.work_scatter.rows), timeout=120_000)
    column = PROFILE_COLUMNS.index("MACs")
    values = [
        panel.profile_view.profile_table.item(r, column).text()
        for r in range(panel.profile_view.profile_table.rowCount())
    ]
    assert "294,912" in values or any(
        v.replace(",", "").isdigit() and int(v.replace(",", "")) >= 294_912 for v in values
    )  # conv 2, perhaps fused
    assert sum(r.macs for r in panel.profile_view.work_scatter.rows) <= 484_992
    assert "median time per MAC" in panel.profile_view.work_scatter.note.text()


@pytest.mark.e2e
def test_model_surgery_from_the_graph_and_the_summary(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
    tmp_path: Path,
) -> None:
    import shutil

    import onnx

    model = tmp_path / sample_model.name
    shutil.copy(sample_model, model)
    open_and_wait(qtbot, window, model)
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    ir = doc.graph_panel.ir
    assert ir is not None
    menu = doc.node_menu_for(ir.index_of("/features/features.6/MaxPool"))  # type: ignore[arg-type]
    assert menu is not None
    surgery = next(a.menu() for a in menu.actions() if a.text() == "Model surgery")
    labels = [a.text() for a in surgery.actions()]
    assert labels == [
        "Add '/features/features.6/MaxPool_output_0' as a graph output",
        "Extract the part up to '/features/features.6/MaxPool'",
        "Extract the part from '/features/features.6/MaxPool' on",
        "Extract…",
        "Bypass '/features/features.6/MaxPool' (wire its input on)",
    ]
    with qtbot.waitSignal(doc.edit_requested) as asked:
        surgery.actions()[1].trigger()
    recipe = asked.args[0]
    assert recipe.outputs == ("/features/features.6/MaxPool_output_0",)
    assert recipe.output == str(tmp_path / "digits_cnn_head.onnx")
    head = tmp_path / "digits_cnn_head.onnx"
    qtbot.waitUntil(head.exists, timeout=120_000)
    cut = onnx.load(str(head))
    assert [o.name for o in cut.graph.output] == ["/features/features.6/MaxPool_output_0"]
    assert len(cut.graph.node) == 5

    from edgestudio.gui.model.surgery_menu import ExtractDialog

    dialog = ExtractDialog(["/features/features.2/Relu_output_0"], ["logits"])
    dialog.outputs.setText(" logits, /features/features.6/MaxPool_output_0 ")
    chosen = dialog.recipe()
    assert chosen.inputs == ("/features/features.2/Relu_output_0",)
    assert chosen.outputs == ("logits", "/features/features.6/MaxPool_output_0")
    dialog.close()

    with qtbot.waitSignal(doc.edit_requested) as asked:
        doc.summary_panel.rename_requested.emit("image", "pixels")
    renamed = tmp_path / "digits_cnn_renamed.onnx"
    qtbot.waitUntil(renamed.exists, timeout=120_000)
    assert [v.name for v in onnx.load(str(renamed)).graph.input] == ["pixels"]


@pytest.mark.e2e
def test_a_closed_group_is_extracted_as_a_model_of_its_own(  # type: ignore[no-untyped-def]
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    import shutil

    import onnx

    from tests.realmodels.corpus import SKIP_REASON, cache_dir

    source = cache_dir() / "minilm_l6_v2.onnx"
    if not source.is_file():
        pytest.skip(reason=SKIP_REASON)
    model = tmp_path / source.name
    shutil.copy(source, model)
    open_and_wait(qtbot, window, model)
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=60_000)
    ir = doc.graph_panel.ir
    assert ir is not None
    group = next(i for i in range(len(ir.names)) if ir.is_group(i) and "layer.1" in ir.names[i])
    menu = doc.node_menu_for(group)
    assert menu is not None
    surgery = next(a.menu() for a in menu.actions() if a.text() == "Model surgery")
    part = next(a for a in surgery.actions() if a.text().endswith("as a model of its own"))
    with qtbot.waitSignal(doc.edit_requested) as asked:
        part.trigger()
    recipe = asked.args[0]
    assert recipe.inputs and recipe.outputs
    written = Path(recipe.output)
    qtbot.waitUntil(written.exists, timeout=180_000)
    cut = onnx.load(str(written))
    names = {n.name for n in cut.graph.node}
    assert names and all("layer.1" in n or not n.startswith("/encoder/layer.") for n in names)
    assert [o.name for o in cut.graph.output] == list(recipe.outputs)
