"""Reading a whole model (weights included, through our external-data policy) and writing one,
for the jobs that run models: convert, quantize, analyze, bench, profile, export, inputs."""

from __future__ import annotations

from pathlib import Path

import onnx

from edgestudio.core.model.external_data import check_external_data
from edgestudio.core.model.model_io import load_model

INLINE_LIMIT = 1_800_000_000  # above this a written model keeps its weights in external data


def load_full_model(path: Path) -> onnx.ModelProto:
    """Parse ``path`` and load its external weights after our policy has approved every file."""
    return read_full_model(path)[0]


def load_structure(path: Path) -> onnx.ModelProto:
    """Parse ``path`` with its external data approved by our policy but left on disk: the graph
    and inline tensors only (a job reads each external weight when it needs it)."""
    model = load_model(path)
    check_external_data(model, path.parent)
    return model


def read_full_model(path: Path) -> tuple[onnx.ModelProto, bool]:
    """:func:`load_full_model`, also saying whether the weights came from external files."""
    model = load_model(path)
    external = bool(check_external_data(model, path.parent))
    onnx.external_data_helper.load_external_data_for_model(model, str(path.parent))
    return model, external


def save_model(model: onnx.ModelProto, folder: Path, name: str) -> list[str]:
    """Save into ``folder``; returns the file names written (the model first)."""
    if model.ByteSize() < INLINE_LIMIT:
        onnx.save(model, str(folder / name))
        return [name]
    data_name = f"{name}.data"
    onnx.save(
        model,
        str(folder / name),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=data_name,
    )
    return [name, data_name]


def nested_graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """Every graph nested in ``graph``'s nodes (Loop and Scan bodies, If branches), the
    deepest included."""
    found = []
    for node in graph.node:
        for attribute in node.attribute:
            for sub in (*([attribute.g] if attribute.HasField("g") else []), *attribute.graphs):
                found += [sub, *nested_graphs(sub)]
    return found
