"""Offline and telemetry-free: every command works with sockets blocked, and onnxruntime writes
nothing under its telemetry folder in a fresh HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL

# Loaded by every Python process started with this folder on PYTHONPATH (workers included):
# any attempt to open a network connection raises and is recorded in a file.
BLOCK_SOCKETS = """
import os, socket
_log = os.environ["EDGESTUDIO_TEST_NET_LOG"]
def _refuse(*args, **kwargs):
    with open(_log, "a") as f:
        f.write(repr(args[:2]) + "\\n")
    raise OSError("network access blocked by the test")
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def test_commands_work_offline_and_leave_no_telemetry(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(BLOCK_SOCKETS)
    home = tmp_path / "home"
    home.mkdir()
    net_log = tmp_path / "net.log"
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PYTHONPATH": os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")]),
        "EDGESTUDIO_TEST_NET_LOG": str(net_log),
    }
    env.pop("ORT_DISABLE_TELEMETRY", None)  # our own processes must set it themselves
    env.pop("CI", None)
    quant = tmp_path / "q.onnx"
    commands = [
        ["inspect", str(SAMPLE_MODEL), "--json"],
        ["convert", str(SAMPLE_MODEL), "-o", str(tmp_path / "c.onnx"), "--opset", "18"],
        ["quantize", str(SAMPLE_MODEL), "-o", str(quant), "--calib", str(SAMPLE_CALIBRATION)],
        [
            "analyze",
            str(SAMPLE_MODEL),
            str(quant),
            "--data",
            str(SAMPLE_EVALUATION),
            "--samples",
            "16",
        ],
        ["bench", str(SAMPLE_MODEL), "--runs", "10", "--warmup", "2"],
    ]
    for args in commands:
        proc = subprocess.run(
            [sys.executable, "-m", "edgestudio", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
    assert not net_log.exists(), net_log.read_text()
    telemetry = home / ".cache" / "Microsoft"
    assert not telemetry.exists(), sorted(str(p) for p in telemetry.rglob("*"))
