"""The one way the tests run the command line: ``python -m edgestudio ARGS`` in a child."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli(
    *args: str,
    timeout: float = 300,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``edgestudio ARGS`` (in ``env``, else ours) and return its exit code and output."""
    return subprocess.run(
        [sys.executable, "-m", "edgestudio", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )
