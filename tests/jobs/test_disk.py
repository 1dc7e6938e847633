"""A full disk and a read-only output folder: a clear error, no partial file, the input intact.

The small filesystem is a real tmpfs, mounted in a private user+mount namespace (``unshare``), so
the test needs no privileges and leaves nothing mounted behind.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _can_mount_privately() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            "mount -t tmpfs -o size=4k none /mnt",
        ],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _can_mount_privately(),
    reason="needs unshare with user namespaces to mount a small private tmpfs",
)


def _convert_onto_tmpfs(model: Path, mount: Path, options: str) -> tuple[int, str, list[str]]:
    """Run ``edgestudio convert`` writing onto a fresh tmpfs; return (rc, stderr, files left)."""
    mount.mkdir()
    out = mount / "converted.onnx"
    cli = shlex.join(
        [sys.executable, "-m", "edgestudio", "convert", str(model), "--opset", "18", "-o", str(out)]
    )
    script = (
        f"mount -t tmpfs -o {options} none {shlex.quote(str(mount))} || exit 99\n"
        f"{cli}\nrc=$?\nls -A {shlex.quote(str(mount))} >&3\nexit $rc\n"
    )
    proc = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "bash",
            "-c",
            f"exec 3>&1 1>&2\n{script}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 99, proc.stderr
    return proc.returncode, proc.stderr, proc.stdout.split()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_disk_full_fails_clearly_and_leaves_nothing(tmp_path: Path, conv_model: Path) -> None:
    before = _digest(conv_model)
    rc, stderr, left = _convert_onto_tmpfs(conv_model, tmp_path / "full", "size=8k")
    assert rc != 0
    assert "The disk is full" in stderr and str(tmp_path / "full") in stderr
    assert "Traceback" not in stderr
    assert left == []  # no result, no staging folder
    assert _digest(conv_model) == before


def test_read_only_folder_is_refused_before_the_job(tmp_path: Path, conv_model: Path) -> None:
    before = _digest(conv_model)
    rc, stderr, left = _convert_onto_tmpfs(conv_model, tmp_path / "ro", "ro,size=64k")
    assert rc != 0
    assert "is not writable" in stderr
    assert left == []
    assert _digest(conv_model) == before


def test_the_same_job_succeeds_with_room(tmp_path: Path, conv_model: Path) -> None:
    """The control: with space the same command works, so the failure above is the disk's."""
    rc, stderr, left = _convert_onto_tmpfs(conv_model, tmp_path / "roomy", "size=4m")
    assert rc == 0, stderr
    assert left == ["converted.onnx"]
