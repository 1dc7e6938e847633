"""The analysis's float activations: kept in memory up to the budget, on disk beyond it, the same
values either way, gone once dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgestudio.core.quant.activation_store import ActivationStore


def test_spilled_samples_read_back_equal_and_leave_no_file(tmp_path: Path) -> None:
    store = ActivationStore(tmp_path, budget=1000)
    small = {"a": np.arange(10, dtype=np.float32)}  # 40 bytes: kept in memory
    big = {
        "x/y:0": np.linspace(0, 1, 1000, dtype=np.float32),
        "b": np.ones((3, 4)),
        "scalar": np.array(7, np.int64),
        "empty": np.zeros((0, 3), np.float16),
        "text": np.array(["edge", "studio"], dtype=object),
    }
    store.put(0, small)
    store.put(1, big)
    assert store.spilled_bytes == sum(v.nbytes for v in big.values())
    # one file for the sample (its tensors one after another), strings in one of their own
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1_4_text.npy", "sample_1.bin"]
    for sample, values in ((0, small), (1, big)):
        got = store.get(sample)
        assert set(got) == set(values)
        for name, value in values.items():
            np.testing.assert_array_equal(got[name], value)
            assert got[name].dtype == value.dtype and got[name].shape == value.shape
    store.drop(1)
    store.drop(0)
    assert not list(tmp_path.iterdir())
