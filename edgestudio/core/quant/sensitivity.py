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
from edgestudio.core.job_api.command import given_data, positional, spelled
from edgestudio.core.job_api.options import option, option_argv
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.progress import Reporter
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.task_names import TASKS

WAYS = ("int16", "float")


def base_words(base: QuantRecipe) -> list[str]:
    """The base quantization as ``sensitivity`` says it: the model, then quantize's options,
    its calibration as ``--calib PATH [--calib-samples N]`` (``--samples`` is the evaluation
    data's there) and its input sizes."""
    words = [base.model, *option_argv(base, base.mode)]
    if base.calib is not None:
        words += ["--calib", base.calib.path]
        words += ["--calib-samples", str(base.calib.samples)] if base.calib.samples else []
    words += [w for shape in base.shapes for w in ("--shape", shape)]
    return words + [w for given in base.ranges for w in ("--range", given)]


@dataclass(frozen=True)
class SensitivityRecipe(Recipe["Sensitivity"]):
    """Rank layers by what keeping each alone in 16-bit (or float) gives back on the task."""

    kind: ClassVar[str] = "sensitivity"
    # the 8-bit QDQ recipe to start from
    base: QuantRecipe = positional(default_factory=QuantRecipe, show=base_words)
    # evaluation data (not calibration)
    data: DataSource = given_data(default_factory=DataSource, always=True)
    metric: str = spelled(
        "auto",
        "--metric",
        choices=TASKS,
        help="the task figure to rank by (default: detected, as analyze does)",
    )
    # the layers to try; empty: the ``top`` worst by SQNR
    nodes: tuple[str, ...] = spelled(
        (),
        "--node",
        each=True,
        metavar="NODE",
        help="try this layer (default: the --top worst by SQNR)",
    )
    top: int = option(
        10,
        "--top",
        "try the N layers worst by per-layer SQNR (their fused "
        "producers; pass-through operators left out)",
        minimum=1,
        maximum=1000,
    )
    way: str = option(
        "int16",
        "--way",
        "keep each layer alone in 16-bit (still integer) or in float",
        choices=WAYS,
    )

    def title(self) -> str:
        """What is ranked, in a few words."""
        return f"Sensitivity: {Path(self.base.model).name}, each layer in {self.way}"

    def input_paths(self) -> list[str]:
        """The model, the calibration data and the evaluation data."""
        return [*self.base.input_paths(), self.data.path]

    @classmethod
    def result_type(cls) -> type[Sensitivity]:
        """The ranked tries."""
        return Sensitivity


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
    # the gain on each half of the data (even- and odd-numbered samples), measured apart: a
    # rank the two halves do not share is noise
    half_gains: tuple[float | None, float | None] = (None, None)


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
    # Spearman's rank correlation between the rankings of the two halves of the data (None:
    # not measured, e.g. data already split by the caller, or fewer than 3 layers)
    rank_agreement: float | None = None
    top_agreement: str = ""  # "the top 3 are the same on both halves", or what differs
    unit: str = ""  # the figure's unit as analyze prints it: "points", "%", "dB" or ""
    noise: float | None = None  # the gain below which a layer's gain is not told from noise
    # why the ranking stopped before every layer was tried ("" when it tried them all)
    stopped_early: str = ""

    def stability_text(self) -> str:
        """How far the ranking is to be trusted, as a sentence."""
        if self.stopped_early:
            return self.stopped_early
        if self.rank_agreement is None and self.top_agreement:
            return f"{self.top_agreement[0].upper()}{self.top_agreement[1:]}."  # a tie
        if self.rank_agreement is None:
            return (
                "Rank stability not measured (it needs 3 layers or more, on data that "
                "can be split in two)."
            )
        word = (
            "stable"
            if self.rank_agreement >= 0.8
            else "roughly stable"
            if self.rank_agreement >= 0.5
            else "unstable: noise"
        )
        return (
            f"Ranking {word} — Spearman {self.rank_agreement:.2f} between the two halves "
            f"of the data; {self.top_agreement}."
        )

    def ranked(self) -> list[LayerSensitivity]:
        """Best gain first (ties broken by the second figure); layers not tried last."""
        return sorted(
            self.layers, key=lambda r: (r.gain is None, -(r.gain or 0.0), -(r.second_gain or 0.0))
        )


def _figures(analysis: Analysis) -> list[tuple[str, float | None, bool]]:
    """The figures a sensitivity ranks by, first deciding: the task's first two (the
    verdict's), else output SQNR."""
    task = analysis.task
    if task is not None and task.figures:
        # in the unit analyze prints: a top-1 drop in points, not a fraction
        return [
            (f.key, f.value * 100 if f.unit == "points" else f.value, f.higher_is_better)
            for f in task.figures[:2]
        ]
    values = [o.sqnr_db for o in analysis.outputs if o.sqnr_db is not None]
    return [("output_sqnr_db", min(values) if values else None, True)]


