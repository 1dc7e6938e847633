"""Our external-data policy, applied before any library follows a path written in a model.

A model names its external data files itself, so a file from a stranger could point at
``/etc/passwd``, ``../secrets`` or a hard link to a file elsewhere (onnxruntime follows hard links,
ARCHITECTURE.md). We accept a location only when it is relative, resolves inside the model's folder,
is a regular file with a single link, and holds the byte range the tensor claims.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import TensorProto

from edgestudio.core.errors import ModelLoadError


@dataclass(frozen=True)
class ExternalDataFile:
    """One external data file of a model, as the model's tensors reference it."""

    location: str
    size_bytes: int
    tensor_count: int
    referenced_bytes: int


@dataclass(frozen=True)
class ExternalRef:
    """Where one tensor's bytes live outside the model file."""

    tensor: str
    location: str
    offset: int
    length: int | None


def external_refs(tensor: TensorProto) -> ExternalRef | None:
    """Return the external-data reference of ``tensor``, or None when its data is inline."""
    if tensor.data_location != TensorProto.EXTERNAL:
        return None
    entries = {e.key: e.value for e in tensor.external_data}
    try:
        offset = int(entries.get("offset", "0") or 0)
        length = int(entries["length"]) if entries.get("length") else None
    except ValueError as exc:
        raise ModelLoadError(
            f"Tensor '{tensor.name}' has a malformed external-data offset or length.",
            "external_data_range",
        ) from exc
    return ExternalRef(tensor.name, entries.get("location", ""), offset, length)


def iter_graph_tensors(graph: onnx.GraphProto) -> Iterator[TensorProto]:
    """Yield every weight tensor of ``graph`` and its subgraphs (initializers and Constants)."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from iter_graph_tensors(attr.g)
            for sub in attr.graphs:
                yield from iter_graph_tensors(sub)


def resolve_location(model_dir: Path, ref: ExternalRef) -> Path:
    """Check one reference against the policy and return the file it may read.

    Raises
    ------
    ModelLoadError
        When the location is absolute, escapes the folder, is a link, is missing, or the byte
        range lies beyond the end of the file.
    """
    loc = ref.location
    if not loc:
        raise ModelLoadError(
            f"Tensor '{ref.tensor}' says its data is external but names no file.",
            "external_data_missing",
        )
    if os.path.isabs(loc) or loc.startswith(("/", "\\")) or (len(loc) > 1 and loc[1] == ":"):
        raise ModelLoadError(
            f"Tensor '{ref.tensor}' points at an absolute path ('{loc}'). EdgeStudio reads "
            "external data only from files next to the model.",
            "external_data_outside",
        )
    folder = model_dir.resolve()
    candidate = folder / loc
    if candidate.is_symlink():
        raise ModelLoadError(
            f"External data file '{loc}' is a symbolic link; EdgeStudio does not follow links out "
            "of the model's folder.",
            "external_data_link",
        )
    real = Path(os.path.realpath(candidate))
    if folder != real and folder not in real.parents:
        raise ModelLoadError(
            f"Tensor '{ref.tensor}' points outside the model's folder ('{loc}'). EdgeStudio reads "
            "external data only from files next to the model.",
            "external_data_outside",
        )
    if not real.exists():
        raise ModelLoadError(
            f"External data file '{loc}' is missing: it must be in the same folder as the model "
            f"({folder}).",
            "external_data_missing",
        )
    st = real.stat()
    if not real.is_file():
        raise ModelLoadError(
            f"External data location '{loc}' is not a regular file.", "external_data_outside"
        )
    if st.st_nlink != 1:
        raise ModelLoadError(
            f"External data file '{loc}' is a hard link ({st.st_nlink} names for one file): it "
            "may be a file from elsewhere on this machine, so EdgeStudio will not read it. Copy "
            "the file instead of linking it.",
            "external_data_link",
        )
    end = ref.offset + (ref.length or 0)
    if ref.offset < 0 or end > st.st_size:
        raise ModelLoadError(
            f"Tensor '{ref.tensor}' claims bytes {ref.offset}–{end} of '{loc}', but the file has "
            f"only {st.st_size} bytes: it is truncated or does not belong to this model.",
            "external_data_range",
        )
    return real


def check_external_data(model: onnx.ModelProto, model_dir: Path) -> list[ExternalDataFile]:
    """Apply the policy to every external tensor of ``model`` and describe the files it uses."""
    files: dict[str, list[ExternalRef]] = {}
    sizes: dict[str, int] = {}
    for tensor in iter_graph_tensors(model.graph):
        ref = external_refs(tensor)
        if ref is None:
            continue
        real = resolve_location(model_dir, ref)
        files.setdefault(ref.location, []).append(ref)
        sizes[ref.location] = real.stat().st_size
    return [
        ExternalDataFile(
            location=loc,
            size_bytes=sizes[loc],
            tensor_count=len(refs),
            referenced_bytes=sum(r.length or 0 for r in refs),
        )
        for loc, refs in sorted(files.items())
    ]
