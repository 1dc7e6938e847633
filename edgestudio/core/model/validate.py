"""Checking a result against its original: onnx checker, an onnxruntime session, np.allclose."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.job_api.report import CheckCase, EquivalenceCheck, OutputCheck

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


def feeds_for(
    spec: InputSpecification,
    declared: dict[str, list[object]],
    symbol_sizes: dict[str, int],
    seed: int = 0,
) -> Feeds:
    """Arrays from ``spec`` shaped for a model whose inputs are declared as ``declared``.

    Each axis takes the model's fixed size if it has one, else the size given for its symbol in
    ``symbol_sizes``, else the spec's size; values are drawn from the spec's domains with
    ``seed``, so equal shapes give equal arrays.
    """
    rng = np.random.default_rng(seed)
    sizes = {**dict(spec.sizes), **symbol_sizes}
    feeds: Feeds = {}
    for entry in spec.inputs:
        dims = declared.get(entry.name, list(entry.shape))
        spec_dims = list(entry.declared) or [None] * len(entry.shape)
        shape = []
        for axis, dim in enumerate(dims):
            if isinstance(dim, int) and dim > 0:
                shape.append(dim)
            elif isinstance(dim, str) and dim in symbol_sizes:
                shape.append(symbol_sizes[dim])
            elif axis < len(spec_dims) and str(spec_dims[axis]) in symbol_sizes:
                shape.append(symbol_sizes[str(spec_dims[axis])])
            else:
                shape.append(entry.shape[axis] if axis < len(entry.shape) else 1)
        feeds[entry.name] = replace(entry, shape=tuple(shape)).make(rng, sizes)
    return feeds


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


def check_against(
    path: Path,
    reference: Runner | None,
    spec: InputSpecification | None,
    atol: float,
    rtol: float,
    reference_dims: dict[str, list[object]] | None = None,
    second_sizes: dict[str, int] | None = None,
    unchecked_reason: str = "",
) -> EquivalenceCheck:
    """Check the model at ``path``: checker, session, then outputs against ``reference``.

    Inputs come from ``spec`` (the original's input specification), shaped for the result; a
    second case resizes the symbols in ``second_sizes`` (a batch of 3, a dim made dynamic).
    Three outcomes per case: compared (within tolerance or not), failed (the result does not
    run where the original does, or where its own dynamic dims promise it should), or could not
    check (neither model runs on those inputs, or the original cannot take them). Without a
    spec (``unchecked_reason`` says why) only the checker and the session are tried.
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
    if spec is None:
        check.note = unchecked_reason or "no input specification"
        return check
    names = [o.name for o in session.get_outputs()]  # type: ignore[attr-defined]
    run = session_runner(session)
    result_dims = declared_dims(session)
    cases: list[tuple[str, dict[str, int]]] = [("as specified", {})]
    if second_sizes:
        cases.append((", ".join(f"{k}={v}" for k, v in sorted(second_sizes.items())), second_sizes))
    for label, sizes in cases:
        feeds = feeds_for(spec, result_dims, sizes)
        shapes = ", ".join(
            f"{k} {'x'.join(map(str, v.shape)) or 'scalar'}" for k, v in feeds.items()
        )
        case = CheckCase(label=f"{label} ({shapes})" if shapes else label)
        check.cases.append(case)
        accepts = reference is not None and (
            reference_dims is None
            or all(n in feeds and fits(feeds[n], d) for n, d in reference_dims.items())
        )
        want = None
        if accepts:
            assert reference is not None
            try:
                want = reference(feeds)
            except Exception as exc:
                case.skipped = f"the original does not run on these inputs: {short(exc)}"
        try:
            got = run(feeds)
        except Exception as exc:
            if case.skipped is None:
                case.error = f"the result does not run on these inputs: {short(exc)}"
            continue
        if want is not None:
            case.outputs = compare_outputs(names, got, want, atol, rtol)
        elif case.skipped is None:
            case.skipped = "the result runs, but the original cannot take these inputs"
    return check


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
