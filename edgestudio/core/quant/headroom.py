"""Headroom: whether a quantized model's decisions hold with its error doubled.

A recipe can keep every decision on the evaluation data and still sit on a cliff: its error
is already as large as the float model's typical margins, so inputs a little harder than these
(other fonts, noisier audio) flip many of them. Measured on hidden text lines, a recogniser
that read 95 % of the corpus's lines read 42 % of other lines; with its output error doubled
it read only 60 % of the corpus's lines, where 16-bit activations and weights still read
100 % (and 96 % of the other lines).

The test needs no other data: each sample's quantized output is moved twice as far from the
float output (``float + 2 · (quantized − float)``) and judged by the same task metric. Where
decisions sit at random distances from their boundary, doubling the error about doubles the
decisions it changes (a little more where margins thicken away from the boundary: a VAD's
frames went from 1.4 % to 3.0 % changed); a loss that more than triples says the error has
reached the bulk of the margins. Only decision figures (agreements, F1, reads) are tested: a
continuous figure such as SQNR or cosine moves by a fixed amount when its error doubles, which
says nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from edgestudio.core.quant.task_figures import TaskFigure, TaskResult

ERROR_SCALE = 2.0  # how much further from float the stressed output is moved
CLIFF_GROWTH = 3.0  # a loss growing more than this when the error doubles falls off

# figures made of decisions (a class, a read, a frame over a threshold), higher is better
DECISION_FIGURES = frozenset(
    {
        "top1_agreement",
        "text_agreement",
        "position_agreement",
        "frame_agreement",
        "f1",
        "region_f1",
        "box_agreement",
        "next_token_agreement",
        "neighbour_agreement",
    }
)


def with_error_scaled(ref: np.ndarray, test: np.ndarray) -> np.ndarray:
    """``test`` moved :data:`ERROR_SCALE` times as far from ``ref`` as it is."""
    ref = np.asarray(ref, dtype=np.float64)
    scaled: np.ndarray = ref + ERROR_SCALE * (
        np.asarray(test, dtype=np.float64).reshape(ref.shape) - ref
    )
    return scaled


def judged_under_stress(value: np.ndarray) -> bool:
    """True for an output whose error can be scaled: floats, not the integers of tags or ids
    (an ArgMax's output is a decision already; moving it between ids means nothing)."""
    return np.issubdtype(np.asarray(value).dtype, np.floating)


def falls_off(value: float, doubled: float, allowance: float, resolution: float) -> bool:
    """True when the decisions a recipe changes grow much faster than its error.

    ``value``: the figure as measured (a share, higher is better); ``doubled``: the same figure
    with the error doubled; ``allowance``: the loss the goal allows (0.01 for ``≥ 0.99``);
    ``resolution``: one sample's share of the figure (1/40 on 40 samples). A loss that at most
    triples — from what it was, or from what the goal allows, whichever is larger — holds; one
    sample's worth more is forgiven (one line more read otherwise on 40 is noise)."""
    loss, loss_doubled = max(0.0, 1.0 - value), max(0.0, 1.0 - doubled)
    return loss_doubled > CLIFF_GROWTH * max(loss, allowance) + resolution + 1e-12


def doubled_figures(task: TaskResult) -> list[tuple[TaskFigure, float]]:
    """The task's deciding figures that were judged again at doubled error, with that value."""
    return [
        (f, task.at_double_error[f.key])
        for f in task.figures
        if f.deciding and f.higher_is_better and f.key in task.at_double_error
    ]


def headroom_caution(task: TaskResult) -> str:
    """A sentence for the verdict when a figure falls off with the error doubled (the bound
    that calls it good sets the allowance), "" when every decision figure holds."""
    fallen = [
        f"{f.label} falls from {f.text()} to {100 * doubled:.1f} %"
        for f, doubled in doubled_figures(task)
        if falls_off(f.value, doubled, 1.0 - f.good, 1.0 / max(1, task.samples))
    ]
    if not fallen:
        return ""
    return (
        f"With its output error doubled, {'; '.join(fallen)}: the decisions it changes grow "
        "much faster than its error, so inputs a little harder than these will likely lose "
        "more. "
        "16-bit activations and weights, or calibration data like the inputs it will meet, "
        "leave more headroom."
    )
