"""Parsing models off the UI thread: the window never freezes on a big file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx
from PySide6.QtCore import QObject, Signal

from edgestudio.core.errors import ModelLoadError
from edgestudio.core.model.graph_ir import NodeTable, constant_nodes
from edgestudio.core.model.model_io import check_names, load_model
from edgestudio.core.model.runtime_info import runtime_info
from edgestudio.core.model.summary import ModelSummary, summarize_model
from edgestudio.core.paths import file_hash
from edgestudio.gui.background import Background


@dataclass(frozen=True)
class LoadedModel:
    """A parsed model (weights left on disk) and its summary."""

    path: Path
    model: onnx.ModelProto
    summary: ModelSummary
    sha256: str = ""  # of the file as read: what workspaces record
    stamp: tuple[int, int] | None = None  # (size, mtime_ns) as read
    # The main graph's nodes read once, and its constant-only nodes: counted by the summary,
    # folded by the graph view.
    table: NodeTable | None = None
    constants: dict[int, str] | None = None


def _parse(path: Path) -> Callable[[Callable[[float], None], Callable[[], bool]], LoadedModel]:
    def work(progress: Callable[[float], None], cancelled: Callable[[], bool]) -> LoadedModel:
        # says clearly what is wrong with a bad or missing file; its names are checked with
        # the nodes read once for everything here
        model = load_model(path, check_text=False)
        stat = path.stat()
        table = NodeTable.of(model.graph)
        check_names(model, path.name, table)
        constants = constant_nodes(model.graph, table)
        summary = summarize_model(model, path, runtime_info(), constants, table)
        return LoadedModel(
            path,
            model,
            summary,
            file_hash(path),
            (stat.st_size, stat.st_mtime_ns),
            table,
            constants,
        )

    return work


class ModelLoader(QObject):
    """Loads models in the background and reports back on the UI thread."""

    loaded = Signal(object)  # LoadedModel
    failed = Signal(str, str, str)  # path, message, kind

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._background = Background(self, threads=2)

    def load(self, path: str | Path) -> None:
        """Start parsing ``path``; ``loaded`` or ``failed`` follows."""
        path = Path(path)
        self._background.run(_parse(path), self.loaded.emit, lambda exc: self._failed(path, exc))

    def _failed(self, path: Path, exc: Exception) -> None:
        if isinstance(exc, ModelLoadError):
            self.failed.emit(str(path), str(exc), exc.kind)
        else:  # a parser bug must not take the app down: report it instead
            self.failed.emit(
                str(path),
                f"{path.name} could not be read ({type(exc).__name__}: {exc}).",
                "unexpected",
            )

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until every started load has finished (for shutdown and tests)."""
        return self._background.wait(msecs)
