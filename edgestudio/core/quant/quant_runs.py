"""Quantization runs as the workbench keeps them: the recipe, its result and its analysis, and
the headline figures used to compare two runs side by side."""

from __future__ import annotations

import csv
import enum
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from psygnal import SignalGroupDescriptor

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.paths import atomic_target
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, LayerError, Quantization
from edgestudio.core.serialise import register_format, to_json


class RunState(enum.Enum):
    """Where a quantization run is: quantize, then (with evaluation data) analyse."""

    QUANTIZING = "quantizing"
    QUANTIZED = "quantized"  # done; no analysis was asked for
    ANALYSING = "analysing"
    ANALYSED = "analysed"
    FAILED = "failed"  # the quantization did not produce a usable model
    ANALYSIS_FAILED = "analysis failed"  # the model was written, its analysis did not finish

    @property
    def is_final(self) -> bool:
        """True once nothing more will happen to the run."""
        return self not in (RunState.QUANTIZING, RunState.ANALYSING)


@dataclass
class QuantRun:
    """One quantization run of a document (numbered in the order they were started).

    Evented: assigning any field emits ``run.events.<field>`` (psygnal), which the document
    relays as ``run_changed``, so a change cannot be made without the panels hearing of it.
    """

    events: ClassVar[SignalGroupDescriptor] = SignalGroupDescriptor()

    number: int
    recipe: QuantRecipe
    output: str | None = None
    quantization: Quantization | None = None
    analysis: Analysis | None = None
    state: RunState = RunState.QUANTIZING
    error: str | None = None
    # what its analysis ran on, and by which task metric: a re-quantization analyses the same way
    analyze_on: DataSource | None = None
    metric: str = "auto"

    @contextmanager
    def changing(self) -> Iterator[QuantRun]:
        """Change several fields as one step: they are announced once, after the last (a state
        is never seen without the error or the analysis that came with it)."""
        # (psygnal's paused() does not hold back the group's relay, so: silence it, then say
        # it once through the state's signal)
        try:
            with self.events.all.blocked():
                yield self
        finally:
            self.events.state.emit(self.state, self.state)

    def with_more_excluded(self, nodes: set[str] | frozenset[str]) -> QuantRecipe:
        """This run's recipe keeping ``nodes`` in float too, written beside its output under
        the first free name (``model_qdq_2.onnx``, ...): nothing earlier is overwritten."""
        return replace(
            self.recipe,
            exclude=tuple(sorted(set(self.recipe.exclude) | set(nodes))),
            output=self._next_output(),
        )

    def with_more_int16(self, nodes: set[str] | frozenset[str]) -> QuantRecipe:
        """This run's recipe (QDQ) keeping ``nodes`` in 16-bit too, under the next free name."""
        return replace(
            self.recipe,
            mode="qdq",
            int16=tuple(sorted(set(self.recipe.int16) | set(nodes))),
            output=self._next_output(),
        )

    def _next_output(self) -> str:
        output = Path(self.output or self.recipe.output or self.recipe.model)
        stem = (
            output.stem.rsplit("_", 1)[0]
            if output.stem.rsplit("_", 1)[-1].isdigit()
            else output.stem
        )
        k = 2
        while (candidate := output.with_name(f"{stem}_{k}{output.suffix}")).exists():
            k += 1
        return str(candidate)

    def layers_worst_first(self) -> list[LayerError]:
        """Analysed layers, lowest SQNR first (n/a last)."""
        return self.analysis.layers_worst_first() if self.analysis else []

    def summary(self) -> RunSummary:
        """Headline figures (None where unknown) for the history table and comparisons."""
        analysis = self.analysis
        layers = analysis.layers if analysis else []
        sqnrs = [r.sqnr_db for r in layers if r.sqnr_db is not None]
        outputs = analysis.outputs if analysis else []
        accuracy = analysis.accuracy if analysis else None
        worst = self.layers_worst_first()[:1]
        return RunSummary(
            run=self.number,
            mode=self.recipe.title().removeprefix("Quantize: "),
            state=self.state.value,
            size_bytes=self.quantization.quant_bytes if self.quantization else None,
            float_bytes=self.quantization.float_bytes if self.quantization else None,
            excluded=len(self.recipe.exclude),
            output_sqnr_db=outputs[0].sqnr_db if outputs else None,
            worst_layer=worst[0].node if worst else None,
            # None when the worst layer's values went inf/NaN (worst_layer_non_finite says so)
            worst_layer_sqnr_db=min(sqnrs)
            if sqnrs and not (worst and worst[0].non_finite)
            else None,
            median_layer_sqnr_db=statistics.median(sqnrs) if sqnrs else None,
            float_top1=accuracy.float_top1 if accuracy else None,
            quant_top1=accuracy.quant_top1 if accuracy else None,
            top1_agreement=accuracy.top1_agreement if accuracy else _task_agreement(analysis),
            verdict=(analysis.verdict.level or "pipeline check")
            if analysis and analysis.verdict
            else None,
            calibration=(self.quantization.calibration or None) if self.quantization else None,
            precision=(
                self.quantization.precision.text()
                if self.quantization and self.quantization.precision
                else None
            ),
            output_non_finite=outputs[0].non_finite if outputs else 0,
            worst_layer_non_finite=worst[0].non_finite if worst else 0,
        )