def _mean_figures(analyses: list[Analysis]) -> list[tuple[str, float | None, bool]]:
    """The figures of the halves' analyses, averaged (equal halves: the whole data's)."""
    each = [_figures(a) for a in analyses]
    out = []
    for k, (key, _, higher) in enumerate(each[0]):
        values = [v for f in each if len(f) > k and (v := f[k][1]) is not None]
        out.append((key, sum(values) / len(values) if values else None, higher))
    return out


def _ranks(values: list[float]) -> list[float]:
    """Ranks (1 = largest), ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def rank_stability(layers: list[LayerSensitivity], top: int = 3) -> tuple[float | None, str]:
    """Spearman's correlation between the rankings the two halves of the data give, and
    whether their top ``top`` layers are the same (None when fewer than 3 layers were
    measured on both halves)."""
    both = [r for r in layers if None not in r.half_gains]
    if len(both) < 3:
        return None, ""
    if len({r.half_gains for r in both}) == 1:  # a tie is no ranking: nothing to call stable
        return None, (
            f"no ranking: all {len(both)} layers gave back the same on both halves of the data"
        )
    first = _ranks([float(r.half_gains[0] or 0.0) for r in both])
    second = _ranks([float(r.half_gains[1] or 0.0) for r in both])
    n = len(both)
    mean = (n + 1) / 2
    cov = sum((a - mean) * (b - mean) for a, b in zip(first, second, strict=True))
    spread = (sum((a - mean) ** 2 for a in first) * sum((b - mean) ** 2 for b in second)) ** 0.5
    rho = cov / spread if spread else 1.0
    k = min(top, n)
    top_first = {both[i].node for i in sorted(range(n), key=lambda i: first[i])[:k]}
    top_second = {both[i].node for i in sorted(range(n), key=lambda i: second[i])[:k]}
    shared = len(top_first & top_second)
    said = (
        f"the top {k} are the same on both halves"
        if shared == k
        else f"{shared} of the top {k} are the same on both halves"
    )
    return rho, said


EARLY_LOOK = 4  # layers tried (the worst by SQNR, the likeliest to matter) before giving up


def figure_unit(analysis: Analysis) -> str:
    """The unit of the figure a sensitivity ranks by, as analyze prints it."""
    task = analysis.task
    if task is not None and task.figures:
        return task.figures[0].unit
    return "dB"


def gain_noise(base_halves: list[Analysis], key: str, unit: str) -> float:
    """The smallest gain told apart from noise: one evaluation sample's worth of a share (a
    line read or not), the two halves' disagreement on the base figure, and for dB one dB."""
    values = [v for a in base_halves for k, v, _ in _figures(a)[:1] if k == key and v is not None]
    spread = (max(values) - min(values)) / 2 if len(values) > 1 else 0.0
    samples = min((a.samples for a in base_halves), default=0)
    resolution = (
        1.0
        if unit == "dB"
        else (100.0 if unit == "points" else 1.0) / samples
        if samples and unit in ("%", "points")
        else 0.0
    )
    return max(spread, resolution)


def loss_is_spread(layers: list[LayerSensitivity], noise: float, planned: int) -> bool:
    """True when the ranking should stop: the first :data:`EARLY_LOOK` layers tried (the
    worst by SQNR, the likeliest to matter) all gave back no more than the noise, with more
    layers still to try."""
    tried = [r for r in layers if r.gain is not None]
    return (
        planned > EARLY_LOOK
        and len(tried) >= EARLY_LOOK
        and all((r.gain or 0.0) <= noise for r in tried)
    )


def spread_loss_text(tried: int, noise: float, unit: str) -> str:
    """Why the ranking stopped: the loss is spread, and what will recover it."""
    shown = f"{noise:.3g} {unit}" if unit in ("dB", "points") else f"{noise:.3g}"
    if unit == "%":
        shown = f"{100 * noise:.3g} %"
    return (
        f"Stopped after {tried} layers: none gave back more than the noise (±{shown}, one "
        "evaluation sample or the halves' disagreement). The loss is spread over many layers, "
        "so per-layer choices will not recover it; whole-model choices will: 16-bit "
        "activations (A16W8), 16-bit weights too (A16W16), quantizers on compute inputs "
        "only, or more calibration data."
    )


def _gain(base: tuple[str, float | None, bool], value: float | None) -> float | None:
    """How much ``value`` improves on the base figure (positive: better)."""
    _, before, higher = base
    if value is None or before is None:
        return None
    return value - before if higher else before - value


