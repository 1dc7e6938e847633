"""Files that reach the window from a second launch of the app (single instance).

Single instance: the first EdgeStudio listens on a per-user local socket (a Unix socket only its
user may connect to; a named pipe on Windows). A later ``edgestudio a.onnx`` — a double-click in
the file manager — connects, sends the absolute paths as one JSON line, waits for ``ok`` and
exits, and the running window opens the files and comes to the front. A stale socket left by a
crashed instance is detected (nobody answers) and replaced.
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

HANDOFF_TIMEOUT_MS = 2000
INSTANCE_ENV = "EDGESTUDIO_INSTANCE"  # overrides the socket name (tests, several profiles)


def instance_name() -> str:
    """The local socket name shared by this user's EdgeStudio processes."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment or the password database
        user = "user"
    return os.environ.get(INSTANCE_ENV) or f"edgestudio-{user}"


def send_to_running_instance(paths: Sequence[str | Path], name: str | None = None) -> bool:
    """Hand ``paths`` to a running EdgeStudio; True when it took them (then this one may exit)."""
    socket = QLocalSocket()
    socket.connectToServer(name or instance_name())
    if not socket.waitForConnected(HANDOFF_TIMEOUT_MS):
        return False
    message = {"open": [str(Path(p).absolute()) for p in paths]}
    socket.write(json.dumps(message).encode() + b"\n")
    socket.waitForBytesWritten(HANDOFF_TIMEOUT_MS)
    answered = socket.waitForReadyRead(HANDOFF_TIMEOUT_MS) and bytes(
        socket.readAll().data()
    ).startswith(b"ok")
    socket.disconnectFromServer()
    return answered


def _accepts_connections(name: str) -> bool:
    probe = QLocalSocket()
    probe.connectToServer(name)
    alive = probe.waitForConnected(HANDOFF_TIMEOUT_MS // 4)
    probe.abort()
    return alive


class InstanceServer(QObject):
    """Listens for later launches and emits the files they hand over.

    ``files_received`` carries the list of absolute paths (empty when the user just started the
    app again: the window should come to the front).
    """

    files_received = Signal(list)

    def __init__(self, name: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name or instance_name()
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)
        self._buffers: dict[QLocalSocket, bytes] = {}

    def listen(self) -> bool:
        """Start listening, replacing a stale socket from a crashed instance; True on success.

        False when another instance is alive on the name (e.g. too busy to answer a hand-over
        in time): its socket is left alone and this window simply stands on its own.
        """
        # Asked first because listen() would not fail: with socket options set, Qt on Unix
        # renames its new socket over an existing one, live or not.
        if _accepts_connections(self.name):
            return False
        QLocalServer.removeServer(self.name)  # nobody behind it: left by a crashed instance
        return self._server.listen(self.name)

    def close(self) -> None:
        """Stop listening (the socket file is removed)."""
        self._server.close()

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            self._buffers[socket] = b""
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(lambda s=socket: self._forget(s))

    def _read(self, socket: QLocalSocket) -> None:
        data = self._buffers.get(socket, b"") + bytes(socket.readAll().data())
        if b"\n" not in data:
            self._buffers[socket] = data[-65536:]  # a line of paths is never this long
            return
        line = data.split(b"\n", 1)[0]
        try:
            paths = [str(p) for p in json.loads(line)["open"]]
        except (ValueError, KeyError, TypeError):
            socket.write(b"error\n")
            return
        socket.write(b"ok\n")
        socket.flush()
        self.files_received.emit(paths)

    def _forget(self, socket: QLocalSocket) -> None:
        self._buffers.pop(socket, None)
        socket.deleteLater()
