"""Quantization runs as the workbench keeps them: the recipe, its result and its analysis, and
the headline figures used to compare two runs side by side."""

from __future__ import annotations

import csv
import enum
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgestudio.core.quant_recipes import QuantRecipe
from edgestudio.core.recipe_registry import recipe_from_dict


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
    """One quantization run of a document (numbered in the order they were started)."""

    number: int
    recipe: QuantRecipe
    output: str | None = None
    quant_details: dict[str, Any] = field(default_factory=dict)
    analysis: dict[str, Any] | None = None
    state: RunState = RunState.QUANTIZING
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (for workspaces)."""
        return {"number": self.number, "recipe": self.recipe.to_dict(), "output": self.output,
                "quant_details": self.quant_details, "analysis": self.analysis,
                "state": self.state.value, "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuantRun:
        """Inverse of :meth:`to_dict`; a run saved while unfinished comes back as failed."""
        recipe = recipe_from_dict(data["recipe"])
        assert isinstance(recipe, QuantRecipe)
        state = RunState(data["state"])
        error = data.get("error")
        if not state.is_final:
            state, error = (RunState.FAILED if state is RunState.QUANTIZING
                            else RunState.ANALYSIS_FAILED), "interrupted: the window was closed"
        return cls(number=int(data["number"]), recipe=recipe, output=data.get("output"),
                   quant_details=dict(data.get("quant_details") or {}),
                   analysis=data.get("analysis"), state=state, error=error)

    def layers_worst_first(self) -> list[dict[str, Any]]:
        """Analysed layers, lowest SQNR first (n/a last)."""
        return worst_first((self.analysis or {}).get("layers", []))

    def summary(self) -> dict[str, Any]:
        """Headline figures (None where unknown) for the history table and comparisons."""
        analysis = self.analysis or {}
        sqnrs = [r["sqnr_db"] for r in analysis.get("layers", []) if r["sqnr_db"] is not None]
        outputs = analysis.get("outputs", [])
        accuracy = analysis.get("accuracy") or {}
        worst = self.layers_worst_first()[:1]
        return {
            "run": self.number,
            "mode": self.recipe.title().removeprefix("Quantize: "),
            "state": self.state.value,
            "size_bytes": self.quant_details.get("quant_bytes"),
            "float_bytes": self.quant_details.get("float_bytes"),
            "excluded": len(self.recipe.exclude),
            "output_sqnr_db": outputs[0]["sqnr_db"] if outputs else None,
            "worst_layer": worst[0]["node"] if worst else None,
            "worst_layer_sqnr_db": min(sqnrs) if sqnrs else None,
            "median_layer_sqnr_db": statistics.median(sqnrs) if sqnrs else None,
            "float_top1": accuracy.get("float_top1"),
            "quant_top1": accuracy.get("quant_top1"),
            "top1_agreement": accuracy.get("top1_agreement"),
            "verdict": (analysis.get("verdict") or {}).get("level"),
        }


COMPARE_ROWS = [
    ("mode", "Mode", "{}"), ("verdict", "Verdict", "{}"), ("size_bytes", "Size (bytes)", "{:,}"),
    ("excluded", "Excluded nodes", "{}"), ("output_sqnr_db", "Output SQNR (dB)", "{:.2f}"),
    ("worst_layer_sqnr_db", "Worst layer SQNR (dB)", "{:.2f}"),
    ("median_layer_sqnr_db", "Median layer SQNR (dB)", "{:.2f}"),
    ("worst_layer", "Worst layer", "{}"), ("float_top1", "Float top-1", "{:.2%}"),
    ("quant_top1", "Quantized top-1", "{:.2%}"), ("top1_agreement", "Top-1 agreement", "{:.2%}"),
]


LAYER_COLUMNS = ("tensor", "node", "op_type", "sqnr_db", "mse", "max_abs", "cosine",
                 "clipped_fraction")


def worst_first(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Layers sorted by SQNR, lowest (worst) first; n/a last."""
    return sorted(layers, key=lambda r: (r["sqnr_db"] is None, r["sqnr_db"] or 0.0))


def write_layers_csv(path: Path, layers: list[dict[str, Any]]) -> None:
    """The per-layer table as CSV, worst first (written atomically)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=LAYER_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(worst_first(layers))
    os.replace(tmp, path)


def compare(runs: list[QuantRun]) -> list[list[str]]:
    """Rows of (metric, value per run) for a side-by-side table."""
    summaries = [r.summary() for r in runs]
    rows = []
    for key, label, fmt in COMPARE_ROWS:
        rows.append([label] + ["—" if s[key] is None else fmt.format(s[key]) for s in summaries])
    return rows
