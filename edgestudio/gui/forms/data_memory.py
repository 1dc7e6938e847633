"""The data paths a user gave for a model, kept across openings of a form and sessions."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings


class DataMemory:
    """Per model, the last calibration and evaluation data (``kind``: ``calib``, ``eval``),
    in QSettings: opening the Quantize form again, today or next week, finds them filled."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self._settings = settings or QSettings()

    @staticmethod
    def _key(model: Path, kind: str) -> str:
        # QSettings treats '/' as a group separator: the model's path is one key, escaped.
        return f"data/{kind}/{str(model.resolve()).replace('/', '|')}"

    def recall(self, model: Path, kind: str) -> str:
        """The data last used for ``model`` as ``kind`` ('' when none)."""
        value = self._settings.value(self._key(model, kind), "")
        return value if isinstance(value, str) else ""

    def remember(self, model: Path, kind: str, path: str) -> None:
        """Keep ``path`` as ``model``'s ``kind`` data (an empty path is not kept)."""
        if path.strip():
            self._settings.setValue(self._key(model, kind), path.strip())
