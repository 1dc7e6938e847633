"""Quantization choices that already failed on a model, remembered per user so that an analysis
never suggests one of them again (per-channel weights that crash onnxruntime's quantizer on
this model, a dynamic quantization whose result does not run).

Kept by the model file's hash in ``cache_dir()/failed_modes`` — one small JSON file per model,
written atomically — and shared by the window, the CLI and the tuner.
"""

from __future__ import annotations

import json
from pathlib import Path

from edgestudio.core.paths import cache_dir, file_hash, write_atomically

# The options a suggestion can name, by what the suggestion says to turn on.
PER_CHANNEL = "per-channel"
DYNAMIC = "dynamic"
REDUCE_RANGE = "reduce-range"
MAX_CAUSE = 300  # characters of the failure kept: enough to say why


def _folder() -> Path:
    return cache_dir() / "failed_modes"


def _record_path(model: Path) -> Path:
    return _folder() / f"{file_hash(model)}.json"


def choices_of(mode: str, per_channel: bool, reduce_range: bool) -> list[str]:
    """The suggestible choices a recipe made (what a failure of it rules out)."""
    made = []
    if mode == DYNAMIC:
        made.append(DYNAMIC)
    if per_channel:
        made.append(PER_CHANNEL)
    if reduce_range:
        made.append(REDUCE_RANGE)
    return made


def remember_failure(model: Path, choices: list[str], cause: str) -> None:
    """Note that quantizing ``model`` with every one of ``choices`` failed with ``cause``.

    Only a choice that alone marks the recipe apart is remembered: per-channel and dynamic
    together failing says nothing certain about either, so both are kept only when each is
    the one choice made. Never raises: a cache that cannot be written loses a hint, not a job.
    """
    if len(choices) != 1:
        return
    try:
        path = _record_path(model)
        known = failed_choices(model)
        known[choices[0]] = cause.strip()[:MAX_CAUSE]
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(known, indent=1, sort_keys=True))
    except OSError:
        pass


def forget_failure(model: Path, choices: list[str]) -> None:
    """Drop ``choices`` from the record: a recipe with them has since worked on ``model``."""
    if not choices:
        return
    try:
        known = failed_choices(model)
        if not set(choices) & set(known):
            return
        for choice in choices:
            known.pop(choice, None)
        write_atomically(_record_path(model), json.dumps(known, indent=1, sort_keys=True))
    except OSError:
        pass


def failed_choices(model: Path) -> dict[str, str]:
    """The choices that failed on ``model``, each with its cause (empty when none or unknown).

    With no record at all (the usual case) the model is not hashed: a big model's hash takes
    seconds."""
    if not _folder().is_dir() or not any(_folder().iterdir()):
        return {}
    try:
        data = json.loads(_record_path(model).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
