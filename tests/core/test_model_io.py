"""Every kind of bad file gets its own classified, user-worded error."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from edgestudio.core.errors import ModelLoadError
from edgestudio.core.model_io import load_model
from edgestudio.core.summary import summarize_file
from tests import models


def _expect(path: Path, kind: str, words: str) -> ModelLoadError:
    with pytest.raises(ModelLoadError) as info:
        summarize_file(path)
    assert info.value.kind == kind
    assert words in str(info.value)
    return info.value


def test_valid_model_loads(conv_model: Path) -> None:
    model = load_model(conv_model)
    assert len(model.graph.node) == 4


def test_missing_file(tmp_path: Path) -> None:
    _expect(tmp_path / "nope.onnx", "missing", "does not exist")


def test_folder(tmp_path: Path) -> None:
    _expect(tmp_path, "not_a_file", "is a folder")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    _expect(path, "empty", "empty (0 bytes)")


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "random.onnx"
    path.write_bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    _expect(path, "not_protobuf", "corrupt or truncated")


def test_truncated_model(tmp_path: Path, conv_model: Path) -> None:
    path = tmp_path / "truncated.onnx"
    path.write_bytes(conv_model.read_bytes()[:3000])
    _expect(path, "not_protobuf", "corrupt or truncated")


def test_text_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("just some notes\nabout a model\n")
    _expect(path, "foreign_format", "text file")


def test_zip_archive_names_pytorch(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    _expect(path, "foreign_format", "PyTorch")


def test_tensor_file_is_not_a_model(tmp_path: Path) -> None:
    path = tmp_path / "input_0.pb"
    tensor = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "x")
    path.write_bytes(tensor.SerializeToString())
    with pytest.raises(ModelLoadError) as info:
        load_model(path)
    assert info.value.kind in ("not_a_model", "not_protobuf")


def test_protobuf_without_graph(tmp_path: Path) -> None:
    path = tmp_path / "nograph.onnx"
    path.write_bytes(onnx.ModelProto(ir_version=8, producer_name="x").SerializeToString())
    _expect(path, "not_a_model", "holds no graph")


def test_missing_external_data(tmp_path: Path) -> None:
    path = models.external_weights(tmp_path)
    (tmp_path / "weights.bin").unlink()
    err = _expect(path, "external_data_missing", "weights.bin")
    assert "is missing" in str(err)


def _point_external_at(path: Path, location: str) -> None:
    model = onnx.load(str(path), load_external_data=False)
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    onnx.save(model, str(path))


def test_external_data_escaping_the_folder(tmp_path: Path) -> None:
    sub = tmp_path / "model"
    sub.mkdir()
    path = models.external_weights(sub)
    os.replace(sub / "weights.bin", tmp_path / "weights.bin")
    _point_external_at(path, "../weights.bin")
    _expect(path, "external_data_outside", "outside the model's folder")


def test_external_data_absolute_path(tmp_path: Path) -> None:
    path = models.external_weights(tmp_path)
    _point_external_at(path, str(tmp_path / "weights.bin"))
    _expect(path, "external_data_outside", "absolute path")


def test_external_data_symlink(tmp_path: Path) -> None:
    sub = tmp_path / "model"
    sub.mkdir()
    path = models.external_weights(sub)
    os.replace(sub / "weights.bin", tmp_path / "real.bin")
    (sub / "weights.bin").symlink_to(tmp_path / "real.bin")
    _expect(path, "external_data_link", "symbolic link")


def test_external_data_hard_link(tmp_path: Path) -> None:
    sub = tmp_path / "model"
    sub.mkdir()
    path = models.external_weights(sub)
    os.link(sub / "weights.bin", tmp_path / "elsewhere.bin")
    _expect(path, "external_data_link", "hard link")


def test_external_data_range_beyond_file(tmp_path: Path) -> None:
    path = models.external_weights(tmp_path)
    data = (tmp_path / "weights.bin").read_bytes()
    (tmp_path / "weights.bin").write_bytes(data[: len(data) // 2])
    _expect(path, "external_data_range", "truncated")


def test_over_2gib_file_is_refused_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as f:  # sparse: no disk space used
        f.truncate(2**31 + 10)
    _expect(path, "too_large", "2 GiB")
