"""Bounded mutation fuzzing of model reading: every mutant is opened or refused with a
classified error; nothing crashes and no other exception type escapes."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from edgestudio.core.errors import ModelLoadError
from edgestudio.core.model.summary import summarize_file
from tests import models

MUTANTS = 600


def _mutate(data: bytes, rng: np.random.Generator) -> bytes:
    buf = bytearray(data)
    kind = rng.integers(0, 4)
    if kind == 0:  # flip a few bytes
        for _ in range(int(rng.integers(1, 8))):
            buf[int(rng.integers(0, len(buf)))] = int(rng.integers(0, 256))
    elif kind == 1:  # truncate
        buf = buf[: int(rng.integers(1, len(buf)))]
    elif kind == 2:  # duplicate a slice
        a = int(rng.integers(0, len(buf)))
        b = min(len(buf), a + int(rng.integers(1, 64)))
        buf[a:a] = buf[a:b]
    else:  # insert random bytes
        at = int(rng.integers(0, len(buf)))
        buf[at:at] = rng.integers(0, 256, int(rng.integers(1, 32)), dtype=np.uint8).tobytes()
    return bytes(buf)


def test_mutants_open_or_fail_with_a_classified_error(tmp_path: Path) -> None:
    seed_bytes = models.save(models.conv_relu_gemm(), tmp_path / "seed.onnx").read_bytes()
    rng = np.random.default_rng(20261130)
    path = tmp_path / "mutant.onnx"
    outcomes: dict[str, int] = {}
    start = time.monotonic()
    for _ in range(MUTANTS):
        path.write_bytes(_mutate(seed_bytes, rng))
        try:
            summarize_file(path)
            outcomes["opened"] = outcomes.get("opened", 0) + 1
        except ModelLoadError as exc:
            assert str(exc), "every refusal says why"
            outcomes[exc.kind] = outcomes.get(exc.kind, 0) + 1
    assert sum(outcomes.values()) == MUTANTS
    assert time.monotonic() - start < 60
    assert outcomes.get("not_protobuf", 0) > 0 and outcomes.get("opened", 0) > 0
