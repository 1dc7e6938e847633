"""Per-user folders and the environment every child process starts with."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Return EdgeStudio's cache folder (``$XDG_CACHE_HOME/edgestudio`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "edgestudio"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Return the environment for a child process: telemetry off, safe PyTorch loading.

    Set explicitly rather than inherited so that a worker is safe even if the parent's
    environment was changed after start-up.
    """
    env = dict(os.environ)
    env["ORT_DISABLE_TELEMETRY"] = "1"
    env["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    if extra:
        env.update(extra)
    return env
