"""The open model as a document: everything done to it, without Qt.

One :class:`ModelDocument` per open model holds its state — the inputs it is fed with, the nodes
kept in float, the quantization runs with their analyses, benchmark and profile results, the jobs
run on it, and which overlay colours its graph. It says what changed through psygnal signals
(Qt-like signals without Qt), so panels subscribe and render while the workflow
(:mod:`edgestudio.jobs.workflow`), the workspace file
(:mod:`edgestudio.core.workspace.workspace`) and the report
(:mod:`edgestudio.core.workspace.report`) work on the same object in tests and in the CLI.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psygnal import EmissionInfo, Signal

from edgestudio.core.inputs.grammar import InputOverrides
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.perf.perf_results import Latency, Profile
from edgestudio.core.quant.quant_runs import QuantRun


class OverlayKind(enum.Enum):
    """What colours the graph."""

    NONE = "none"
    SQNR = "sqnr"  # per-layer SQNR of one quantization run
    TIME = "time"  # each node's share of the profiled run time
    PROVIDER = "provider"  # the execution provider that ran each node


@dataclass(frozen=True)
class Overlay:
    """The graph's active overlay; ``run`` is the quantization run an SQNR overlay shows."""

    kind: OverlayKind = OverlayKind.NONE
    run: int | None = None



@dataclass
class JobRecord:
    """A finished job run on the document's model, as the report lists it."""

    title: str
    state: str
    command: str
    output: str | None = None
    error: str | None = None
    check: dict[str, Any] | None = None



