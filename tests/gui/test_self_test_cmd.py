"""``edgestudio --self-test`` through the real window, as a user starts it: open, quantize and
analyse the sample in job workers started ahead of their jobs, then leave nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_self_test_passes_in_warm_workers_and_leaves_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "edgestudio", "--self-test"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "self-test: passed" in done.stderr
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith("edgestudio-job-")]
    assert leftovers == []  # the worker waiting at exit was stopped and its folder removed