def run_sensitivity(
    recipe: SensitivityRecipe, reporter: Reporter, staging: Path
) -> JobReport[Sensitivity]:
    """Quantize and analyse the base recipe, then each candidate layer changed alone."""
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.quant.analyze import run_analyze
    from edgestudio.core.quant.quantize import run_quantize

    work = staging / "tries"
    work.mkdir()

    # Each analysis runs on the two halves of the data apart (when it is not split already):
    # the same samples in all, and the two rankings say how stable the ranking is.
    halves = (
        [recipe.data]
        if recipe.data.part
        else [dataclasses.replace(recipe.data, part=part) for part in ("even", "odd")]
    )

    def measure(quant: QuantRecipe, name: str) -> list[Analysis]:
        folder = work / name
        folder.mkdir()
        quiet = RecordingReporter()
        report = run_quantize(
            dataclasses.replace(quant, output=str(folder / "q.onnx")), quiet, folder
        )
        quantized = folder / report.files[0]
        results = []
        for k, data in enumerate(halves):
            half = folder / f"half{k}"
            half.mkdir()
            analysis = run_analyze(
                AnalyzeRecipe.after(quant, str(quantized), data, recipe.metric), quiet, half
            )
            results.append(analysis.result)
        shutil.rmtree(folder)  # only the figures are kept
        return results

    reporter.stage("Quantizing and analysing the base recipe", 0.0)
    base_halves = measure(recipe.base, "base")
    base = base_halves[0]
    base_figures = _mean_figures(base_halves)
    metric, base_value, higher = base_figures[0]
    nodes = list(recipe.nodes) or base.worst_excludable(recipe.top)
    # a layer named by its fused producer takes the figures of the layer it stands for
    stands_for = {target: node for node, target in base.targets.items() if target}
    sqnr = {r.node: r.sqnr_db for r in base.layers}
    op_of = {r.node: r.op_type for r in base.layers}
    result = Sensitivity(
        metric,
        higher,
        base_value,
        recipe.way,
        base.data.text() if base.data is not None else recipe.data.describe(),
        second_metric=base_figures[1][0] if len(base_figures) > 1 else "",
        unit=figure_unit(base),
    )
    result.noise = gain_noise(base_halves, metric, result.unit)
    for k, node in enumerate(nodes):
        reporter.check_cancelled()
        if loss_is_spread(result.layers, result.noise, len(nodes)):
            tried = sum(1 for r in result.layers if r.gain is not None)
            result.stopped_early = spread_loss_text(tried, result.noise, result.unit)
            reporter.log(result.stopped_early)
            break
        reporter.stage(f"Layer {k + 1} of {len(nodes)}: {node}", 0.1 + 0.9 * k / len(nodes))
        changed = (
            dataclasses.replace(recipe.base, int16=(*recipe.base.int16, node))
            if recipe.way == "int16"
            else dataclasses.replace(recipe.base, exclude=(*recipe.base.exclude, node))
        )
        shown = node if node in sqnr else stands_for.get(node, node)
        try:
            analyses = measure(changed, f"layer{k}")
        except Exception as exc:  # one layer that cannot be tried does not stop the ranking
            result.layers.append(
                LayerSensitivity(
                    node,
                    op_of.get(shown, ""),
                    sqnr.get(shown),
                    None,
                    None,
                    f"{type(exc).__name__}: {exc}",
                )
            )
            continue
        figures = _mean_figures(analyses)
        value = figures[0][1]
        halves_gain = tuple(
            _gain(_figures(b)[0], _figures(a)[0][1])
            for a, b in zip(analyses, base_halves, strict=True)
        )
        second = (
            _gain(base_figures[1], figures[1][1])
            if len(figures) > 1 and len(base_figures) > 1
            else None
        )
        op = op_of.get(node) or (f"with its {op_of[shown]}" if shown in op_of else "")
        result.layers.append(
            LayerSensitivity(
                node,
                op,
                sqnr.get(shown),
                value,
                _gain(base_figures[0], value),
                second_gain=second,
                half_gains=(halves_gain[0], halves_gain[-1])
                if len(halves_gain) == 2
                else (None, None),
            )
        )
        reporter.log(
            f"{node}: {metric} {value if value is None else f'{value:.4g}'}"
            f" (base {base_value if base_value is None else f'{base_value:.4g}'})"
        )
    result.layers = result.ranked()
    result.rank_agreement, result.top_agreement = rank_stability(result.layers)
    reporter.log(result.stability_text())
    shutil.rmtree(work, ignore_errors=True)
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, result=result)
