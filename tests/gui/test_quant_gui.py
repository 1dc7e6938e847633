"""The quantization workbench in pytest-qt: form → job → analysis → plot → graph → exclude →
re-quantize → compare."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox

from edgestudio.gui.forms.quantize_form import QuantizeDialog
from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests.gui.conftest import open_and_wait


def _sample_copy(tmp: Path) -> Path:
    for f in (SAMPLE_MODEL, SAMPLE_CALIBRATION, SAMPLE_EVALUATION):
        shutil.copy(f, tmp / f.name)
    return tmp / SAMPLE_MODEL.name


@pytest.mark.e2e
def test_form_shows_only_valid_options_and_explains_rules(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    open_and_wait(qtbot, window, _sample_copy(tmp_path))
    dialog = window.quant.show_quantize_form()
    assert isinstance(dialog, QuantizeDialog)
    assert dialog.calib_path.path().endswith("digits_calib.npz")  # found beside the model
    assert dialog.eval_path.path().endswith("digits_eval.npz")
    assert dialog.run_button.isEnabled()
    dialog.mode.setCurrentIndex(dialog.mode.findData("dynamic"))
    assert not dialog.calib_box.isVisibleTo(dialog)
    dialog.weight_type.setCurrentText("int16")
    assert not dialog.run_button.isEnabled()
    assert "int8 or uint8 weights" in dialog.messages.text()
    dialog.mode.setCurrentIndex(dialog.mode.findData("fp16"))
    assert dialog.fp16_box.isVisibleTo(dialog) and not dialog.types_box.isVisibleTo(dialog)
    dialog.mode.setCurrentIndex(dialog.mode.findData("qdq"))
    dialog.weight_type.setCurrentText("uint8")
    dialog.activation_type.setCurrentText("int8")
    assert "rejects int8 activations with uint8 weights" in dialog.messages.text()
    dialog.reject()


@pytest.mark.e2e
def test_quantize_analyze_select_exclude_requantize_compare(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    model = _sample_copy(tmp_path)
    window.resize(1280, 720)
    open_and_wait(qtbot, window, model)
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    dialog = window.quant.show_quantize_form()
    assert dialog is not None
    dialog.per_channel.setChecked(True)
    dialog.accept()
    panel = doc.quant_panel
    run = panel.runs[0]
    qtbot.waitUntil(lambda: run.analysis is not None or run.error is not None, timeout=120_000)
    assert run.analysis is not None, run.error
    # the Jobs dock came up a fifth of the window high, and the weights table shows its rows
    assert window.jobs_dock.isVisible() and window.jobs_dock.height() <= 720 // 4
    doc.show_panel("quantization")
    panel.tabs.setCurrentIndex(1)
    qtbot.waitExposed(panel.weights.weights)
    rows = min(panel.weights.weights.rowCount(), 6)
    assert (
        rows >= 4
        and panel.weights.weights.viewport().height()
        >= rows * panel.weights.weights.verticalHeader().defaultSectionSize()
    )
    panel.tabs.setCurrentIndex(0)
    assert Path(run.output or "").exists()
    assert panel.history.item(0, 2).text() == "analysed"
    assert len(panel.activations.bars) == len(
        [r for r in run.analysis.layers if r.sqnr_db is not None]
    )
    # the graph is coloured by SQNR with a legend
    assert not doc.graph_panel.view.legend.isHidden()
    assert "SQNR" in doc.graph_panel.view.legend.label.text()

    # click the worst bar: its node is selected in the graph
    doc.show_panel("quantization")
    qtbot.waitExposed(panel.activations.plot)
    view_box = panel.activations.plot.getPlotItem().getViewBox()
    worst = panel.activations.bars[0]
    scene_point = view_box.mapViewToScene(QPointF(0, worst.sqnr_db / 2))
    widget_point = panel.activations.plot.mapFromScene(scene_point)
    with qtbot.waitSignal(panel.node_chosen, timeout=5000) as chosen:
        QTest.mouseClick(
            panel.activations.plot.viewport(), Qt.MouseButton.LeftButton, pos=widget_point
        )
    assert chosen.args == [worst.node]
    graph = doc.graph_panel
    assert graph.ir is not None and graph.ir.names[graph.view.selected] == worst.node

    # exclude the worst layer and re-run: a fused Relu/Clip is named by its producer (excluding
    # the Relu alone changes nothing)
    target = run.analysis.targets.get(worst.node, worst.node)
    assert target and (worst.op_type not in ("Relu", "Clip") or target != worst.node)
    panel.worst_n.setValue(1)
    panel.requantize_button.click()
    assert target in doc.excluded
    assert graph.view.marked == [graph.ir.index_of(target)]
    second_form = window.findChild(QuantizeDialog)
    assert second_form is not None and target in second_form.exclude.text()
    assert second_form.per_channel.isChecked()  # the base recipe is kept
    second_form.output.edit.setText(str(tmp_path / "second.onnx"))
    second_form.accept()
    second = panel.runs[1]
    qtbot.waitUntil(
        lambda: second.analysis is not None or second.error is not None, timeout=120_000
    )
    assert second.analysis is not None, second.error
    assert second.recipe.exclude == (target,)

    # compare both runs side by side
    panel.history.selectAll()
    assert panel.compare_button.isEnabled()
    panel.show_comparison()
    table = panel.comparison
    assert table.columnCount() == 3
    labels = [table.item(r, 0).text() for r in range(table.rowCount())]
    assert "Quantized top-1" in labels and "Excluded nodes" in labels
    excluded_row = labels.index("Excluded nodes")
    assert [table.item(excluded_row, c).text() for c in (1, 2)] == ["0", "1"]

    # exports
    png = panel.activations.export_plot(str(tmp_path / "sqnr.png"))
    svg = panel.activations.export_plot(str(tmp_path / "sqnr.svg"))
    csv_path = panel.activations.export_table(str(tmp_path / "layers.csv"))
    assert png and Path(png).stat().st_size > 1000
    assert svg and "<svg" in Path(svg).read_text()
    assert csv_path and Path(csv_path).read_text().startswith("tensor,node")


@pytest.mark.e2e
def test_context_menu_excludes_a_node(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_and_wait(qtbot, window, _sample_copy(tmp_path))
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    doc.set_excluded({"/features/features.0/Conv"})
    assert doc.graph_panel.view.marked == [0]
    dialog = window.quant.show_quantize_form()
    assert dialog is not None and dialog.exclude.text() == "/features/features.0/Conv"
    assert "--exclude /features/features.0/Conv" in dialog.command.text()
    dialog.reject()


def test_every_declared_option_is_in_the_form_and_round_trips(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The form is made from the option declarations: each one, varied in a mode that uses
    it, comes back from the form unchanged (a new option is covered without editing this)."""
    import dataclasses

    import onnx

    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import QUANT_MODES, QuantRecipe
    from tests.cli.test_recipe_round_trip import _quant_cases

    model = _sample_copy(tmp_path)
    proto = onnx.load(model)
    base = QuantRecipe(
        model=str(model),
        output=str(tmp_path / "q.onnx"),
        calib=DataSource("npz", str(tmp_path / SAMPLE_CALIBRATION.name), samples=8),
    )
    for name, mode, value in _quant_cases():
        changes = {"mode": mode, name: value}
        if not QUANT_MODES[mode].calibrated:
            changes["calib"] = None
        recipe = dataclasses.replace(base, **changes)
        dialog = QuantizeDialog(proto, model, [], base=recipe)
        qtbot.addWidget(dialog)
        assert name == "mode" or dialog.option(name).isVisibleTo(dialog), name
        # (the output is suggested afresh, so that a re-run never replaces the last result)
        assert dataclasses.replace(dialog.recipe(), output=recipe.output) == recipe, name


