"""Workspaces: a document saved to a file and restored from it, in any later session.

A workspace is one JSON file (``*.edgestudio.json``) holding the model's path and SHA-256, its
summary, the inputs the user set, the nodes kept in float, the quantization runs with their
analyses, the last benchmark and profile, the jobs run on it and the active overlay. A model
that changed on disk since the save is reported (the results may no longer describe it), and a
model that moved is found again beside the workspace when it moved with it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.paths import data_dir, file_hash, write_atomically
from edgestudio.core.serialise import from_json, to_json
from edgestudio.core.workspace.document import ModelDocument, saved_fields

FORMAT = "edgestudio-workspace"
VERSION = 1
SUFFIX = ".edgestudio.json"


class WorkspaceError(EdgeStudioError):
    """A file that is not a workspace we can read."""


@dataclass
class Workspace:
    """A restored document and what the restore found about its model."""

    document: ModelDocument
    path: Path
    saved_hash: str
    model_found: bool  # the model file exists (at its saved path, or beside the workspace)
    model_changed: bool  # it exists but its content is not the one the results describe

    def warning(self) -> str | None:
        """What the user should know before trusting the restored results, if anything."""
        if not self.model_found:
            return (
                f"The model {self.document.path} is not there any more: the results are "
                "shown as they were saved, but no new job can run on it."
            )
        if self.model_changed:
            return (
                f"{self.document.path.name} changed on disk since this workspace was "
                "saved: the results describe the earlier file. Run them again to update."
            )
        return None


def default_path(model: Path) -> Path:
    """Where a model's workspace is offered by default: beside it, ``NAME.edgestudio.json``."""
    return model.with_name(model.stem + SUFFIX)


def as_json(
    document: ModelDocument, model_hash: str, stamp: tuple[int, int] | None = None
) -> dict[str, Any]:
    """The document as plain JSON (see :func:`save`)."""
    size, mtime_ns = stamp or (None, None)
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": {
            "path": str(document.path),
            "sha256": model_hash,
            "size": size,
            "mtime_ns": mtime_ns,
        },
        **{name: _plain(getattr(document, name)) for name, _ in saved_fields()},
    }


def _plain(value: Any) -> Any:
    """A field's JSON; a set as a sorted list (the same file for the same document)."""
    data = to_json(value)
    return sorted(data) if isinstance(data, (set, frozenset)) else data


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def save(document: ModelDocument, path: str | Path) -> Path:
    """Write ``document`` to ``path`` atomically, with the hash of the model file the results
    describe (taken when it was opened; hashed now only for a document opened otherwise)."""
    target = Path(path).absolute()
    model_hash, stamp = document.model_hash, document.file_stamp
    if not model_hash and document.path.is_file():
        model_hash, stamp = file_hash(document.path), _stamp(document.path)
    write_atomically(
        target, json.dumps(as_json(document, model_hash, stamp), indent=1, default=str)
    )
    remember(document.path, target)
    return target


def load(path: str | Path) -> Workspace:
    """Read a workspace file back into a document.

    Raises
    ------
    WorkspaceError
        When the file is missing, not JSON, or not a workspace of a version we read.
    """
    source = Path(path).absolute()
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WorkspaceError(f"Cannot read the workspace {source}: {exc.strerror or exc}.") from exc
    except ValueError as exc:
        raise WorkspaceError(f"{source.name} is not a workspace file (not JSON).") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise WorkspaceError(f"{source.name} is not an EdgeStudio workspace.")
    if data.get("version") != VERSION:
        raise WorkspaceError(
            f"{source.name} is a workspace of version {data.get('version')}; "
            f"this EdgeStudio reads version {VERSION}."
        )
    try:
        return _document_of(data, source)
    except (KeyError, TypeError, ValueError) as exc:
        raise WorkspaceError(f"The workspace {source.name} is damaged ({exc}).") from exc


def _document_of(data: dict[str, Any], source: Path) -> Workspace:
    model = Path(data["model"]["path"])
    saved_hash = str(data["model"].get("sha256", ""))
    if not model.is_file() and (source.parent / model.name).is_file():
        model = source.parent / model.name  # moved together with its workspace
    found = model.is_file()
    # Same size and modification time: the same file, without reading it; else the hash says.
    saved_stamp = (data["model"].get("size"), data["model"].get("mtime_ns"))
    changed = (
        found
        and bool(saved_hash)
        and _stamp(model) != tuple(saved_stamp)
        and file_hash(model) != saved_hash
    )
    document = ModelDocument(model)
    for name, kind in saved_fields():
        if data.get(name) is not None:  # absent or null: the field's default
            setattr(document, name, from_json(kind, data[name]))
    return Workspace(document, source, saved_hash, found, changed)


# ----- the last workspace of each model (offered when the model is opened again) -----------------
def _index() -> Path:
    return data_dir() / "workspaces.json"


def _read_index() -> dict[str, str]:
    try:
        data = json.loads(_index().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(model: Path, workspace: Path) -> None:
    """Note ``workspace`` as the last one saved for ``model``; never raises."""
    try:
        index = _read_index()
        index[str(Path(model).absolute())] = str(workspace)
        _index().parent.mkdir(parents=True, exist_ok=True)
        write_atomically(_index(), json.dumps(index, indent=1))
    except OSError:
        pass  # not remembering is not worth an error dialog


def last_for(model: Path) -> Path | None:
    """The last workspace saved for ``model``, if it still exists."""
    saved = _read_index().get(str(Path(model).absolute()))
    return Path(saved) if saved and os.path.isfile(saved) else None
