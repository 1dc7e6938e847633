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

import dataclasses
import enum
import operator
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from psygnal import EmissionInfo, Signal, SignalGroupDescriptor

from edgestudio.core.inputs.grammar import InputOverrides
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.model.cost_recipe import ModelCost
from edgestudio.core.perf.perf_results import Latency, Profile
from edgestudio.core.quant.quant_runs import QuantRun
from edgestudio.core.quant.sensitivity import Sensitivity
from edgestudio.core.targets.target_recipe import (
    TargetCheck,
    TargetCompile,
    placement_categories,
)


class OverlayKind(enum.Enum):
    """What colours the graph."""

    NONE = "none"
    SQNR = "sqnr"  # per-layer SQNR of one quantization run
    TIME = "time"  # each node's share of the profiled run time
    PROVIDER = "provider"  # the execution provider that ran each node
    SENSITIVITY = "sensitivity"  # what keeping each layer alone in 16-bit gives back
    TARGET = "target"  # where each node runs on the target: its accelerator or the CPU
    MACS = "macs"  # each node's multiply-accumulates at the input specification
    MEMORY = "memory"  # each node's output bytes (activation memory)


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


# Fields whose every assignment is news (a new benchmark, a re-found specification, a chosen
# overlay), even when equal to the last; the others are announced only when they change.
ALWAYS_ANNOUNCED = ("input_spec", "latency", "profile", "overlay", "tensor_shapes")


# A document field so marked is not written to workspaces; every other one is, under its name.
UNSAVED = {"saved": False}


@dataclass(eq=False)
class ModelDocument:
    """One open model and everything done to it this session (or restored from a workspace).

    Evented (psygnal): assigning a field emits ``document.events.<field>`` with the new value,
    so the views hear of every change without a setter to remember; what is not a field's value
    — a failure, a run added, a job recorded, a workspace restored — has a signal of its own.
    """

    events: ClassVar[SignalGroupDescriptor] = SignalGroupDescriptor(
        equality_operators=dict.fromkeys(ALWAYS_ANNOUNCED, operator.is_)
    )

    input_spec_failed: ClassVar[Signal] = Signal(str)  # why no inputs were found that it runs on
    run_added: ClassVar[Signal] = Signal(object)  # QuantRun
    run_changed: ClassVar[Signal] = Signal(object)  # QuantRun (any field of it)
    job_recorded: ClassVar[Signal] = Signal(object)  # JobRecord
    tune_recorded: ClassVar[Signal] = Signal(object)  # a tune's summary (goal, candidates, winner)
    extra_model_added: ClassVar[Signal] = Signal(str)  # a model to benchmark beside this one
    tensor_shapes_failed: ClassVar[Signal] = Signal(str)  # why shape inference gave nothing
    cost_failed: ClassVar[Signal] = Signal(str)  # why counting MACs and memory did not finish
    restored: ClassVar[Signal] = Signal()  # everything was replaced (a workspace was opened)

    path: Path
    summary: dict[str, Any] = field(default_factory=dict)
    inputs: InputOverrides = field(default_factory=InputOverrides)  # the user's overrides
    input_spec: InputSpecification | None = None  # what the model was last verified to run on
    excluded: frozenset[str] = frozenset()  # nodes kept in float by the next quantization
    runs: list[QuantRun] = field(default_factory=list)
    latency: Latency = field(default_factory=Latency)  # the last benchmark
    profile: Profile | None = None  # the last per-op profile
    overlay: Overlay = field(default_factory=Overlay)  # what colours the graph
    jobs: list[JobRecord] = field(default_factory=list)
    extra_models: list[str] = field(default_factory=list)
    tunes: list[dict[str, Any]] = field(default_factory=list)  # jobs.tuner.tuner_summary
    sensitivity: Sensitivity | None = None  # the last ranking of layers by the task
    target: TargetCheck | None = None  # the last check of where the nodes run on a target
    compiled: TargetCompile | None = None  # the last binary compiled for a target
    cost: ModelCost | None = None  # every node's MACs and memory at the last counted inputs
    # The file as opened (what every result describes): its SHA-256 and (size, mtime_ns),
    # taken by the loader off the UI thread; empty until then. A workspace keeps them with the
    # model's path, not as fields.
    model_hash: str = field(default="", metadata=UNSAVED)
    file_stamp: tuple[int, int] | None = field(default=None, metadata=UNSAVED)
    # Derived from the file again in every session.
    tensor_shapes: dict[str, Any] = field(default_factory=dict, metadata=UNSAVED)

    def __post_init__(self) -> None:
        self.path = Path(self.path).absolute()
        self.summary = self.summary or {}
        self.inputs = self.inputs or InputOverrides()

    # ----- inputs ------------------------------------------------------------------------------
    def fail_input_spec(self, message: str) -> None:
        """No inputs were found that the model runs on (``message`` says what to set)."""
        self.input_spec = None
        self.input_spec_failed.emit(message)

    def fail_tensor_shapes(self, message: str) -> None:
        """Shape inference did not finish (``message`` says why); the declared shapes stay."""
        self.tensor_shapes_failed.emit(message)

    # ----- quantization --------------------------------------------------------------------------
    def exclude(self, nodes: set[str] | frozenset[str]) -> None:
        """Keep exactly ``nodes`` in float in the next quantization."""
        self.excluded = frozenset(nodes)

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

    # ----- overlay and history -----------------------------------------------------------------
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
        with self.events.blocked():  # one announcement for the lot: restored
            for name in (
                "inputs",
                "input_spec",
                "excluded",
                "runs",
                "latency",
                "profile",
                "overlay",
                "jobs",
                "extra_models",
                "tunes",
                "sensitivity",
                "cost",
                "target",
                "compiled",
            ):
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
        if kind is OverlayKind.MACS and self.cost:
            return (
                f"MACs (millions) at {self.cost.inputs_text()}",
                {n.node: n.macs / 1e6 for n in self.cost.nodes if n.macs},
            )
        if kind is OverlayKind.MEMORY and self.cost:
            return (
                f"output memory (KiB) at {self.cost.inputs_text()}",
                {n.node: n.output_bytes / 1024 for n in self.cost.nodes if n.output_bytes},
            )
        if kind is OverlayKind.TARGET and self.target:
            check = self.target
            return (
                f"Placement on {check.target} v{check.htp_arch} (emulated"
                + (", dims fixed)" if check.after is not None else ")"),
                placement_categories(check.final),
            )
        if kind is OverlayKind.SENSITIVITY and self.sensitivity:
            s = self.sensitivity
            return (
                f"{s.metric} given back, each layer alone in {s.way}",
                {r.node: r.gain for r in s.layers if r.gain is not None},
            )
        return None


def saved_fields() -> list[tuple[str, Any]]:
    """The document's fields a workspace keeps, with their types (every field but the model's
    path, which the workspace writes with its hash, and those marked :data:`UNSAVED`)."""
    hints = typing.get_type_hints(ModelDocument)
    return [
        (f.name, hints[f.name])
        for f in dataclasses.fields(ModelDocument)
        if f.name != "path" and f.metadata.get("saved", True)
    ]