@pytest.mark.e2e
def test_exclude_and_requantize_from_the_graph_in_one_action(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """The node menu's "Exclude … and re-quantize": the run's recipe with the node kept in
    float, analysed on the same data, its calibration from the cache, the runs compared."""
    model = _sample_copy(tmp_path)
    open_and_wait(qtbot, window, model)
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    graph = doc.graph_panel
    assert graph.ir is not None
    node = "/features/features.0/Conv"
    menu = doc.node_menu_for(graph.ir.index_of(node))
    assert menu is not None
    again = [a for a in menu.actions() if "re-quantize" in a.text()]
    assert again and not again[0].isEnabled()  # nothing quantized yet
    dialog = window.quant.show_quantize_form()
    assert dialog is not None
    dialog.accept()
    panel = doc.quant_panel
    first = panel.runs[0]
    qtbot.waitUntil(lambda: first.state.is_final, timeout=120_000)
    assert first.analysis is not None, first.error
    assert first.quantization is not None and first.quantization.calibration == "computed"

    menu = doc.node_menu_for(graph.ir.index_of(node))
    assert menu is not None
    again = [a for a in menu.actions() if "re-quantize" in a.text()]
    assert again[0].isEnabled() and f"'{node}'" in again[0].text()
    again[0].trigger()
    assert len(panel.runs) == 2
    second = panel.runs[1]
    assert node in doc.excluded and second.recipe.exclude == (node,)
    assert second.recipe.output != first.recipe.output and second.analyze_on == first.analyze_on
    qtbot.waitUntil(lambda: second.state.is_final, timeout=120_000)
    assert second.analysis is not None, second.error
    assert second.quantization is not None and second.quantization.calibration == "reused"
    assert "calibration reused" in panel.history.item(1, 2).text()
    assert Path(first.output or "").exists() and Path(second.output or "").exists()
    qtbot.waitUntil(
        lambda: hasattr(panel, "comparison") and panel.comparison.isVisible(), timeout=5000
    )
    assert panel.comparison.columnCount() == 3  # the metric and the two runs
    panel.window().grab().save(str(tmp_path / "requantized.png"))


def _form_and_images(qtbot, tmp_path: Path) -> tuple[QuantizeDialog, Path]:  # type: ignore[no-untyped-def]
    """The quantize form on a copy of the sample, and a folder holding one image."""
    import onnx
    from PIL import Image

    model = _sample_copy(tmp_path)
    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (8, 8)).save(images / "a.png")
    dialog = QuantizeDialog(onnx.load(model), model, [])
    qtbot.addWidget(dialog)
    return dialog, images


