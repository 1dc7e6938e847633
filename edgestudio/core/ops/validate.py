"""Checking a result against its original: onnx checker, an onnxruntime session, np.allclose."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.reports import CheckCase, EquivalenceCheck, OutputCheck

Feeds = dict[str, np.ndarray]
Runner = Callable[[Feeds], list[np.ndarray]]

_ORT_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16,
    "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16,
    "tensor(bool)": np.bool_,
}


def ort_session(path: str | Path) -> object:
    """Create a CPU onnxruntime session for ``path`` (telemetry already off in workers)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initializers are noise here
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def session_runner(session: object) -> Runner:
    """Return a function that runs ``session`` on feeds and returns every output."""

    def run(feeds: Feeds) -> list[np.ndarray]:
        return [np.asarray(o) for o in session.run(None, feeds)]  # type: ignore[attr-defined]

    return run


def make_feeds(session: object, sizes: dict[str, int], seed: int = 0) -> Feeds:
    """Seeded random inputs for ``session``; symbolic dims take their size from ``sizes``.

    Unnamed or unknown dims get 1. Floats are standard normal; integers are small non-negative
    values (safe as indices for most models); booleans are random.
    """
    rng = np.random.default_rng(seed)
    feeds: Feeds = {}
    for inp in session.get_inputs():  # type: ignore[attr-defined]
        shape = [d if isinstance(d, int) and d > 0 else sizes.get(str(d), 1) for d in inp.shape]
        dtype = _ORT_TYPES.get(inp.type)
        if dtype is None:
            raise ValueError(f"Input '{inp.name}' has type {inp.type}, which the check cannot "
                             "generate data for.")
        if np.issubdtype(dtype, np.floating):
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype is np.bool_:
            feeds[inp.name] = rng.random(shape) > 0.5
        else:
            feeds[inp.name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


def compare_outputs(names: Sequence[str], got: Sequence[np.ndarray], want: Sequence[np.ndarray],
                    atol: float, rtol: float) -> list[OutputCheck]:
    """Per-output max abs / max rel error and ``np.allclose`` of ``got`` against ``want``.

    The relative error is taken only over elements where ``|want| > atol``: near zero it
    says nothing and would swamp the figure.
    """
    checks = []
    for name, a, b in zip(names, got, want, strict=True):
        if a.shape != b.shape:
            checks.append(OutputCheck(name, float("inf"), float("inf"), False, list(a.shape)))
            continue
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            diff = np.abs(a64 - b64)
            diff = np.where(np.isnan(a64) & np.isnan(b64), 0.0, diff)
            max_abs = float(np.nanmax(diff, initial=0.0)) if not np.isnan(diff).all() else 0.0
            if np.isnan(diff).any():
                max_abs = float("nan")
            mask = np.abs(b64) > atol
            max_rel = float(np.max(diff[mask] / np.abs(b64[mask]), initial=0.0))
            ok = bool(np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True))
        else:
            same = np.array_equal(a, b)
            max_abs = max_rel = 0.0 if same else float("inf")
            ok = bool(same)
        checks.append(OutputCheck(name, max_abs, max_rel, ok, list(a.shape)))
    return checks


def check_against(
    path: Path,
    reference: Runner | None,
    size_sets: Sequence[dict[str, int]],
    atol: float,
    rtol: float,
    reference_accepts: Callable[[Feeds], bool] = lambda feeds: True,
) -> EquivalenceCheck:
    """Check the model at ``path``: checker, session, then outputs against ``reference``.

    ``size_sets`` lists the symbolic-dim sizes to test (e.g. ``[{"batch": 1}, {"batch": 3}]``).
    Where the reference cannot take the inputs (``reference_accepts`` is False, e.g. the
    original had a fixed size), the case checks only that the result runs and is finite.
    """
    check = EquivalenceCheck(atol=atol, rtol=rtol)
    try:
        onnx.checker.check_model(str(path), full_check=True)
        check.checker_ok = True
        check.checker_message = "valid"
    except Exception as exc:  # onnx raises several unrelated types here
        check.checker_message = f"{type(exc).__name__}: {exc}"
        return check
    try:
        session = ort_session(path)
        check.session_ok = True
        check.session_message = "loads"
    except Exception as exc:
        check.session_message = f"{type(exc).__name__}: {exc}"
        return check
    names = [o.name for o in session.get_outputs()]  # type: ignore[attr-defined]
    run = session_runner(session)
    for sizes in size_sets or [{}]:
        label = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "model inputs"
        case = CheckCase(label=label)
        check.cases.append(case)
        try:
            feeds = make_feeds(session, sizes)
            got = run(feeds)
        except Exception as exc:
            case.error = f"{type(exc).__name__}: {exc}"
            continue
        if reference is not None and reference_accepts(feeds):
            try:
                want = reference(feeds)
            except Exception as exc:
                case.error = f"the original failed on these inputs: {exc}"
                continue
            case.outputs = compare_outputs(names, got, want, atol, rtol)
        else:
            case.label += " (result runs; the original cannot take these inputs)"
            case.outputs = [
                OutputCheck(n, 0.0, 0.0, bool(np.isfinite(g).all()) if g.dtype.kind == "f"
                            else True, list(g.shape))
                for n, g in zip(names, got, strict=True)
            ]
    return check