def _finished(data: dict[str, Any]) -> dict[str, Any]:
    """A run saved while it was unfinished is read back as failed: nothing will finish it."""
    state = RunState(data.get("state", RunState.FAILED.value))
    if state.is_final:
        return data
    failed = RunState.FAILED if state is RunState.QUANTIZING else RunState.ANALYSIS_FAILED
    return {**data, "state": failed.value, "error": "interrupted: the window was closed"}


register_format(QuantRun, read=_finished)


def _task_agreement(analysis: Analysis | None) -> float | None:
    """The task's own deciding agreement figure where it has no class top-1 (a language
    model's next token, the text a recogniser reads, the boxes or regions a detector finds)."""
    task = analysis.task if analysis else None
    figures = (
        [f for f in task.figures if f.deciding and f.key.endswith(("agreement", "f1"))]
        if task
        else []
    )
    return figures[0].value if figures else None


@dataclass(frozen=True)
class RunSummary:
    """A run's headline figures (None where unknown)."""

    run: int
    mode: str
    state: str
    size_bytes: int | None
    float_bytes: int | None
    excluded: int
    output_sqnr_db: float | None
    worst_layer: str | None
    worst_layer_sqnr_db: float | None
    median_layer_sqnr_db: float | None
    float_top1: float | None
    quant_top1: float | None
    top1_agreement: float | None
    verdict: str | None
    calibration: str | None = None  # "reused" from the cache, "computed", … (static modes)
    # inf/NaN values where the float model's are finite (their SQNR above is then None)
    output_non_finite: int = 0
    worst_layer_non_finite: int = 0
    # tensors per precision and the nodes left in float ("activations 8 uint8, 1 uint16 …")
    precision: str | None = None


COMPARE_ROWS = [
    ("mode", "Mode", "{}"),
    ("verdict", "Verdict", "{}"),
    ("size_bytes", "Size (bytes)", "{:,}"),
    ("excluded", "Excluded nodes", "{}"),
    ("output_sqnr_db", "Output SQNR (dB)", "{:.2f}"),
    ("worst_layer_sqnr_db", "Worst layer SQNR (dB)", "{:.2f}"),
    ("median_layer_sqnr_db", "Median layer SQNR (dB)", "{:.2f}"),
    ("worst_layer", "Worst layer", "{}"),
    ("float_top1", "Float top-1", "{:.2%}"),
    ("quant_top1", "Quantized top-1", "{:.2%}"),
    ("top1_agreement", "Top-1 agreement", "{:.2%}"),
    ("calibration", "Calibration", "{}"),
    ("precision", "Precision", "{}"),
]


LAYER_COLUMNS = (
    "tensor",
    "node",
    "op_type",
    "sqnr_db",
    "mse",
    "max_abs",
    "cosine",
    "clipped_fraction",
    "sqnr_db_target",  # empty unless analysed on a target
)


def write_layers_csv(path: Path, layers: list[LayerError]) -> None:
    """The per-layer table as CSV, worst first (written atomically)."""
    rows = sorted(layers, key=lambda r: (r.sqnr_db is None, r.sqnr_db or 0.0))
    with atomic_target(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=LAYER_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(to_json(r) for r in rows)


def compare(runs: list[QuantRun]) -> list[list[str]]:
    """Rows of (metric, value per run) for a side-by-side table."""
    summaries = [r.summary() for r in runs]
    rows = []
    for name, label, fmt in COMPARE_ROWS:
        values = [getattr(s, name) for s in summaries]
        rows.append([label] + ["—" if v is None else fmt.format(v) for v in values])
    return rows
