"""The Performance tab: providers, benchmark plots and table, profile overlays, edge vs cloud."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from edgestudio.gui.main_window import MainWindow
from tests.gui.conftest import open_and_wait

pytestmark = pytest.mark.e2e  # every test here starts a worker process


@pytest.mark.e2e
def test_benchmark_profile_and_overlays(
    qtbot,
    window: MainWindow,
    sample_model: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    qtbot.waitUntil(lambda: window.workflow.providers is not None, timeout=60_000)
    names = [
        panel.providers.item(i).data(Qt.ItemDataRole.UserRole)
        for i in range(panel.providers.count())
    ]
    assert names[0] == "CPUExecutionProvider" and "CUDAExecutionProvider" in names
    cuda = panel.providers.item(names.index("CUDAExecutionProvider"))
    assert "onnxruntime-gpu" in cuda.toolTip()

    panel.threads.setText("1,2")
    panel.bench_widget("runs").setValue(30)  # type: ignore[attr-defined]
    panel.bench_widget("warmup").setValue(3)  # type: ignore[attr-defined]
    with qtbot.waitSignal(panel.bench_requested) as requested:
        panel.run_button.click()
    recipe = requested.args[0]
    assert recipe.threads == (1, 2) and recipe.providers == ("CPUExecutionProvider",)
    assert recipe.command_line().startswith("edgestudio bench")
    qtbot.waitUntil(lambda: panel.latency.table.rowCount() == 2, timeout=120_000)
    assert panel.latency.table.item(0, 4).text() != ""
    from edgestudio.gui.perf.latency_view import RESULT_COLUMNS

    assert panel.latency.table.item(0, RESULT_COLUMNS.index("Timed runs")).text() == "30"
    assert len(panel.latency.dist_plot.getPlotItem().items) > 4
    assert panel.edge_cloud.edge_ms.value() == pytest.approx(
        min(r.median_ms or 0 for r in panel.results), abs=1e-4
    )
    assert (
        Path(panel.latency.export_csv(str(tmp_path / "lat.csv")) or "")
        .read_text()
        .startswith("model")
    )
    assert (
        "results" in Path(panel.latency.export_json(str(tmp_path / "lat.json")) or "").read_text()
    )
    panel.latency.export_plots(str(tmp_path / "lat.png"))
    assert (tmp_path / "lat.png").exists() and (tmp_path / "lat_medians.png").exists()

    panel.profile_button.click()
    qtbot.waitUntil(lambda: panel.profile is not None, timeout=120_000)
    assert "nodes on CPU" in panel.profile_view.placement.text()
    assert "Predicted NNAPI" in panel.profile_view.placement.text()
    assert panel.profile_view.profile_table.rowCount() >= 5
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    panel.profile_view.show_ep_overlay()
    view = doc.graph_panel.view
    assert "Execution provider" in view.legend.label.text()
    conv = view.ir.index_of("/features/features.0/Conv")  # type: ignore[union-attr]
    assert view.node_colour(conv) == QColor("#4f8fc0")  # CPU's colour
    panel.profile_view.show_time_overlay()
    assert "time share" in view.legend.label.text()


def test_edge_vs_cloud_panel(qtbot, window: MainWindow, sample_model: Path) -> None:  # type: ignore[no-untyped-def]
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    panel.edge_cloud.edge_ms.setValue(30)
    panel.edge_cloud.rtt.setValue(20)
    panel.edge_cloud.upload.setValue(8)
    panel.edge_cloud.payload.setValue(100)
    panel.edge_cloud.queue.setValue(5)
    panel.edge_cloud.cloud.setValue(5)
    assert panel.edge_cloud.verdict.text().startswith("Edge wins")
    panel.edge_cloud.edge_ms.setValue(500)
    assert panel.edge_cloud.verdict.text().startswith("Cloud wins")
    items = panel.edge_cloud.plot.getPlotItem().listDataItems()
    assert len(items) == 3  # cloud line, edge line, break-even point
    assert len(panel.edge_cloud.legend.items) == 2


def test_empty_plots_wrap_their_placeholder_inside_the_plot(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
) -> None:
    """The placeholder text was sized to the widget's width before layout and clipped."""
    import pyqtgraph as pg

    window.resize(1280, 720)
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    doc.show_panel("performance")
    qtbot.waitExposed(doc.perf_panel.latency.dist_plot)
    for plot in (doc.perf_panel.latency.dist_plot, doc.perf_panel.latency.median_plot):
        view = plot.getPlotItem().getViewBox()
        labels = [i for i in plot.getPlotItem().items if isinstance(i, pg.TextItem)]
        assert labels, "no placeholder"
        assert labels[0].textItem.boundingRect().width() <= view.width() + 1


