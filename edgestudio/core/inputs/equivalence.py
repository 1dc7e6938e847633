"""Checking a result against its original on the original's inputs: onnx checker, an
onnxruntime session, each output with np.allclose — as specified, and at a second size."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.job_api.report import CheckCase, EquivalenceCheck
from edgestudio.core.model.validate import (
    Feeds,
    Runner,
    compare_outputs,
    declared_dims,
    fits,
    ort_session,
    session_runner,
    short,
)


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
