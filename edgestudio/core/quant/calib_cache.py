"""Calibration results kept between quantizations: exclude a node, re-quantize in seconds.

Excluding nodes, per-channel weights, weight types or reduce-range do not change the float
model's activation ranges, so a static quantization need not calibrate again when only those
change. onnxruntime (1.32) can read and write its calibration result (``TensorsData``) as a JSON
file (``quantize_static(..., calibration_cache_path=...)``); this module decides which file: one
per model content, calibration data, method and calibration options, in the per-user cache
(platformdirs: ``$XDG_CACHE_HOME/edgestudio/calibration`` on Linux), bounded in size with the
least recently used files evicted. ``EDGESTUDIO_NO_CALIB_CACHE=1`` turns it off (and the
pre-processing cache of :mod:`~edgestudio.core.quant.prep_cache`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestudio.core.paths import cache_dir, file_hash

DISABLE_ENV = "EDGESTUDIO_NO_CALIB_CACHE"
MAX_BYTES = 512 * 2**20  # eviction bound of the whole cache folder
# The extra options that change what calibration computes (all of onnxruntime's Calib* keys,
# and SmoothQuant, which rewrites the model before calibrating it).
_CALIBRATION_OPTION_PREFIXES = ("Calib", "SmoothQuant")


@dataclass(frozen=True)
class CalibrationOutcome:
    """What became of a static quantization's calibration: ``state`` is "reused", "computed"
    (and kept), "off" (the cache is turned off) or "uncached" (data without a fingerprint)."""

    state: str
    note: str


@dataclass(frozen=True)
class CalibrationCache:
    """Where one calibration result is (or will be) kept, and whether it is there now."""

    path: Path
    hit: bool

    def outcome(self) -> CalibrationOutcome:
        """Reused, or computed and kept, with the line the job log says it in."""
        if self.hit:
            return CalibrationOutcome(
                "reused",
                (
                    "Calibration ranges reused from the cache (same model, calibration data, "
                    f"method and options; {DISABLE_ENV}=1 turns it off)."
                ),
            )
        return CalibrationOutcome(
            "computed",
            (
                "Calibrated (no cached ranges for this model, data, method and options); the "
                "ranges are kept for the next quantization of the same model and data."
            ),
        )


def uncached(reason_env_set: bool) -> CalibrationOutcome:
    """The outcome of a calibration that the cache could not take part in."""
    if reason_env_set:
        return CalibrationOutcome(
            "off", f"Calibrated (the calibration cache is off: {DISABLE_ENV} is set)."
        )
    return CalibrationOutcome(
        "uncached", "Calibrated (these calibration data have no fingerprint to cache them by)."
    )


def cache_folder() -> Path:
    """The folder calibration results are kept in."""
    return cache_dir() / "calibration"


def calibration_key(
    model: Path,
    data_fingerprint: str,
    method: str,
    op_types: list[str] | None,
    extra_options: dict[str, Any],
    activation_bits: int,
) -> str:
    """The identity of a calibration result: the model's bytes, the data's, the method, the
    calibration options, and what onnxruntime's version makes of them."""
    import onnxruntime

    calibration_options = {
        k: v for k, v in sorted(extra_options.items()) if k.startswith(_CALIBRATION_OPTION_PREFIXES)
    }
    identity = {
        "model": file_hash(model),
        "data": data_fingerprint,
        "method": method,
        "op_types": sorted(op_types) if op_types else None,
        "options": calibration_options,
        # 16-bit (and 4-bit) types raise the model's opset before calibration
        "wide_types": activation_bits != 8,
        "onnxruntime": onnxruntime.__version__,
    }
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def lookup(key: str) -> CalibrationCache | None:
    """The cache entry for ``key``, or None when the cache is turned off."""
    if disabled():
        return None
    path = cache_folder() / f"{key}.json"
    hit = path.is_file()
    if hit:
        path.touch()  # recently used: evicted last
    return CalibrationCache(path, hit)


def disabled() -> bool:
    """Whether the quantization caches (calibration, pre-processing) are turned off."""
    return os.environ.get(DISABLE_ENV, "") not in ("", "0")


def evict(
    limit: int = MAX_BYTES, folder: Path | None = None, pattern: str = "*.json"
) -> list[Path]:
    """Remove the least recently used entries (``pattern`` in ``folder``, by default the
    calibration results) until the folder holds at most ``limit`` bytes; returns what was
    removed."""
    folder = folder or cache_folder()
    if not folder.is_dir():
        return []
    entries = []
    for path in folder.glob(pattern):
        try:
            stat = path.stat()
        except FileNotFoundError:  # another job evicted it
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = []
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        path.unlink(missing_ok=True)
        total -= size
        removed.append(path)
    return removed
