"""Running a result beside its original: an onnxruntime session, outputs compared with
np.allclose, onnxruntime's errors in a line (the whole check, on an input specification, is
:mod:`edgestudio.core.inputs.equivalence`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from edgestudio.core.job_api.report import OutputCheck

Feeds = dict[str, np.ndarray]
Runner = Callable[[Feeds], list[np.ndarray]]


def ort_session(path: str | Path) -> object:
    """Create a CPU onnxruntime session for ``path`` (telemetry already off in workers)."""
    import onnxruntime as ort

    from edgestudio.core.model.sessions import job_session_options

    # Level 3: warnings about unused initializers are noise here.
    return ort.InferenceSession(
        str(path), job_session_options(3), providers=["CPUExecutionProvider"]
    )


def session_runner(session: object) -> Runner:
    """Return a function that runs ``session`` on feeds and returns every output."""

    def run(feeds: Feeds) -> list[np.ndarray]:
        return [np.asarray(o) for o in session.run(None, feeds)]  # type: ignore[attr-defined]

    return run


def declared_dims(session: object) -> dict[str, list[object]]:
    """Each input's dims as onnxruntime reports them (ints, symbol names or None)."""
    return {i.name: list(i.shape) for i in session.get_inputs()}  # type: ignore[attr-defined]


def compare_outputs(
    names: Sequence[str],
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    atol: float,
    rtol: float,
) -> list[OutputCheck]:
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


def fits(array: np.ndarray, dims: Sequence[object]) -> bool:
    """True when ``array`` has the rank and every fixed dim of ``dims``."""
    return array.ndim == len(dims) and all(
        not isinstance(d, int) or d <= 0 or d == n for d, n in zip(dims, array.shape, strict=True)
    )


def short(exc: BaseException) -> str:
    """One line of an exception (onnxruntime's messages carry the whole call stack; their
    gist is kept, see :func:`ort_gist`)."""
    text = str(exc).strip()
    if "[ONNXRuntimeError]" in text:
        return ort_gist(text, 400)
    first = text.splitlines()[0] if text else type(exc).__name__
    return first if len(first) < 400 else first[:400] + "…"


_ORT_NODE = re.compile(r"while running (\w+) node\. Name:'([^']*)'")
# "/onnxruntime_src/.../reshape_helper.h:91 onnxruntime::ReshapeHelper::ReshapeHelper(...) "
_ORT_SOURCE = re.compile(r"^\S+\.(?:h|cc|cpp):\d+ (?:[\w:~<>]+\([^)]*\)(?: const)? )?")


def ort_gist(text: str, limit: int = 300) -> str:
    """Why onnxruntime failed, in a line: the node it was running and its status message (or
    type error), without error codes, source paths and C++ signatures —
    ``Reshape node 'r': The input tensor cannot be reshaped…``."""
    node = _ORT_NODE.search(text)
    for marker in ("Status Message: ", "Type Error: "):
        if marker in text:
            text = text.split(marker, 1)[1]
            break
    text = re.sub(r"Load model from \S+ failed:\s*", "", text).strip()
    text = " ".join(_ORT_SOURCE.sub("", text).split())
    if node:
        text = f"{node.group(1)} node '{node.group(2)}': {text}"
    return text if len(text) <= limit else text[:limit] + "…"
