"""onnxruntime's pre-processing of a float model, kept between quantizations.

``quant_pre_process`` (an optimised session that folds constants and fuses what the quantizer
should see as one) builds a session on the whole float model: a few hundredths of a second on a
2k-node graph of small tensors, seconds on big models, spent again at every re-quantization
although its result depends only on the model's bytes and onnxruntime's version (its output is
byte-for-byte the same each time). The result is kept in the per-user cache beside the
calibration ranges, bounded in size, least recently used evicted first;
``EDGESTUDIO_NO_CALIB_CACHE=1`` turns both off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from edgestudio.core.paths import atomic_target, cache_dir, file_hash
from edgestudio.core.quant.calib_cache import disabled, evict

# Bumped when what is cached, or how it is made, changes.
CACHE_VERSION = 1
MAX_BYTES = 1024 * 2**20  # eviction bound of the folder
# A model above this is not kept: one copy would crowd out the rest, and on such models the
# copy's disk and time are not much below the pre-processing's own.
MAX_MODEL_BYTES = 256 * 2**20


def cache_folder() -> Path:
    """The folder pre-processed models are kept in."""
    return cache_dir() / "preprocessed"


def _entry(src: Path) -> Path | None:
    """Where the pre-processed form of ``src`` is kept; None when it is not cached (cache
    off, or a model too big to keep)."""
    if disabled() or src.stat().st_size > MAX_MODEL_BYTES:
        return None
    import onnxruntime

    identity = {
        "model": file_hash(src),
        "onnxruntime": onnxruntime.__version__,
        "skip_symbolic_shape": True,
        "version": CACHE_VERSION,
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return cache_folder() / f"{key}.onnx"


def preprocessed(src: Path, dst: Path, preprocess: Callable[[Path, Path], None]) -> bool:
    """Write the pre-processed form of ``src`` to ``dst``: from the cache when it is there
    (returns True), else by ``preprocess(src, dst)``, whose result is then kept. A result with
    files beside it (external data) is not kept. Raises what ``preprocess`` raises."""
    entry = _entry(src)
    if entry is not None and entry.is_file():
        with contextlib.suppress(OSError):
            # a copy of its own: eviction may remove the entry meanwhile, and nothing the job
            # does to its file can reach the cache
            shutil.copyfile(entry, dst)
            entry.touch()  # recently used: evicted last
            return True
    preprocess(src, dst)
    if entry is not None and not _has_companions(dst):
        with contextlib.suppress(OSError):
            entry.parent.mkdir(parents=True, exist_ok=True)
            with atomic_target(entry) as tmp:
                shutil.copyfile(dst, tmp)
            evict(MAX_BYTES, cache_folder(), "*.onnx")
    return False


def _has_companions(model: Path) -> bool:
    """Whether anything was written beside ``model`` (its external data)."""
    return any(p != model and p.name.startswith(model.name) for p in model.parent.iterdir())
