"""A model's hash, the key of every cache: read once per file version, never stale."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from edgestudio.core import paths


def test_a_file_is_read_once_per_version_and_a_change_is_seen(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"first")
    paths._hash_of.cache_clear()
    assert paths.file_hash(model) == hashlib.sha256(b"first").hexdigest()
    assert paths.file_hash(tmp_path / "." / "m.onnx") == hashlib.sha256(b"first").hexdigest()
    assert (
        paths._hash_of.cache_info().misses == 1
    )  # the second ask, by another spelling, read nothing
    model.write_bytes(b"second, longer")
    assert paths.file_hash(model) == hashlib.sha256(b"second, longer").hexdigest()
    stat = model.stat()
    model.write_bytes(b"third, longerr")  # same size: the new modification time tells
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert paths.file_hash(model) == hashlib.sha256(b"third, longerr").hexdigest()