class ModelDocument:
    """One open model and everything done to it this session (or restored from a workspace).

    Mutate it only through its methods: each emits the signal that tells the views.
    """

    inputs_changed = Signal(object)  # InputOverrides
    input_spec_changed = Signal(object)  # InputSpecification | None
    input_spec_failed = Signal(str)  # why no inputs were found that the model runs on
    excluded_changed = Signal(object)  # frozenset[str]
    run_added = Signal(object)  # QuantRun
    run_changed = Signal(object)  # QuantRun
    latency_changed = Signal(object)  # Latency
    profile_changed = Signal(object)  # Profile | None
    overlay_changed = Signal(object)  # Overlay
    job_recorded = Signal(object)  # JobRecord
    tune_recorded = Signal(object)  # a tune's summary (dict: goal, candidates, winner)
    extra_model_added = Signal(str)  # a model worth benchmarking beside this one (a run's output)
    tensor_shapes_changed = Signal(object)  # {tensor: (dtype, shape)} from shape inference
    tensor_shapes_failed = Signal(str)  # why shape inference gave nothing (declared shapes stay)
    restored = Signal()  # everything was replaced (a workspace was opened): render it all again

    def __init__(self, path: Path, summary: dict[str, Any] | None = None,
                 inputs: InputOverrides | None = None) -> None:
        self.path = Path(path).absolute()
        self.summary: dict[str, Any] = summary or {}
        self.inputs = inputs or InputOverrides()
        self.input_spec: InputSpecification | None = None
        self.excluded: frozenset[str] = frozenset()
        self.runs: list[QuantRun] = []
        self.latency = Latency()
        self.profile: Profile | None = None
        self.overlay = Overlay()
        self.jobs: list[JobRecord] = []
        self.extra_models: list[str] = []
        self.tunes: list[dict[str, Any]] = []  # auto-tune summaries (jobs.tuner.tuner_summary)
        # The file as opened (what every result describes): its SHA-256 and (size, mtime_ns),
        # taken by the loader off the UI thread; empty until then.
        self.model_hash = ""
        self.file_stamp: tuple[int, int] | None = None
        # Derived from the file again in every session (not saved in workspaces).
        self.tensor_shapes: dict[str, Any] = {}

    # ----- inputs ------------------------------------------------------------------------------
    def set_inputs(self, overrides: InputOverrides) -> None:
        """The user's shapes and values for the model's inputs (every job uses them)."""
        if overrides != self.inputs:
            self.inputs = overrides
            self.inputs_changed.emit(overrides)

    def set_input_spec(self, spec: InputSpecification | None) -> None:
        """The specification the model was last verified to run on."""
        self.input_spec = spec
        self.input_spec_changed.emit(spec)

    def fail_input_spec(self, message: str) -> None:
        """No inputs were found that the model runs on (``message`` says what to set)."""
        self.input_spec = None
        self.input_spec_failed.emit(message)

    def set_tensor_shapes(self, shapes: dict[str, Any]) -> None:
        """Every tensor's inferred ``(dtype, shape)``, for the graph's labels and properties."""
        self.tensor_shapes = shapes
        self.tensor_shapes_changed.emit(shapes)

    def fail_tensor_shapes(self, message: str) -> None:
        """Shape inference did not finish (``message`` says why); the declared shapes stay."""
        self.tensor_shapes_failed.emit(message)

    # ----- quantization --------------------------------------------------------------------------
    def set_excluded(self, nodes: set[str] | frozenset[str]) -> None:
        """Nodes to keep in float in the next quantization."""
        nodes = frozenset(nodes)
        if nodes != self.excluded:
            self.excluded = nodes
            self.excluded_changed.emit(nodes)

    def new_run(self, run: QuantRun) -> QuantRun:
        """Add a quantization run (numbered after the existing ones); from then on every change
        to one of its fields is announced as ``run_changed``."""
        run.number = len(self.runs) + 1
        self._follow(run)
        self.runs.append(run)
        self.run_added.emit(run)
        if run.output:
            self.add_extra_model(run.output)
        return run

    def _follow(self, run: QuantRun) -> None:
        def changed(_: EmissionInfo) -> None:
            if run.output:
                self.add_extra_model(run.output)  # a written run is offered for benchmarks
            self.run_changed.emit(run)

        run.events.all.connect(changed)

    def run(self, number: int) -> QuantRun | None:
        """The run numbered ``number``."""
        return next((r for r in self.runs if r.number == number), None)

    def add_extra_model(self, path: str) -> None:
        """Offer ``path`` (a quantized version) beside the model, e.g. for benchmarks."""
        if path not in self.extra_models:
            self.extra_models.append(path)
            self.extra_model_added.emit(path)

    # ----- performance ---------------------------------------------------------------------------
    def set_latency(self, results: Latency) -> None:
        """The last benchmark's results."""
        self.latency = results
        self.latency_changed.emit(results)

    def set_profile(self, profile: Profile | None) -> None:
        """The last per-op profile (placement and time per node)."""
        self.profile = profile
        self.profile_changed.emit(profile)

    # ----- overlay and history -----------------------------------------------------------------
    def set_overlay(self, overlay: Overlay) -> None:
        """Choose what colours the graph."""
        self.overlay = overlay
        self.overlay_changed.emit(overlay)

    def record_tune(self, summary: dict[str, Any]) -> None:
        """Keep an auto-tune's candidates and winner."""
        self.tunes.append(summary)
        self.tune_recorded.emit(summary)

    def record_job(self, record: JobRecord) -> None:
        """Keep a finished job for the report."""
        self.jobs.append(record)
        self.job_recorded.emit(record)

    def restore(self, saved: ModelDocument) -> None:
        """Take over everything ``saved`` (a workspace's document) holds, then say so once."""
        for name in ("inputs", "input_spec", "excluded", "runs", "latency", "profile", "overlay",
                     "jobs", "extra_models", "tunes"):
            setattr(self, name, getattr(saved, name))
        for run in self.runs:
            self._follow(run)
        if saved.summary and not self.summary:
            self.summary = saved.summary
        self.restored.emit()

    # ----- derived views -----------------------------------------------------------------------
    def overlay_note(self) -> str:
        """What the active overlay's numbers were measured on (shown under its legend)."""
        if self.overlay.kind is not OverlayKind.SQNR:
            return ""
        run = self.run(self.overlay.run or 0)
        return run.analysis.data_note() if run is not None and run.analysis is not None else ""

    def overlay_values(self) -> tuple[str, dict[str, float] | dict[str, str]] | None:
        """The active overlay as (title, {node: value}); None when nothing colours the graph."""
        kind = self.overlay.kind
        if kind is OverlayKind.SQNR:
            run = self.run(self.overlay.run or 0)
            if run is None or run.analysis is None:
                return None
            return f"SQNR (dB), run #{run.number}", run.analysis.sqnr_by_node()
        if kind is OverlayKind.TIME and self.profile:
            return "time share (%)", self.profile.time_share_by_node()
        if kind is OverlayKind.PROVIDER and self.profile:
            return "Execution provider", dict(self.profile.placement)
        return None
