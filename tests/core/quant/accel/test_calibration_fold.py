"""The running minimum and maximum folded over calibration samples are exactly what folding
each output on its own gives (np.fmin/np.fmax per output, ORT's NaN-ignoring semantics), also
where outputs cannot be joined: mixed dtypes, sizes that change between samples."""

from __future__ import annotations

import numpy as np
import pytest

from edgestudio.core.quant.accel.calibration import _Fold

NAMES = ["y", "a_ReduceMin", "a_ReduceMax", "b_ReduceMin", "b_ReduceMax"]


def _sample(
    rng: np.random.Generator,
    sizes: tuple[int, int] = (1, 3),
    dtypes: tuple[str, str] = ("float32", "float32"),
) -> list[np.ndarray]:
    a = rng.standard_normal((1, sizes[0])).astype(dtypes[0])
    b = rng.standard_normal((1, sizes[1], 1)).astype(dtypes[1])
    b.flat[0] = np.nan  # NaN is ignored against a number, kept against NaN
    a.flat[-1] = -0.0 if rng.random() < 0.5 else 0.0
    return [rng.standard_normal((2, 2)).astype("float32"), a, a + 1, b, b + 1]


def _one_by_one(samples: list[list[np.ndarray]]) -> list[np.ndarray]:
    folded = [np.reshape(v, -1).copy() for v in samples[0]]
    for values in samples[1:]:
        for k in range(1, 5):
            fold = np.fmin if NAMES[k].endswith("Min") else np.fmax
            folded[k] = fold(folded[k], np.reshape(values[k], -1))
    return folded[1:]


@pytest.mark.parametrize("case", ["joined", "mixed_dtypes", "size_changes"])
def test_fold_equals_folding_each_output(case: str) -> None:
    rng = np.random.default_rng(3)
    if case == "joined":
        samples = [_sample(rng) for _ in range(6)]
    elif case == "mixed_dtypes":
        samples = [_sample(rng, dtypes=("float32", "float16")) for _ in range(6)]
    else:  # joined for three samples, then one output's size changes (it broadcasts)
        samples = [_sample(rng) for _ in range(3)] + [_sample(rng, sizes=(1, 1)) for _ in range(3)]
    fold = _Fold(
        NAMES, minima={"a_ReduceMin", "b_ReduceMin"}, maxima={"a_ReduceMax", "b_ReduceMax"}
    )
    for values in samples:
        fold.add(values)
    got = fold.result()
    assert got is not None and got[0] is None  # the model output is not folded
    for mine, want in zip(got[1:], _one_by_one(samples), strict=True):
        assert mine.dtype == want.dtype and mine.shape == want.shape
        assert mine.tobytes() == want.tobytes()  # bit for bit: NaN and the sign of zero


def test_no_sample_folds_nothing() -> None:
    assert _Fold(NAMES, minima=set(), maxima=set()).result() is None
