"""The main window: opening by every route, several documents, errors that keep the app alive."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QImage
from PySide6.QtWidgets import QMessageBox, QTableWidget

from edgestudio.core.model.summary import summarize_file
from edgestudio.gui.main_window import MainWindow
from tests.bad_models import CASES
from tests.gui.conftest import open_and_wait


def test_window_starts_with_welcome(window: MainWindow) -> None:
    assert window.isVisible()
    assert window.centralWidget() is window.welcome
    assert window.tabs.count() == 0


@pytest.mark.e2e
def test_open_shows_summary_with_the_right_numbers(
    qtbot, window: MainWindow, conv_model: Path
) -> None:
    open_and_wait(qtbot, window, conv_model)
    doc = window.current_document()
    assert doc is not None and doc.is_loaded
    facts = {k: label.text() for k, label in doc.summary_panel.fact_labels.items()}
    assert facts["Nodes"] == "4"
    assert facts["Parameters"].startswith("2,682")
    assert facts["IR version"] == "8"
    assert facts["Opset imports"] == "ai.onnx 17"
    assert facts["Producer"] == "tests 1.0"
    assert facts["Graph name"] == "conv_relu_gemm"
    assert facts["Operators need opset"] == "≥ 1"
    assert facts["Runtime supports opset"].startswith("≤ ")
    assert doc.summary_panel.histogram.counts == {"Conv": 1, "Relu": 1, "Flatten": 1, "Gemm": 1}
    table = doc.summary_panel.findChild(QTableWidget, "inputs_table")
    assert [table.item(0, c).text() for c in range(3)] == ["x", "float32", "[batch, 3, 8, 8]"]
    meta = doc.summary_panel.findChild(QTableWidget, "metadata_table")
    assert {meta.item(r, 0).text() for r in range(meta.rowCount())} == {"author", "task"}
    assert window.centralWidget() is window.tabs


@pytest.mark.e2e
def test_several_models_open_in_tabs(
    qtbot, window: MainWindow, conv_model: Path, sample_model: Path
) -> None:
    open_and_wait(qtbot, window, conv_model)
    open_and_wait(qtbot, window, sample_model)
    assert [d.path.name for d in window.documents()] == ["conv.onnx", "digits_cnn.onnx"]
    # opening an already-open file focuses its tab instead of duplicating it
    window.open_model(conv_model)
    assert window.tabs.count() == 2 and window.tabs.currentIndex() == 0
    window.close_document(0)
    assert [d.path.name for d in window.documents()] == ["digits_cnn.onnx"]


def _drop(window: MainWindow, path: Path) -> tuple[QDragEnterEvent, QDropEvent]:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(
        QPoint(50, 50),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dragEnterEvent(enter)
    drop = QDropEvent(
        QPointF(50, 50),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(drop)
    return enter, drop


@pytest.mark.e2e
def test_drop_opens_the_file(qtbot, window: MainWindow, conv_model: Path) -> None:
    with qtbot.waitSignal(window.loads_settled, timeout=30_000):
        enter, drop = _drop(window, conv_model)
    assert enter.isAccepted()
    assert drop.isAccepted()
    assert window.documents()[0].path == conv_model
    assert window.documents()[0].is_loaded


def test_drag_of_non_files_is_refused(window: MainWindow) -> None:
    mime = QMimeData()
    mime.setText("not a file")
    enter = QDragEnterEvent(
        QPoint(5, 5),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dragEnterEvent(enter)
    assert not enter.isAccepted()


@pytest.mark.e2e
@pytest.mark.parametrize("case", list(CASES))
def test_every_bad_model_shows_a_dialog_and_keeps_other_models(
    qtbot, window: MainWindow, tmp_path: Path, conv_model: Path, case: str
) -> None:
    bad = CASES[case]
    open_and_wait(qtbot, window, conv_model)
    folder = tmp_path / "bad"  # apart from conv_model, whose folder the builders would share
    folder.mkdir()
    path = bad.build(folder)
    if bad.refused:
        with qtbot.waitSignal(window.model_failed, timeout=30_000) as failed:
            window.open_model(path)
        assert bad.words in failed.args[1]
        box = window.messages.dialogs[-1]
        assert box.icon() == QMessageBox.Icon.Critical
        assert bad.words in box.text()
        assert [d.path for d in window.documents()] == [conv_model]
    else:  # opens, with a warning that names the problem, here and on the summary panel
        open_and_wait(qtbot, window, path)
        box = window.messages.dialogs[-1]
        assert box.icon() == QMessageBox.Icon.Warning
        assert bad.words in box.informativeText()
        panel = window.documents()[-1].summary_panel
        assert panel.problems_label.isVisibleTo(panel) and bad.words in panel.problems_label.text()
        assert [d.path for d in window.documents()] == [conv_model, path]
    assert len(window.messages.dialogs) == 1 and box.isVisible()
    assert window.documents()[0].is_loaded
    assert window.isVisible()


@pytest.mark.e2e
def test_recent_files_menu_reopens(qtbot, window: MainWindow, conv_model: Path) -> None:
    open_and_wait(qtbot, window, conv_model)
    assert window.recent.paths() == [str(conv_model.resolve())]
    window.close_document(0)
    window.menus.fill_recent()
    actions = [
        a for a in window.menus.recent_menu.actions() if a.toolTip() == str(conv_model.resolve())
    ]
    assert len(actions) == 1
    with qtbot.waitSignal(window.loads_settled, timeout=30_000):
        actions[0].trigger()
    assert window.documents()[0].path == conv_model.resolve()


@pytest.mark.e2e
@pytest.mark.parametrize("text", ["&Save workspace…", "&Export report…"])
def test_menu_actions_ask_where_to_write(
    qtbot, window: MainWindow, conv_model: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """Triggered as a menu item or its shortcut triggers it (with its ``checked`` argument),
    a saving action asks for a file: it once took ``checked`` (False) for the path and
    silently did nothing — seen only in the real window."""
    from PySide6.QtWidgets import QFileDialog

    asked: list[str] = []
    monkeypatch.setattr(
        QFileDialog,
        "getSaveFileName",
        staticmethod(lambda *a, **k: (asked.append(a[1]), ("", ""))[1]),
    )
    open_and_wait(qtbot, window, conv_model)
    action = next(a for a in window.findChildren(QAction) if a.text() == text)
    action.trigger()
    assert len(asked) == 1


def test_open_shortcut_is_ctrl_o(window: MainWindow) -> None:
    shortcuts = {a.text(): a.shortcut().toString() for a in window.findChildren(QAction)}
    assert shortcuts["&Open…"] == "Ctrl+O"


@pytest.mark.e2e
def test_summary_panel_renders_for_node_suite_sample(
    qtbot, window: MainWindow, node_suite_models: list[Path]
) -> None:
    from edgestudio.gui.model.summary_panel import SummaryPanel

    for path in node_suite_models[::25]:  # every 25th: ~75 varied models
        panel = SummaryPanel(summarize_file(path))
        qtbot.addWidget(panel)
        assert panel.grab().width() > 0


@pytest.mark.e2e
@pytest.mark.parametrize("panel", ["summary", "netron"])
def test_screenshot_command_writes_a_png_and_exits_cleanly(
    tmp_path: Path, sample_model: Path, panel: str
) -> None:
    """A whole app life in a fresh process; with the Netron tab open, exit once segfaulted."""
    out = tmp_path / "shot.png"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgestudio",
            str(sample_model),
            "--screenshot",
            str(out),
            "--panel",
            panel,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(out))
    assert image.width() >= 800 and image.height() >= 600
    # not blank: many distinct colours are drawn
    colours = {
        image.pixel(x, y) for x in range(0, image.width(), 17) for y in range(0, image.height(), 17)
    }
    assert len(colours) > 10


def test_shortcut_list_covers_the_menus(window: MainWindow) -> None:
    rows = dict((v, k) for k, v in window.menus.shortcut_list())
    assert rows["Open"] == "Ctrl+O"
    assert rows["Quantize"] == "Ctrl+Shift+Q"
    assert rows["Jobs panel"] == "Ctrl+J"
    box = window.menus.show_shortcuts()
    assert "Ctrl+Shift+C" in box.text()
