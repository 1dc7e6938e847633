"""Per-user folders and the environment every child process starts with."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

# Child processes a frozen app starts by re-running itself with a flag (it has no separate Python
# to run ``-m module`` with); edgestudio.__main__ dispatches these flags before any Qt import.
CHILD_ENTRIES = {
    "--job-worker": "edgestudio.jobs.worker",
    "--probe-runtime": "edgestudio.core.model.probe_runtime",
    "--run-model": "edgestudio.core.model.result_gate",
}


def cache_dir() -> Path:
    """Return EdgeStudio's per-user cache folder, where each OS keeps caches.

    ``~/.cache/edgestudio`` (or ``$XDG_CACHE_HOME/edgestudio``) on Linux,
    ``~/Library/Caches/edgestudio`` on macOS, ``%LOCALAPPDATA%\\edgestudio\\Cache`` on Windows.
    """
    import platformdirs  # here: a command starts its worker before this is needed

    return Path(platformdirs.user_cache_dir("edgestudio", appauthor=False))


def data_dir() -> Path:
    """Return EdgeStudio's per-user data folder (workspaces remembered per model live here)."""
    import platformdirs  # here: a command starts its worker before this is needed

    return Path(platformdirs.user_data_dir("edgestudio", appauthor=False))


def config_dir() -> Path:
    """Return EdgeStudio's per-user configuration folder (devices, their trusted host keys).

    ``~/.config/edgestudio`` (or ``$XDG_CONFIG_HOME/edgestudio``) on Linux,
    ``~/Library/Application Support/edgestudio`` on macOS, ``%LOCALAPPDATA%\\edgestudio`` on
    Windows; shared by the window and the CLI.
    """
    import platformdirs  # here: a command starts its worker before this is needed

    return Path(platformdirs.user_config_dir("edgestudio", appauthor=False))


def file_hash(path: Path) -> str:
    """SHA-256 of a file (streamed): the identity of a model for caches and workspaces.

    Kept per file, size and modification time in this process: one quantization asks for its
    model's hash twice (the input-specification cache, the pre-processing cache), and reading a
    256 MB model twice is a second for nothing."""
    stat = os.stat(path)
    return _hash_of(os.path.realpath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _hash_of(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_target(path: Path | str) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed onto ``path`` when the block ends
    without an exception, removed otherwise: readers see the old file or the whole new one,
    never half of it. The temporary name keeps ``path``'s suffix (writers that pick a format by
    it, such as image savers, still do)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp{target.suffix}")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomically(path: Path | str, content: str | bytes) -> None:
    """Write ``content`` (text as UTF-8, or bytes) to ``path``: all or nothing."""
    with atomic_target(path) as tmp:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            tmp.write_text(content, encoding="utf-8")


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


def child_command(flag: str, *args: str) -> list[str]:
    """The argv that starts one of :data:`CHILD_ENTRIES`: ourselves when frozen, else Python."""
    if getattr(sys, "frozen", False):
        return [sys.executable, flag, *args]
    return [sys.executable, "-X", "faulthandler", "-m", CHILD_ENTRIES[flag], *args]


def exit_child(code: int) -> None:
    """End a child process (job worker, runtime probe) without the interpreter's teardown.

    Freeing every module and native library a job loaded (onnxruntime, onnx, torch) takes ~0.1 s
    that the user waits for; by now the results are on disk (each operation closes what it
    writes, and the checks re-read the output) and reported over the pipe or stdout.
    """
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    os._exit(code)
