"""What the user set in the Inputs form, remembered per model file (pure Python).

Keyed by the file's absolute path, size and modification time (cheap enough for the UI thread):
a model that changed on disk starts from the derived specification again.
"""

from __future__ import annotations

import json
from pathlib import Path

from edgestudio.core.inputs.grammar import InputOverrides
from edgestudio.core.paths import cache_dir, write_atomically


def _store() -> Path:
    return cache_dir() / "input_overrides.json"


def _key(model: Path) -> str:
    st = model.stat()
    return f"{model.resolve()}|{st.st_size}|{st.st_mtime_ns}"


def _read() -> dict[str, dict[str, list[str]]]:
    try:
        data = json.loads(_store().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recall(model: Path) -> InputOverrides:
    """The overrides last saved for ``model`` (none if it changed or was never edited)."""
    try:
        entry = _read().get(_key(model), {})
    except OSError:
        return InputOverrides()
    return InputOverrides(tuple(entry.get("shapes", [])), tuple(entry.get("ranges", [])))


def remember(model: Path, overrides: InputOverrides) -> None:
    """Save ``overrides`` for ``model`` (an empty one forgets it); never raises."""
    try:
        data = _read()
        key = _key(model)
        if overrides:
            data[key] = {"shapes": list(overrides.shapes), "ranges": list(overrides.ranges)}
        else:
            data.pop(key, None)
        store = _store()
        store.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(store, json.dumps(data, indent=1))
    except OSError:
        pass  # forgetting a form's values is not worth an error dialog
