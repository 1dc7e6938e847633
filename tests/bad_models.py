"""The hostile-model corpus, built in code, shared by the core, CLI and GUI tests.

Each case is either *refused* (a :class:`ModelLoadError` of a given kind, the CLI exits 2, the GUI
shows an error dialog) or *flagged* (the model opens but its summary lists a problem, the CLI
exits 1 after the summary, the GUI opens it with a warning dialog). ``words`` must appear in the
message either way.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tests import models


@dataclass(frozen=True)
class BadCase:
    """One hostile file: how to build it and what the user must be told."""

    build: Callable[[Path], Path]
    words: str
    kind: str | None  # the ModelLoadError kind, or None when the model opens with a problem

    @property
    def refused(self) -> bool:
        """True when the file must not open at all."""
        return self.kind is not None


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _truncated(tmp: Path) -> Path:
    good = models.save(models.conv_relu_gemm(), tmp / "good.onnx")
    return _write(tmp / "truncated.onnx", good.read_bytes()[:2500])


def _pytorch_zip(tmp: Path) -> Path:
    path = tmp / "model.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    return path


def _tensor(tmp: Path) -> Path:
    tensor = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "x")
    return _write(tmp / "input_0.pb", tensor.SerializeToString())


def _no_graph(tmp: Path) -> Path:
    return _write(
        tmp / "nograph.onnx", onnx.ModelProto(ir_version=8, producer_name="x").SerializeToString()
    )


def _non_utf8_name(tmp: Path) -> Path:
    model = models.conv_relu_gemm()
    model.graph.node[1].name = "QQQQ"
    data = model.SerializeToString().replace(b"QQQQ", b"\xff\xfe\xfd\xfc")
    return _write(tmp / "latin.onnx", data)


def _point_external_at(path: Path, location: str) -> None:
    model = onnx.load(str(path), load_external_data=False)
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    onnx.save(model, str(path))


def _external_in_subfolder(tmp: Path) -> Path:
    sub = tmp / "model"
    sub.mkdir()
    return models.external_weights(sub)


def _external_parent(tmp: Path) -> Path:
    path = _external_in_subfolder(tmp)
    os.replace(path.parent / "weights.bin", tmp / "weights.bin")
    _point_external_at(path, "../weights.bin")
    return path


def _external_absolute(tmp: Path) -> Path:
    path = models.external_weights(tmp)
    _point_external_at(path, str(tmp / "weights.bin"))
    return path


def _external_symlink(tmp: Path) -> Path:
    path = _external_in_subfolder(tmp)
    os.replace(path.parent / "weights.bin", tmp / "real.bin")
    (path.parent / "weights.bin").symlink_to(tmp / "real.bin")
    return path


def _external_hard_link(tmp: Path) -> Path:
    path = _external_in_subfolder(tmp)
    os.link(path.parent / "weights.bin", tmp / "elsewhere.bin")
    return path


def _external_range(tmp: Path) -> Path:
    path = models.external_weights(tmp)
    data = (tmp / "weights.bin").read_bytes()
    (tmp / "weights.bin").write_bytes(data[: len(data) // 2])
    return path


def _external_missing(tmp: Path) -> Path:
    path = models.external_weights(tmp)
    (tmp / "weights.bin").unlink()
    return path


def _over_2gib(tmp: Path) -> Path:
    path = tmp / "huge.onnx"
    with open(path, "wb") as f:  # sparse: no disk space used
        f.truncate(2**31 + 10)
    return path


def _dangling_input(tmp: Path) -> Path:
    model = models.relu_only()
    model.graph.node.add().CopyFrom(helper.make_node("Add", ["y", "ghost"], ["z"], name="adder"))
    return models.save(model, tmp / "dangling.onnx")


def _cycle(tmp: Path) -> Path:
    model = models.relu_only()
    del model.graph.node[:]
    model.graph.node.extend(
        [
            helper.make_node("Add", ["x", "b"], ["a"], name="first"),
            helper.make_node("Relu", ["a"], ["b"], name="second"),
            helper.make_node("Identity", ["a"], ["y"], name="out"),
        ]
    )
    return models.save(model, tmp / "cycle.onnx")


CASES: dict[str, BadCase] = {
    "empty": BadCase(lambda t: _write(t / "empty.onnx", b""), "empty (0 bytes)", "empty"),
    "random": BadCase(
        lambda t: _write(
            t / "random.onnx", np.random.default_rng(1).integers(0, 256, 4096, np.uint8).tobytes()
        ),
        "corrupt or truncated",
        "not_protobuf",
    ),
    "truncated": BadCase(_truncated, "corrupt or truncated", "not_protobuf"),
    "text": BadCase(
        lambda t: _write(t / "notes.onnx", b"just some notes\nabout a model\n"),
        "text file",
        "foreign_format",
    ),
    "pytorch_zip": BadCase(_pytorch_zip, "PyTorch", "foreign_format"),
    "tensor": BadCase(_tensor, "holds an ONNX tensor", "not_a_model"),
    "no_graph": BadCase(_no_graph, "holds no graph", "not_a_model"),
    "non_utf8_name": BadCase(_non_utf8_name, "not valid UTF-8", "bad_text"),
    "missing_file": BadCase(lambda t: t / "nope.onnx", "does not exist", "missing"),
    "external_parent": BadCase(
        _external_parent, "outside the model's folder", "external_data_outside"
    ),
    "external_absolute": BadCase(_external_absolute, "absolute path", "external_data_outside"),
    "external_symlink": BadCase(_external_symlink, "symbolic link", "external_data_link"),
    "external_hard_link": BadCase(_external_hard_link, "hard link", "external_data_link"),
    "external_range": BadCase(_external_range, "truncated", "external_data_range"),
    "external_missing": BadCase(_external_missing, "is missing", "external_data_missing"),
    "over_2gib": BadCase(_over_2gib, "2 GiB", "too_large"),
    "dangling_input": BadCase(_dangling_input, "'adder' reads 'ghost'", None),
    "cycle": BadCase(_cycle, "cycle", None),
    "opset_99": BadCase(
        lambda t: models.save(models.relu_only(opset=99), t / "future.onnx"), "opset 99", None
    ),
    "unknown_domain": BadCase(
        lambda t: models.save(models.relu_only(domain="com.example.secret"), t / "custom.onnx"),
        "com.example.secret",
        None,
    ),
}
