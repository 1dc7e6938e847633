"""Starting a worker process: the one place that decides how (pipes, stderr file, session)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def start_worker(
    args: list[str], folder: Path, env: dict[str, str], stdin: int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """Start a worker process: protocol on its stdout pipe, stderr into ``folder/stderr.txt``,
    detached from the terminal's Ctrl+C."""
    flags: dict[str, object] = {"start_new_session": True}
    if sys.platform == "win32":
        flags = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    with open(folder / "stderr.txt", "wb") as err:
        process: subprocess.Popen[bytes] = subprocess.Popen(
            args, stdin=stdin, stdout=subprocess.PIPE, stderr=err, env=env, **flags
        )  # type: ignore[call-overload]
    return process
