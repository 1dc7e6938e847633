"""Writing an edited model whose weights stay on disk: each kept external tensor is copied from
the source's data file into the result's, one at a time (memory bounded by the largest tensor,
not the model). A 1 B-parameter decoder cut to its first layers is written in seconds."""

from __future__ import annotations

import os
from pathlib import Path

import onnx

from edgestudio.core.model.external_data import external_refs, resolve_location

COPY_CHUNK = 64 * 2**20  # bytes read and written at a time


def has_external_weights(model: onnx.ModelProto) -> bool:
    """True when some initializer of the main graph keeps its data in another file."""
    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def save_streamed(model: onnx.ModelProto, source_dir: Path, folder: Path, name: str) -> list[str]:
    """Write ``model`` (its external initializers pointing into ``source_dir``) as ``name`` in
    ``folder``, its external tensors copied into ``NAME.data``; returns the files written."""
    data_name = f"{name}.data"
    offset = 0
    with (folder / data_name).open("wb") as out:
        for tensor in model.graph.initializer:
            ref = external_refs(tensor)
            if ref is None:
                continue
            path = resolve_location(source_dir, ref)
            length = (
                ref.length if ref.length is not None else path.stat().st_size - (ref.offset or 0)
            )
            pad = (-offset) % 4096  # aligned, as onnx writes external data for memory mapping
            out.write(b"\0" * pad)
            offset += pad
            with path.open("rb") as src:
                src.seek(ref.offset or 0)
                left = length
                while left > 0:
                    chunk = src.read(min(COPY_CHUNK, left))
                    if not chunk:
                        raise OSError(f"{path.name} ends before tensor '{tensor.name}' does")
                    out.write(chunk)
                    left -= len(chunk)
            del tensor.external_data[:]
            for key, value in (
                ("location", data_name),
                ("offset", str(offset)),
                ("length", str(length)),
            ):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            offset += length
        out.flush()
        os.fsync(out.fileno())
    onnx.save(model, str(folder / name))
    return [name, data_name]
