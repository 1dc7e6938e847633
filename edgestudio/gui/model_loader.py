"""Parsing models off the UI thread: the window never freezes on a big file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from edgestudio.core.errors import ModelLoadError
from edgestudio.core.model_io import load_model
from edgestudio.core.runtime_info import runtime_info
from edgestudio.core.summary import ModelSummary, summarize_model


@dataclass(frozen=True)
class LoadedModel:
    """A parsed model (weights left on disk) and its summary."""

    path: Path
    model: onnx.ModelProto
    summary: ModelSummary


class _LoadTask(QRunnable):
    def __init__(self, loader: ModelLoader, path: Path) -> None:
        super().__init__()
        self._loader = loader
        self._path = path

    def run(self) -> None:
        try:
            model = load_model(self._path)
            summary = summarize_model(model, self._path, runtime_info())
        except ModelLoadError as exc:
            self._loader.failed.emit(str(self._path), str(exc), exc.kind)
        except Exception as exc:  # a parser bug must not take the app down: report it instead
            self._loader.failed.emit(
                str(self._path),
                f"{self._path.name} could not be read ({type(exc).__name__}: {exc}).",
                "unexpected",
            )
        else:
            self._loader.loaded.emit(LoadedModel(self._path, model, summary))


class ModelLoader(QObject):
    """Loads models on a private thread pool and reports back through queued signals."""

    loaded = Signal(object)  # LoadedModel
    failed = Signal(str, str, str)  # path, message, kind

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(2)

    def load(self, path: str | Path) -> None:
        """Start parsing ``path``; ``loaded`` or ``failed`` follows."""
        self._pool.start(_LoadTask(self, Path(path)))

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until every started load has finished (for shutdown and tests)."""
        return bool(self._pool.waitForDone(msecs))
