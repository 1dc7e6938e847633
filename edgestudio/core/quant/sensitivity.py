"""Sensitivity by the task: which layer, kept alone in 16-bit (or in float), recovers most of
what 8-bit quantization loses — measured on the task metric, on held-out data.

Per-layer SQNR ranks what each tensor loses, not what the task loses: on two real models its
worst ten were nine or ten fused Relu/Clip outputs, and a second measured ranking disagreed with
the first (DESIGN.md part 5). So each candidate layer is tried: quantized as the base recipe
says with that layer alone changed, analysed on the evaluation data, and ranked by how much of
the task figure it gives back. Calibration comes from the cache after the first quantization,
so a layer costs one quantization (ranges reused) and one analysis.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.inputs_recipe import input_args
from edgestudio.core.job_api.options import option, option_argv
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.progress import Reporter
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.serialise import from_json, to_json

WAYS = ("int16", "float")


@dataclass(frozen=True)
class SensitivityRecipe(Recipe):
    """Rank layers by what keeping each alone in 16-bit (or float) gives back on the task."""

    kind: ClassVar[str] = "sensitivity"
    base: QuantRecipe = field(default_factory=QuantRecipe)  # the 8-bit QDQ recipe to start from
    data: DataSource = field(default_factory=DataSource)  # evaluation data (not calibration)
    metric: str = "auto"
    nodes: tuple[str, ...] = ()  # the layers to try; empty: the ``top`` worst by SQNR
    top: int = option(10, "--top", "try the N layers worst by per-layer SQNR (their fused "
                      "producers; pass-through operators left out)", minimum=1, maximum=1000)
    way: str = option("int16", "--way", "keep each layer alone in 16-bit (still integer) or in "
                      "float", choices=WAYS)

    def title(self) -> str:
        """What is ranked, in a few words."""
        return f"Sensitivity: {Path(self.base.model).name}, each layer in {self.way}"

    def input_paths(self) -> list[str]:
        """The model, the calibration data and the evaluation data."""
        return [*self.base.input_paths(), self.data.path]

    def to_command(self) -> list[str]:
        """``edgestudio sensitivity MODEL --calib C --data D …`` (the base recipe's options
        as ``quantize`` spells them)."""
        cmd = ["edgestudio", "sensitivity", self.base.model,
               *option_argv(self.base, self.base.mode)]
        if self.base.calib is not None:  # prepared as --data is (the options are shared)
            cmd += ["--calib", self.base.calib.path]
            if self.base.calib.samples:
                cmd += ["--calib-samples", str(self.base.calib.samples)]
        cmd += ["--data", *self.data.to_cli(), *option_argv(self)]
        for node in self.nodes:
            cmd += ["--node", node]
        if self.metric != "auto":
            cmd += ["--metric", self.metric]
        return cmd + input_args(self.base.shapes, self.base.ranges, None)


@dataclass(frozen=True)
class LayerSensitivity:
    """One layer tried alone."""

    node: str
    op_type: str
    sqnr_db: float | None  # its per-layer SQNR in the base run
    value: float | None  # the task figure with the layer changed
    gain: float | None  # how much of the figure it gives back (positive: better)
    error: str = ""  # why it could not be tried
    # the same for the task's second figure, which breaks ties (a line read exactly is 0 or 1;
    # its character error rate still moves)
    second_gain: float | None = None


@dataclass
class Sensitivity:
    """Layers ranked by what changing each alone gives back on the task."""

    metric: str  # the figure ranked by: text_agreement, top1_agreement, …, or output_sqnr
    higher_is_better: bool
    base_value: float | None
    way: str
    data: str  # what it was measured on, for a person
    layers: list[LayerSensitivity] = field(default_factory=list)  # best gain first
    second_metric: str = ""  # the figure that breaks ties ("" when the task has one)

    def ranked(self) -> list[LayerSensitivity]:
        """Best gain first (ties broken by the second figure); layers not tried last."""
        return sorted(self.layers, key=lambda r: (r.gain is None, -(r.gain or 0.0),
                                                  -(r.second_gain or 0.0)))


def _figures(analysis: Analysis) -> list[tuple[str, float | None, bool]]:
    """The figures a sensitivity ranks by, first deciding: the task's first two (the
    verdict's), else output SQNR."""
    task = analysis.task
    if task is not None and task.figures:
        return [(f.key, f.value, f.higher_is_better) for f in task.figures[:2]]
    values = [o.sqnr_db for o in analysis.outputs if o.sqnr_db is not None]
    return [("output_sqnr_db", min(values) if values else None, True)]


