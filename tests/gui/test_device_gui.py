"""Preferences › Devices and the Performance tab's Where column, against a loopback device."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from edgestudio.core.remote.devices import load_devices
from edgestudio.core.remote.ssh_link import known_hosts_file
from edgestudio.gui.main_window import MainWindow
from tests.gui.conftest import open_and_wait
from tests.remote.conftest import DEVICE_PYTHON, Loopback, loopback  # noqa: F401 (fixture)

SHOTS = os.environ.get("EDGESTUDIO_SHOTS")  # a folder: save screenshots there to look at


def test_devices_added_in_preferences_are_checked_after_the_host_key_is_trusted(  # type: ignore[no-untyped-def]
    qtbot,
    window: MainWindow,
    loopback: Loopback,  # noqa: F811 (the fixture)
) -> None:
    from edgestudio.core.remote.devices import make_device

    known_hosts_file().unlink()
    dialog = window.show_preferences()
    box = dialog.devices
    asked: list[str] = []

    def ask(device, algorithm, fingerprint):  # type: ignore[no-untyped-def]
        asked.append(fingerprint)
        return QMessageBox.StandardButton.Yes

    box.ask_trust = ask  # type: ignore[method-assign]
    device = make_device(
        "pi5",
        f"ssh://tester@127.0.0.1:{loopback.server.port}",
        str(DEVICE_PYTHON),
        str(loopback.key_file),
    )
    box.start_adding(device)
    qtbot.waitUntil(lambda: "onnxruntime 1.22" in box.status.text(), timeout=60_000)
    assert asked == [loopback.fingerprint()]
    assert "pi5" in load_devices() and box.table.rowCount() == len(load_devices())
    if SHOTS:
        dialog.grab().save(str(Path(SHOTS) / "preferences_devices.png"))

    # A device the user does not trust is not added.
    box.ask_trust = lambda *a: QMessageBox.StandardButton.No  # type: ignore[method-assign]
    known_hosts_file().unlink()
    box.start_adding(make_device("other", f"ssh://127.0.0.1:{loopback.server.port}"))
    qtbot.waitUntil(lambda: "not trusted" in box.status.text(), timeout=30_000)
    assert "other" not in load_devices()
    dialog.reject()


@pytest.mark.e2e
def test_performance_tab_measures_on_the_device_beside_this_machine(  # type: ignore[no-untyped-def]
    qtbot,
    window: MainWindow,
    loopback: Loopback,  # noqa: F811 (the fixture)
    sample_model: Path,
) -> None:
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    panel = doc.perf_panel
    window.refresh_devices()
    from edgestudio.core.remote.devices import made_environments

    assert [panel.machines.item(i).text() for i in range(panel.machines.count())] == [
        "This machine",
        *made_environments(),  # listed first, without being added
        "loop",
    ]
    panel.set_machines(["local", "loop"])
    panel.bench_widget("runs").setValue(30)  # type: ignore[attr-defined]
    with qtbot.waitSignal(panel.bench_requested) as requested:
        panel.run_button.click()
    assert requested.args[0].devices == ("local", "loop")
    qtbot.waitUntil(
        lambda: panel.latency.table.rowCount() == 2 and panel.latency.table.item(1, 4) is not None,
        timeout=120_000,
    )
    wheres = sorted(panel.latency.table.item(r, 1).text() for r in range(2))
    assert wheres[0].startswith("loop · ort 1.22") and wheres[1].startswith("this machine")
    assert "loop" in panel.edge_cloud.edge_label.text()  # the edge is the device
    if SHOTS:
        window.resize(1400, 860)
        window.show()
        doc.show_panel("performance")
        qtbot.wait(300)
        window.grab().save(str(Path(SHOTS) / "perf_devices.png"))


def test_an_environment_address_rests_the_python_and_key_fields(qtbot) -> None:  # type: ignore[no-untyped-def]
    import sys

    from edgestudio.gui.perf.devices_box import DeviceDialog

    dialog = DeviceDialog()
    qtbot.addWidget(dialog)
    dialog.name.setText("other")
    dialog.address.setText(f"env:{sys.executable}")
    assert not dialog.python.isEnabled() and not dialog.key.isEnabled()
    assert dialog.device().environment
    dialog.address.setText("ssh://pi@raspberrypi.local")
    assert dialog.python.isEnabled() and dialog.key.isEnabled()
