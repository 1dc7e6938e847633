"""Preferences: stored in QSettings, applied to forms, reset to defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from edgestudio.core.workspace.preferences import Preferences
from edgestudio.gui.main_window import MainWindow
from edgestudio.gui.preferences_dialog import load_preferences
from tests.gui.conftest import open_and_wait


@pytest.mark.e2e
def test_preferences_round_trip_and_reach_the_forms(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    conv_model: Path,
    isolated_settings,
) -> None:
    dialog = window.show_preferences()
    dialog.threads.setText("1,2")
    dialog.atol.setText("0.01")
    dialog.output_pattern.setText("{folder}/out_{stem}_{suffix}.onnx")
    dialog.theme.setCurrentIndex(2)
    dialog.accept()
    stored = load_preferences(isolated_settings)
    assert stored.threads == (1, 2) and stored.atol == 0.01 and stored.theme == "dark"
    open_and_wait(qtbot, window, conv_model)
    convert = window.show_convert_form()
    assert convert is not None
    assert convert.output.path() == str(conv_model.parent / "out_conv_converted.onnx")
    assert convert.tolerance.atol.text() == "0.01"
    convert.reject()
    doc = window.current_document()
    assert doc is not None and doc.perf_panel.threads.text() == "1,2"
    cpu = doc.perf_panel.providers.item(0)
    assert cpu.checkState() == Qt.CheckState.Checked
    again = window.show_preferences()
    again.reset()
    assert again.preferences() == Preferences()
    again.accept()
    window.set_preferences(Preferences())  # back to the light default for later tests


def test_bad_stored_values_fall_back_to_defaults() -> None:
    prefs = Preferences.from_settings(
        {"threads": "x,y", "theme": "neon", "atol": "nope", "output_pattern": "no placeholders"}
    )
    assert prefs == Preferences()