def test_every_declared_benchmark_option_has_its_widget(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
) -> None:
    """The Performance form is made from BenchRecipe's declarations: each option has a widget
    whose value reaches the recipe (a new declaration needs no form code)."""
    import dataclasses

    from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QSpinBox

    from edgestudio.core.job_api.options import declared_options
    from edgestudio.core.perf.bench_recipes import BenchRecipe

    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    default = BenchRecipe()
    for field, opt in declared_options(BenchRecipe):
        widget = panel.bench_widget(field.name)
        assert opt.flag in widget.toolTip()
        if isinstance(widget, QCheckBox):
            widget.setChecked(not field.default)
        elif isinstance(widget, QComboBox):
            widget.setCurrentIndex((widget.currentIndex() + 1) % widget.count())
        elif isinstance(widget, (QSpinBox, QDoubleSpinBox)):
            widget.setValue(widget.value() + 2)
        recipe = panel.bench_recipe()
        assert getattr(recipe, field.name) != getattr(default, field.name), field.name
        assert dataclasses.fields(recipe)  # a recipe, built from the widgets


def test_a_mistyped_thread_list_or_shape_names_its_field(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
) -> None:
    """The Performance form reads its fields with the grammar the command line uses, and the
    message names the form's field, not a flag."""
    import pytest

    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    panel.threads.setText("1,zero")
    with pytest.raises(ValueError, match=r"^Threads: give whole numbers") as caught:
        panel.bench_recipe()
    assert "--" not in str(caught.value)
    panel.threads.setText("1,2")
    panel.shapes.setText("image=1x1x8x8, image=8by8")
    with pytest.raises(ValueError, match=r"^Shapes: image: a shape is written DIMxDIM"):
        panel.bench_recipe()
    panel.shapes.setText("image=1x1x8x8")
    recipe = panel.bench_recipe()
    assert recipe.threads == (1, 2) and recipe.shapes == ("image=1x1x8x8",)


def test_every_declared_profile_option_has_its_widget(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
) -> None:
    """ProfileRecipe's declarations make the profile's rows of the Performance form; the batch
    comes from the benchmark's own widget, so both measure the same inputs."""
    from PySide6.QtWidgets import QSpinBox

    from edgestudio.core.job_api.options import declared_options
    from edgestudio.core.perf.bench_recipes import ProfileRecipe
    from edgestudio.gui.perf.perf_panel import SHARED_WITH_BENCH

    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    declared = {f.name for f, _ in declared_options(ProfileRecipe)}
    assert set(panel.profile_options) == declared - SHARED_WITH_BENCH
    for _, opt, widget in panel.profile_options.values():
        assert isinstance(widget, QSpinBox) and opt.flag in widget.toolTip()
        widget.setValue(widget.value() + 3)
    panel.bench_widget("batch").setValue(2)
    with qtbot.waitSignal(panel.profile_requested) as signal:
        panel.profile_button.click()
    recipe = signal.args[0]
    default = ProfileRecipe()
    assert recipe.runs == default.runs + 3 and recipe.threads == default.threads + 3
    assert recipe.batch == 2


def test_a_provider_of_an_environment_make_made_can_be_ticked(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    sample_model: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """OpenVINO is not in the app's onnxruntime, but the environment `make` made has it: it is
    offered (named after that environment) instead of greyed, and the recipe carries it."""
    import sys

    from PySide6.QtCore import Qt

    from edgestudio.core.perf.perf_results import ProviderProbe
    from edgestudio.core.remote import devices

    made = {devices.OPENVINO: devices.Device(devices.OPENVINO, "", python=sys.executable)}
    monkeypatch.setattr(devices, "made_environments", lambda: made)
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    panel.set_providers(
        [
            ProviderProbe("CPUExecutionProvider", works=True),
            ProviderProbe("OpenVINOExecutionProvider", works=False, reason="not in this build"),
            ProviderProbe("CUDAExecutionProvider", works=False, reason="not in this build"),
        ]
    )
    items = {panel.providers.item(i).text(): panel.providers.item(i) for i in range(3)}
    assert set(items) == {"CPU", "OpenVINO  (in 'openvino')", "CUDA  (unavailable)"}
    openvino = items["OpenVINO  (in 'openvino')"]
    assert openvino.flags() & Qt.ItemFlag.ItemIsUserCheckable
    assert not items["CUDA  (unavailable)"].flags() & Qt.ItemFlag.ItemIsUserCheckable
    openvino.setCheckState(Qt.CheckState.Checked)
    panel.set_machines(["openvino"])
    recipe = panel.bench_recipe()
    assert recipe.providers == ("CPUExecutionProvider", "OpenVINOExecutionProvider")
