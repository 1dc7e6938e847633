"""Finding an input specification the model really runs on (onnxruntime, in a worker).

One onnxruntime session is created and reused for every candidate (a session on a big graph
can take minutes); the winning spec is cached per model file hash and overrides, so later jobs
on the same model start at once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.grammar import InputOverrides
from edgestudio.core.inputs.input_derivation import derive_candidates, spec_from_sample
from edgestudio.core.inputs.input_failures import describe_failure
from edgestudio.core.inputs.input_spec import InputSpecError, InputSpecification
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import load_full_model
from edgestudio.core.model.model_io import is_structure_only
from edgestudio.core.model.sessions import cpu_session
from edgestudio.core.model.validate import short
from edgestudio.core.paths import cache_dir, file_hash, write_atomically
from edgestudio.core.progress import Reporter
from edgestudio.core.serialise import from_json, to_json

# Bumped whenever what a cached spec holds, or how specs are derived, changes (4: sizes the
# weights and strides fix, one-hot and constant ranges; 3: index
# inputs into computed tensors, covering indices, all-true bool masks).
CACHE_VERSION = 4


def _cache_path(model_hash: str, overrides: InputOverrides) -> Path:
    key = json.dumps([CACHE_VERSION, list(overrides.shapes), list(overrides.ranges)])
    tag = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "input_specs" / f"{model_hash[:32]}-{tag}.json"


def _read_cache(path: Path) -> InputSpecification | None:
    try:
        return from_json(InputSpecification, json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(path: Path, spec: InputSpecification) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(to_json(spec)))
    except OSError:
        pass  # a cache that cannot be written only costs time


PROTOBUF_LIMIT = 2_000_000_000  # a serialised model above this cannot be handed over as bytes


def session_source(model: onnx.ModelProto, path: Path) -> bytes | str:
    """What a session is made from: the model's bytes, or its path when it is too big to
    serialise (its external data has passed our policy check when the model was loaded), is
    the structure of a model whose data stayed in the file (:func:`structure_only`) or was
    parsed without its external data (which a session from bytes cannot find)."""
    if (
        is_structure_only(model)
        or model.ByteSize() >= PROTOBUF_LIMIT
        or any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    ):
        return str(path)
    data: bytes = model.SerializeToString()
    return data


def runs_on(session: Any, feeds: dict[str, np.ndarray]) -> str | None:
    """None when ``session`` runs on ``feeds``; otherwise why not, in one line."""
    try:
        session.run(None, feeds)
    except Exception as exc:  # onnxruntime raises its own exception classes
        return short(exc)
    return None


@dataclass
class ResolvedInputs:
    """The spec the model ran on, and a session on the model (made when first asked for: a
    cached spec needs none, and a session on a big graph can take minutes)."""

    spec: InputSpecification
    model: onnx.ModelProto
    path: Path
    from_cache: bool = False
    sample: dict[str, np.ndarray] | None = None  # the real sample, when data decided the spec
    _session: Any = None

    @property
    def session(self) -> Any:
        """A CPU onnxruntime session on the model (shared with the caller)."""
        if self._session is None:
            self._session = cpu_session(session_source(self.model, self.path), optimized=False)
        return self._session

    def feeds(self, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
        """The arrays to run on: the real sample, or the spec's seeded arrays."""
        if self.sample is not None:
            return self.sample
        return self.spec.with_batch(batch).feeds(seed)


