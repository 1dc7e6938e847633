"""Facts about the installed onnxruntime, learned in a child process and cached on disk."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from edgestudio.core.paths import cache_dir, child_command, child_env, write_atomically

_RUNTIME_DISTRIBUTIONS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-openvino",
    "onnxruntime-directml",
    "onnxruntime-qnn",
    "onnxruntime-silicon",
)


@dataclass(frozen=True)
class RuntimeInfo:
    """What the installed onnxruntime is and can do."""

    version: str
    providers: tuple[str, ...]
    max_opset: int


def installed_runtime_version() -> str | None:
    """Return the installed onnxruntime distribution's version without importing it."""
    for dist in _RUNTIME_DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def _cache_file(version: str) -> Path:
    return cache_dir() / f"onnxruntime-{version}-{sys.version_info[0]}.{sys.version_info[1]}.json"


@lru_cache(maxsize=1)
def runtime_info() -> RuntimeInfo | None:
    """Return the installed onnxruntime's facts, or None when it is missing or the probe failed.

    The first call per onnxruntime version runs a probe in a child process (~1 s); later calls
    read the cached answer.
    """
    version = installed_runtime_version()
    if version is None:
        return None
    cached = _cache_file(version)
    try:
        data = json.loads(cached.read_text())
    except (OSError, ValueError):
        data = _run_probe()
        if data is None:
            return None
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(cached, json.dumps(data))
        except OSError:
            pass  # a read-only cache only costs a second probe next time
    return RuntimeInfo(
        version=str(data["version"]),
        providers=tuple(str(p) for p in data["providers"]),
        max_opset=int(data["max_opset"]),
    )


def _run_probe() -> dict[str, object] | None:
    try:
        proc = subprocess.run(
            child_command("--probe-runtime"),
            capture_output=True,
            text=True,
            timeout=120,
            env=child_env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except ValueError:
        return None
    return result if isinstance(result, dict) else None
