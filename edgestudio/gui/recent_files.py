"""The Recent Files list, kept in QSettings across sessions."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

_KEY = "recent_files"
MAX_RECENT = 10


class RecentFiles:
    """Most-recent-first list of opened model paths."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self._settings = settings or QSettings()

    def paths(self) -> list[str]:
        """Return the stored paths, most recent first (missing files included)."""
        value: object = self._settings.value(_KEY, [])
        if isinstance(value, str):  # QSettings returns a bare string for one-element lists
            return [value]
        return [str(v) for v in value] if isinstance(value, list) else []

    def add(self, path: str | Path) -> None:
        """Move ``path`` to the top of the list."""
        resolved = str(Path(path).resolve())
        items = [resolved] + [p for p in self.paths() if p != resolved]
        self._settings.setValue(_KEY, items[:MAX_RECENT])

    def remove(self, path: str) -> None:
        """Forget ``path`` (e.g. after it failed to open)."""
        self._settings.setValue(_KEY, [p for p in self.paths() if p != path])

    def clear(self) -> None:
        """Forget every path."""
        self._settings.setValue(_KEY, [])