def resolve_inputs(
    model_path: Path,
    model: onnx.ModelProto | None = None,
    overrides: InputOverrides | None = None,
    data: DataSource | None = None,
    reporter: Reporter | None = None,
    session: Any = None,
    use_cache: bool = True,
) -> ResolvedInputs:
    """The input specification of ``model_path`` that runs, found by trying candidates.

    ``data``: the first sample of real data decides shapes instead (and must run). The result
    is cached by the file's hash and the overrides. Raises InputSpecError saying which inputs
    to specify when nothing runs.
    """
    overrides = overrides or InputOverrides()
    if model is None:
        model = load_full_model(model_path)
    if data is not None:
        from edgestudio.core.inputs.calib_data import open_samples

        # audio and text are cut to the sizes given (--shape), else to the derived ones
        derived = next(derive_candidates(model, overrides), None)
        samples = open_samples(data, model, derived, model_path)
        sample = next(iter(samples), None)
        if sample is None:
            raise InputSpecError("The data holds no samples.")
        spec = spec_from_sample(model, sample, derived)
        resolved = ResolvedInputs(
            InputSpecification(spec.inputs, verified=True, note="shapes from your data"),
            model,
            model_path,
            sample=sample,
            _session=session,
        )
        error = runs_on(resolved.session, sample)
        if error:
            raise InputSpecError(
                f"The model does not run on the first sample of your data: {error}"
            )
        return resolved
    key = _cache_path(file_hash(model_path), overrides) if use_cache else None
    if key is not None:
        cached = _read_cache(key)  # keyed by the file's bytes: it ran on this very model
        if cached is not None and cached.verified:
            return ResolvedInputs(cached, model, model_path, from_cache=True, _session=session)
    if session is None:
        session = cpu_session(session_source(model, model_path), optimized=False)
    errors: list[str] = []
    tried: list[InputSpecification] = []
    for k, candidate in enumerate(derive_candidates(model, overrides)):
        tried.append(candidate)
        if reporter is not None:
            reporter.log(f"Trying inputs {_sizes_text(candidate)}")
            reporter.check_cancelled()
        error = runs_on(session, candidate.feeds())
        if error is None:
            note = (
                "derived from the graph"
                if k == 0
                else f"derived from the graph; candidate {k + 1} ran"
            )
            spec = replace(candidate, verified=True, note=note)
            if key is not None:
                _write_cache(key, spec)
            return ResolvedInputs(spec, model, model_path, _session=session)
        errors.append(error)
    solved = _solved_by_flatten(model, session, tried, reporter)
    if solved is not None:
        if key is not None:
            _write_cache(key, solved)
        return ResolvedInputs(solved, model, model_path, _session=session)
    raise InputSpecError(describe_failure(model, errors, tried))


def _solved_by_flatten(
    model: onnx.ModelProto,
    session: Any,
    tried: list[InputSpecification],
    reporter: Reporter | None,
) -> InputSpecification | None:
    """The first candidate again with a size solved from a fixed-width Reshape (a CNN that
    flattens into a dense layer runs on one width only), when that runs."""
    from edgestudio.core.inputs.flatten_widths import solve_flatten_widths

    if not tried:
        return None
    for solved in solve_flatten_widths(model, tried[0]):
        candidate = tried[0].scaled({solved.symbol: solved.size})
        candidate = replace(
            candidate,
            inputs=tuple(
                replace(e, reason=f"{e.reason}; {solved.reason}")
                if solved.symbol in e.declared
                else e
                for e in candidate.inputs
            ),
        )
        if reporter is not None:
            reporter.log(f"Trying inputs {_sizes_text(candidate)} ({solved.reason})")
        if runs_on(session, candidate.feeds()) is None:
            return replace(
                candidate, verified=True, note=f"derived from the graph; {solved.reason}"
            )
    return None


def _sizes_text(spec: InputSpecification) -> str:
    return ", ".join(f"{e.name} {e.shape_text()}" for e in spec.inputs) or "(no inputs)"


def job_inputs(
    model_path: Path,
    model: onnx.ModelProto,
    shapes: tuple[str, ...] = (),
    ranges: tuple[str, ...] = (),
    data: DataSource | None = None,
    reporter: Reporter | None = None,
    session: Any = None,
) -> ResolvedInputs:
    """:func:`resolve_inputs` from a recipe's input fields, logging what was chosen
    (``session``: one the caller already has on the model, to try the candidates on)."""
    resolved = resolve_inputs(
        model_path, model, InputOverrides(shapes, ranges), data, reporter, session=session
    )
    if reporter is not None:
        source = "cached" if resolved.from_cache else resolved.spec.note
        reporter.log(f"Inputs ({source}): " + "; ".join(resolved.spec.text_lines()))
    return resolved


def run_inputs(
    recipe: InputsRecipe, reporter: Reporter, staging: Path
) -> JobReport[InputSpecification]:
    """The ``inputs`` job: find and report the spec the model runs on."""
    reporter.stage("Reading the model", 0.0)

    model = load_full_model(Path(recipe.model))
    reporter.stage("Trying inputs until the model runs", 0.2)
    resolved = job_inputs(
        Path(recipe.model), model, recipe.shapes, recipe.ranges, recipe.data, reporter
    )
    reporter.stage("Done: the model runs on these inputs", 1.0)
    return JobReport(kind=recipe.kind, result=resolved.spec)