def _gain(base: tuple[str, float | None, bool], value: float | None) -> float | None:
    """How much ``value`` improves on the base figure (positive: better)."""
    _, before, higher = base
    if value is None or before is None:
        return None
    return value - before if higher else before - value


def run_sensitivity(recipe: Recipe, reporter: Reporter, staging: Path) -> JobReport:
    """Quantize and analyse the base recipe, then each candidate layer changed alone."""
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.quant.analyze import run_analyze
    from edgestudio.core.quant.quantize import run_quantize

    assert isinstance(recipe, SensitivityRecipe)
    work = staging / "tries"
    work.mkdir()

    def measure(quant: QuantRecipe, name: str) -> Analysis:
        folder = work / name
        folder.mkdir()
        quiet = RecordingReporter()
        report = run_quantize(dataclasses.replace(quant, output=str(folder / "q.onnx")), quiet,
                              folder)
        quantized = folder / report.files[0]
        analysis = run_analyze(AnalyzeRecipe(float_model=quant.model, quant_model=str(quantized),
                                             data=recipe.data, metric=recipe.metric,
                                             shapes=quant.shapes, ranges=quant.ranges),
                               quiet, folder)
        shutil.rmtree(folder)  # only the figures are kept
        result = from_json(Analysis, analysis.details)
        assert result is not None
        return result

    reporter.stage("Quantizing and analysing the base recipe", 0.0)
    base = measure(recipe.base, "base")
    base_figures = _figures(base)
    metric, base_value, higher = base_figures[0]
    nodes = list(recipe.nodes) or base.worst_excludable(recipe.top)
    # a layer named by its fused producer takes the figures of the layer it stands for
    stands_for = {target: node for node, target in base.targets.items() if target}
    sqnr = {r.node: r.sqnr_db for r in base.layers}
    op_of = {r.node: r.op_type for r in base.layers}
    result = Sensitivity(metric, higher, base_value, recipe.way,
                         base.data.text() if base.data is not None else recipe.data.describe(),
                         second_metric=base_figures[1][0] if len(base_figures) > 1 else "")
    for k, node in enumerate(nodes):
        reporter.check_cancelled()
        reporter.stage(f"Layer {k + 1} of {len(nodes)}: {node}", 0.1 + 0.9 * k / len(nodes))
        changed = (dataclasses.replace(recipe.base, int16=(*recipe.base.int16, node))
                   if recipe.way == "int16"
                   else dataclasses.replace(recipe.base, exclude=(*recipe.base.exclude, node)))
        shown = node if node in sqnr else stands_for.get(node, node)
        try:
            analysis = measure(changed, f"layer{k}")
        except Exception as exc:  # one layer that cannot be tried does not stop the ranking
            result.layers.append(LayerSensitivity(node, op_of.get(shown, ""), sqnr.get(shown),
                                                  None, None, f"{type(exc).__name__}: {exc}"))
            continue
        figures = _figures(analysis)
        value = figures[0][1]
        second = (_gain(base_figures[1], figures[1][1])
                  if len(figures) > 1 and len(base_figures) > 1 else None)
        op = op_of.get(node) or (f"with its {op_of[shown]}" if shown in op_of else "")
        result.layers.append(LayerSensitivity(node, op, sqnr.get(shown), value,
                                              _gain(base_figures[0], value), second_gain=second))
        reporter.log(f"{node}: {metric} {value if value is None else f'{value:.4g}'}"
                     f" (base {base_value if base_value is None else f'{base_value:.4g}'})")
    result.layers = result.ranked()
    shutil.rmtree(work, ignore_errors=True)
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, details=to_json(result))