def test_the_analysis_is_judged_where_the_result_is_for_or_where_chosen(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path
) -> None:
    """*Judge on* follows the target the result is quantized for; another runtime (OpenVINO's)
    can be chosen; with no analysis there is nothing to judge."""
    dialog, _ = _form_and_images(qtbot, tmp_path)
    target = dialog.option("target")
    assert isinstance(target, QComboBox) and isinstance(dialog.judge_box, QComboBox)
    assert dialog.analyze_target() == "cpu"
    target.setCurrentText("qnn-htp")
    assert dialog.analyze_target() == "qnn-htp"
    dialog.judge_box.setCurrentText("openvino")
    assert dialog.analyze_target() == "openvino"
    # the command beside the form says both steps, the analysis where it is judged
    quantize, analyze = dialog.command.text().split(" && ")
    assert quantize.startswith("edgestudio quantize ") and "--target qnn-htp" in quantize
    assert analyze.startswith("edgestudio analyze ") and analyze.endswith("--target openvino")
    dialog.analyze.setChecked(False)
    assert not dialog.judge_box.isEnabled()
    assert " && " not in dialog.command.text()


def test_a_mistyped_image_size_names_its_field(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    dialog, images = _form_and_images(qtbot, tmp_path)
    dialog.data_widget("size").setText("224")
    with pytest.raises(ValueError, match=r"^Image size: an image size is written HxW"):
        dialog.data_source(str(images))
    dialog.data_widget("size").setText("32x24")
    source = dialog.data_source(str(images))
    assert source is not None and source.size == (32, 24)


def test_every_data_preparation_option_is_in_the_form_and_the_command(
    qtbot, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """DataSource's declared options (image size, layout, scale, mean, std, colour, sample
    rate, tokenizer) each have a row in the form, shown for the data kind that uses it, whose
    value reaches the recipe and its command line, which reads back to the same source."""
    import dataclasses

    from edgestudio.core.inputs.data_source import DataSource, parse_data_source
    from edgestudio.core.job_api.options import declared_options

    dialog, images = _form_and_images(qtbot, tmp_path)
    model = dialog.model_path
    declared = {f.name: opt for f, opt in declared_options(DataSource)}
    assert set(dialog.data_options) == set(declared)
    typed = {
        "size": "32x24",
        "layout": "NHWC",
        "scale": "1/127.5",
        "mean": "0.5,0.25,0.125",
        "std": "0.229,0.224,0.225",
        "colour": "BGR",
    }
    for name, text in typed.items():
        widget = dialog.data_widget(name)
        if hasattr(widget, "setCurrentText"):
            widget.setCurrentText(text)
        else:
            widget.setText(text)
    dialog.calib_path.edit.setText(str(images))
    dialog.refresh()
    layout = dialog.prep_box.layout()
    shown = {n for n, (_, _, w) in dialog.data_options.items() if layout.isRowVisible(w)}
    assert shown == {n for n, o in declared.items() if o.used_in("images")}
    source = dialog.data_source(str(images))
    assert source is not None and source.kind == "images"
    assert (source.size, source.layout, source.scale, source.mean, source.std, source.colour) == (
        (32, 24),
        "NHWC",
        1 / 127.5,
        (0.5, 0.25, 0.125),
        (0.229, 0.224, 0.225),
        "BGR",
    )
    for name in typed:
        assert declared[name].flag in source.to_cli()
    # the command line reads its own text back into the same source (exact floats included)
    from edgestudio.cli.main import build_parser

    args = build_parser().parse_args(
        ["quantize", str(model), "-o", str(tmp_path / "q.onnx"), "--calib", *source.to_cli()]
    )
    from edgestudio.cli.job_ui import data_source

    assert data_source(args, args.calib) == dataclasses.replace(source)
    # audio takes only its sample rate
    audio = parse_data_source(str(tmp_path / "speech.wav"), sample_rate=8000, size=(1, 1))
    assert audio.sample_rate == 8000 and audio.size is None


def test_data_preparation_follows_the_data_in_use(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A dynamic quantization analysed on images shows the image rows (it has no calibration
    box); with nothing read as images, the preparation box is hidden."""
    dialog, images = _form_and_images(qtbot, tmp_path)
    dialog.show()
    dialog.mode.setCurrentIndex(dialog.mode.findData("dynamic"))
    dialog.calib_path.edit.setText(str(images))  # not used by a dynamic quantization
    dialog.eval_path.edit.setText(str(images))
    dialog.analyze.setChecked(True)
    dialog.refresh()
    assert not dialog.calib_box.isVisible()
    assert dialog.prep_box.isVisible()
    assert dialog.prep_box.layout().isRowVisible(dialog.data_widget("size"))
    assert not dialog.prep_box.layout().isRowVisible(dialog.data_widget("sample_rate"))
    dialog.analyze.setChecked(False)  # images only in a field nothing reads
    assert not dialog.prep_box.isVisible()
    dialog.mode.setCurrentIndex(dialog.mode.findData("qdq"))  # the calibration data is read
    assert dialog.prep_box.isVisible()


def _quantized_sample(qtbot, window: MainWindow, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A copy of the sample opened, its graph laid out, quantized and analysed with the
    form's defaults: its document view and the run."""
    open_and_wait(qtbot, window, _sample_copy(tmp_path))
    doc = window.current_document()
    assert doc is not None
    qtbot.waitUntil(lambda: doc.graph_panel.is_ready, timeout=30_000)
    dialog = window.quant.show_quantize_form()
    assert dialog is not None
    dialog.accept()
    run = doc.quant_panel.runs[0]
    qtbot.waitUntil(lambda: run.state.is_final, timeout=120_000)
    assert run.analysis is not None, run.error
    return doc, run


@pytest.mark.e2e
def test_keep_in_16_bit_from_the_graph_and_recover_accuracy(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """The node menu's "Keep … in 16-bit and re-quantize": the run's recipe with the node's
    activations in 16-bit (nothing in float), its result's precision says so; "Recover
    accuracy…" opens the tune set to the run's goal and data, integer only."""
    from PySide6.QtWidgets import QCheckBox

    from edgestudio.core.quant.tune_goal import recovery_goal

    doc, first = _quantized_sample(qtbot, window, tmp_path)
    graph, panel = doc.graph_panel, doc.quant_panel
    assert graph.ir is not None
    node = "/features/features.3/Conv"
    menu = doc.node_menu_for(graph.ir.index_of(node))
    assert menu is not None
    wide = [a for a in menu.actions() if "16-bit" in a.text()]
    assert wide and wide[0].isEnabled() and f"'{node}'" in wide[0].text()
    wide[0].trigger()
    second = panel.runs[1]
    assert second.recipe.int16 == (node,) and second.recipe.exclude == first.recipe.exclude
    qtbot.waitUntil(lambda: second.state.is_final, timeout=120_000)
    assert second.analysis is not None, second.error
    assert second.quantization is not None and second.quantization.precision is not None
    assert second.quantization.precision.activations.get("uint16", 0) >= 1

    tune = window.quant.recover_accuracy(first)
    assert tune is not None
    assert tune.windowTitle().startswith("Recover accuracy")
    assert tune.goal.text() == recovery_goal(first.analysis)
    # the run's own data: what judged it, as many samples, and what calibrated it
    judged, calib = first.analyze_on, first.recipe.calib
    if judged is not None and judged.kind != "synthetic":
        assert tune.data.path() == judged.path and tune.samples.value() == judged.samples
        if calib is not None and calib.kind != "synthetic" and calib.path != judged.path:
            assert tune.calib.path() == calib.path
    assert isinstance(tune.integer_only, QCheckBox) and tune.integer_only.isChecked()
    assert not tune.exclusions.isEnabled()
    settings = tune.settings()
    assert settings.integer_only and settings.base is not None
    tune.close()


@pytest.mark.e2e
def test_rank_layers_by_the_task_fills_the_sensitivity_tab_and_colours_the_graph(  # type: ignore[no-untyped-def]
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    from edgestudio.core.workspace.document import OverlayKind

    doc, _ = _quantized_sample(qtbot, window, tmp_path)
    panel = doc.quant_panel
    view = panel.sensitivity
    assert view.rank_button.isEnabled()
    view.count.setValue(2)
    view.rank_button.click()
    qtbot.waitUntil(lambda: doc.document.sensitivity is not None, timeout=180_000)
    result = doc.document.sensitivity
    assert result is not None and len(result.layers) == 2
    assert view.table.rowCount() == 2 and view.table.item(0, 1).text() == result.ranked()[0].node
    assert doc.document.overlay.kind is OverlayKind.SENSITIVITY
    shown = doc.document.overlay_values()
    assert shown is not None and set(shown[1]) <= {r.node for r in result.layers}
    doc.show_panel("quantization")
    panel.tabs.setCurrentWidget(view)
    panel.window().grab().save(str(tmp_path / "sensitivity.png"))
    doc.show_panel("graph")
    panel.window().grab().save(str(tmp_path / "sensitivity_graph.png"))


def test_a_failed_runs_message_is_cut_in_its_cell_and_whole_in_its_tooltip() -> None:
    from edgestudio.gui.quant.quant_panel import STATE_CHARS, short_error

    long = "onnxruntime's quantizer failed: " + "x" * 300 + "\nTraceback …"
    cut = short_error(long)
    assert len(cut) == STATE_CHARS and cut.endswith("…") and "\n" not in cut
    assert short_error("cancelled") == "cancelled"


def test_the_form_remembers_its_data_and_keeps_its_buttons_on_screen(
    qtbot, tmp_path: Path, isolated_settings
) -> None:  # type: ignore[no-untyped-def]
    """Data paths given once come back at the next opening (and the next session, through
    QSettings); the form's content scrolls, so Quantize stays in reach on a short screen."""
    import onnx

    from edgestudio.gui.forms.data_memory import DataMemory

    model = _sample_copy(tmp_path)
    calib, evaluation = tmp_path / "mine_c.npz", tmp_path / "mine_e.npz"
    shutil.copy(SAMPLE_CALIBRATION, calib)
    shutil.copy(SAMPLE_EVALUATION, evaluation)
    memory = DataMemory(isolated_settings)
    first = QuantizeDialog(onnx.load(model), model, [], memory=memory)
    qtbot.addWidget(first)
    first.mode.setCurrentIndex(first.mode.findData("qdq"))
    first.calib_path.edit.setText(str(calib))
    first.eval_path.edit.setText(str(evaluation))
    first.output.edit.setText(str(tmp_path / "out.onnx"))
    first.accept()
    again = QuantizeDialog(onnx.load(model), model, [], memory=DataMemory(isolated_settings))
    qtbot.addWidget(again)
    assert again.calib_path.path() == str(calib)
    assert again.eval_path.path() == str(evaluation)
    # another model remembers nothing of this one's
    other = tmp_path / "other" / "m.onnx"
    other.parent.mkdir()
    shutil.copy(model, other)
    fresh = QuantizeDialog(onnx.load(other), other, [], memory=DataMemory(isolated_settings))
    qtbot.addWidget(fresh)
    assert fresh.calib_path.path() != str(calib)
    # on a screen too short for every box, the content scrolls and the buttons stay visible
    again.mode.setCurrentIndex(again.mode.findData("qdq"))
    again.resize(760, 500)
    again.show()
    qtbot.waitExposed(again)
    from PySide6.QtWidgets import QScrollArea

    scroll = again.findChild(QScrollArea, "quantize_scroll")
    assert scroll is not None and scroll.verticalScrollBar().maximum() > 0
    button = again.run_button
    assert button.isVisible()
    bottom = button.mapTo(again, button.rect().bottomLeft()).y()
    assert bottom <= again.height()


@pytest.mark.e2e
def test_plots_are_built_when_their_tab_is_first_shown(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A model opens on its Summary: the Quantization and Performance tabs' plots are made
    when a tab is first shown, not with every model (they cost its opening)."""
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    open_and_wait(qtbot, window, _sample_copy(tmp_path))
    doc = window.current_document()
    assert doc is not None
    quant, perf = doc.quant_panel, doc.perf_panel
    assert not quant._activations.built and not quant._weights.built
    assert not perf._latency.built and not perf._edge_cloud.built
    doc.show_panel("quantization")
    qtbot.waitUntil(lambda: quant._activations.built)
    assert not quant._weights.built  # another tab of it: still not built
    doc.show_panel("performance")
    qtbot.waitUntil(lambda: perf._latency.built)
    assert perf.latency.parent() is perf._latency  # the view sits in its tab


def test_data_that_does_not_exist_blocks_the_form(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import onnx

    model = _sample_copy(tmp_path)
    dialog = QuantizeDialog(onnx.load(model), model, [])
    qtbot.addWidget(dialog)
    dialog.mode.setCurrentIndex(dialog.mode.findData("qdq"))
    dialog.eval_path.edit.setText(str(tmp_path / "nowhere"))
    errors = dialog.problems()[0]
    assert any("evaluation data" in e and "does not exist" in e for e in errors)
    assert not dialog.run_button.isEnabled() and dialog.eval_note.text() == ""
