"""A device on the loopback interface: a real SSH server, a device user's home, and a device
Python of its own (``make device-env``: an older onnxruntime than the app's)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest

from edgestudio.core.remote.devices import Device, add_device, make_device
from edgestudio.core.remote.runner_calls import run_async
from edgestudio.core.remote.ssh_link import host_key_state, trust_host_key
from tests.remote.ssh_server import LoopbackSSHServer, client_key

REPO = Path(__file__).resolve().parents[2]
# `make test` names the device Python it made, and then a missing one is a failure, not a skip.
REQUIRED = os.environ.get("EDGESTUDIO_DEVICE_PYTHON")
DEVICE_PYTHON = Path(REQUIRED) if REQUIRED else REPO / ".device-venv" / "bin" / "python"


@dataclass
class Loopback:
    """The server, its device user's home, the client key and the device as added."""

    server: LoopbackSSHServer
    home: Path
    key_file: Path
    device: Device
    tmp: Path

    def add(self, name: str = "loop", python: str | None = None, trust: bool = True) -> Device:
        """Add a device on this server (its host key trusted unless ``trust`` is False)."""
        device = make_device(
            name,
            f"ssh://tester@127.0.0.1:{self.server.port}",
            python or str(DEVICE_PYTHON),
            str(self.key_file),
        )
        add_device(device)
        if trust:
            _, key = run_async(host_key_state(device))
            trust_host_key(device, key)
        return device

    def fingerprint(self) -> str:
        """The server's host key fingerprint, as the user would read it on the device."""
        return str(self.server.host_key.get_fingerprint())

    def restart(self, host_key: asyncssh.SSHKey | None = None) -> None:
        """Stop and start the server on the same port (with another host key if given)."""
        port = self.server.port
        self.server.stop()
        self.server = LoopbackSSHServer(
            self.home, self.server.client_key, host_key, port=port
        ).start()


NO_DEVICE_PYTHON = (
    "no device Python: run `make device-env` (make test makes it and names it in "
    "EDGESTUDIO_DEVICE_PYTHON, so there these tests never skip)"
)


@pytest.fixture
def loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Loopback]:
    """A device reached over SSH on 127.0.0.1, added and trusted as ``loop``."""
    if not DEVICE_PYTHON.exists():
        if REQUIRED:
            pytest.fail(f"EDGESTUDIO_DEVICE_PYTHON={REQUIRED} does not exist: `make device-env`")
        pytest.skip(reason=NO_DEVICE_PYTHON)
    # Our config (devices, known_hosts) and the client's ~/.ssh in the test's folder; no agent.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "client-home"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    (tmp_path / "client-home").mkdir()
    home = tmp_path / "device-home"
    home.mkdir()
    key, key_file = client_key(tmp_path)
    server = LoopbackSSHServer(home, key).start()
    loop = Loopback(server, home, key_file, Device("", ""), tmp_path)
    loop.device = loop.add()
    try:
        yield loop
    finally:
        loop.server.stop()


def bare_python(folder: Path) -> Path:
    """A Python environment with neither numpy nor onnxruntime (a fresh device)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


def runner_processes(home: Path) -> list[int]:
    """Pids of device runners still running from ``home``'s cache (zombies do not count)."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if str(home) in cmd and "runner-" in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
