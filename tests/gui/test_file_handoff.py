"""Single instance: a second launch hands its files to the running window; macOS open events."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QDir
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtNetwork import QLocalSocket
from PySide6.QtWidgets import QApplication

from edgestudio.gui.app import EdgeStudioApplication
from edgestudio.gui.file_handoff import INSTANCE_ENV, InstanceServer, send_to_running_instance
from edgestudio.gui.main_window import MainWindow


@pytest.fixture
def server(qtbot, window: MainWindow) -> Iterator[InstanceServer]:  # type: ignore[no-untyped-def]
    srv = InstanceServer(name=f"edgestudio-test-{uuid.uuid4().hex[:8]}")
    assert srv.listen()
    srv.files_received.connect(window.receive_files)
    yield srv
    srv.close()


@pytest.mark.e2e
def test_second_launch_hands_its_file_to_the_running_window(
    qtbot, window: MainWindow, server: InstanceServer, conv_model: Path, sample_model: Path
) -> None:
    window.open_model(sample_model)
    env = dict(os.environ, **{INSTANCE_ENV: server.name}, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgestudio", str(conv_model)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    qtbot.waitUntil(lambda: proc.poll() is not None, timeout=60_000)  # our loop answers it
    _, stderr = proc.communicate()
    assert proc.returncode == 0, stderr
    assert "handed over to the running EdgeStudio window" in stderr
    qtbot.waitUntil(lambda: len(window.documents()) == 2, timeout=30_000)
    assert [d.path for d in window.documents()] == [sample_model, conv_model]
    assert window.tabs.currentWidget() is window.documents()[1]


def test_launch_without_files_only_brings_the_window_forward(
    qtbot, window: MainWindow, server: InstanceServer
) -> None:
    with qtbot.waitSignal(server.files_received, timeout=10_000) as got:
        ok = _send_without_blocking(qtbot, server.name, [])
    assert ok and got.args == [[]]
    assert window.documents() == []


def _send_without_blocking(qtbot, name: str, paths: list[str]) -> bool:  # type: ignore[no-untyped-def]
    """Talk to the server like send_to_running_instance, but without blocking our event loop."""
    client = QLocalSocket()
    client.connectToServer(name)
    qtbot.waitUntil(lambda: client.state() == QLocalSocket.LocalSocketState.ConnectedState)
    client.write(json.dumps({"open": paths}).encode() + b"\n")
    qtbot.waitUntil(lambda: client.bytesAvailable() > 0, timeout=10_000)
    return bytes(client.readAll().data()).startswith(b"ok")


def test_garbage_is_answered_with_an_error_and_opens_nothing(
    qtbot, window: MainWindow, server: InstanceServer
) -> None:
    received: list[list[str]] = []
    server.files_received.connect(received.append)
    client = QLocalSocket()
    client.connectToServer(server.name)
    qtbot.waitUntil(lambda: client.state() == QLocalSocket.LocalSocketState.ConnectedState)
    client.write(b"\x00\xffnot json\n")
    qtbot.waitUntil(lambda: client.bytesAvailable() > 0, timeout=10_000)
    assert bytes(client.readAll().data()) == b"error\n"
    assert received == [] and window.documents() == []


def test_nobody_listening_means_this_launch_becomes_the_instance(qtbot) -> None:  # type: ignore[no-untyped-def]
    name = f"edgestudio-test-{uuid.uuid4().hex[:8]}"
    assert not send_to_running_instance([], name=name)
    if sys.platform != "win32":  # a stale Unix socket left by a crashed instance
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(str(Path(QDir.tempPath()) / name))
        stale.close()
        assert not send_to_running_instance([], name=name)
    server = InstanceServer(name=name)
    assert server.listen()
    server.close()


@pytest.mark.e2e
def test_macos_file_open_event_reaches_the_window(
    qtbot,
    window: MainWindow,  # type: ignore[no-untyped-def]
    conv_model: Path,
) -> None:
    app = QApplication.instance()
    assert isinstance(app, EdgeStudioApplication)  # tests run on the app's own class
    app.files_opened.connect(window.receive_files)
    try:
        with qtbot.waitSignal(window.loads_settled, timeout=30_000):
            QApplication.sendEvent(app, QFileOpenEvent(str(conv_model)))
    finally:
        app.files_opened.disconnect(window.receive_files)
    assert [d.path for d in window.documents()] == [conv_model]
    assert window.documents()[0].is_loaded


def test_a_live_instance_keeps_its_socket(qtbot, server: InstanceServer) -> None:  # type: ignore[no-untyped-def]
    second = InstanceServer(name=server.name)
    assert not second.listen()  # the first one is alive: not replaced
    with qtbot.waitSignal(server.files_received, timeout=10_000):
        assert _send_without_blocking(qtbot, server.name, [])
