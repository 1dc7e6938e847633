"""The colour of every node under an overlay, worked out from its values (Qt colours, no
widgets): a number per node on the viridis ramp, a band per node on an absolute scale, a
category per node; a closed group takes what its operators say together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from PySide6.QtGui import QColor

from edgestudio.core.model.graph_ir import GraphIR
from edgestudio.gui.model.graph_chrome import ramp_colour

MISSING_COLOUR = QColor("#d6d6d6")  # a node without a value


def values_by_node(
    ir: GraphIR, values: Mapping[str, float] | np.ndarray, aggregate: str = "min"
) -> np.ndarray:
    """One value per node (NaN: none), from values by node name or already in node order; a
    closed group gets the ``min``, ``max`` or ``sum`` of its operators'."""
    if isinstance(values, np.ndarray):
        return values.astype(np.float64)
    out = np.full(ir.node_count, np.nan)
    for i, name in enumerate(ir.names):
        if name in values:
            out[i] = values[name]
        elif i in ir.members:  # a closed group: what its operators say together
            inside = [values[m] for m in ir.members[i] if m in values]
            if inside:
                out[i] = (
                    min(inside)
                    if aggregate == "min"
                    else max(inside)
                    if aggregate == "max"
                    else sum(inside)
                )
    return out


def scalar_colours(
    raw: np.ndarray, log: bool, reverse: bool
) -> tuple[list[QColor], tuple[float, float], int]:
    """Each node's colour on the ramp, the scale's ends (as the legend reads them, low end
    first) and how many nodes have no value."""
    shown = np.log10(np.where(raw > 0, raw, np.nan)) if log else raw
    finite = np.isfinite(shown)
    low = float(np.nanmin(shown[finite])) if finite.any() else 0.0
    high = float(np.nanmax(shown[finite])) if finite.any() else 1.0
    span = high - low or 1.0
    colours = []
    for i in range(len(shown)):
        if not finite[i]:
            colours.append(MISSING_COLOUR)
            continue
        t = (shown[i] - low) / span
        colours.append(ramp_colour(1 - t if reverse else t))
    bounds = (10**low, 10**high) if log else (low, high)
    if reverse:
        bounds = (bounds[1], bounds[0])
    return colours, bounds, int((~finite).sum())


def banded_colours(
    raw: np.ndarray, bands: Sequence[tuple[float, str, str]]
) -> tuple[list[QColor], dict[str, int]]:
    """Each node's band colour (``(lower bound, label, colour)``, best first) and the count of
    nodes per band."""
    counts = {label: 0 for _, label, _ in bands}
    colours = []
    for value in raw:
        if np.isnan(value):  # no value; -inf (inf/NaN values in an SQNR) is the lowest band
            colours.append(MISSING_COLOUR)
            continue
        _, label, colour = next(b for b in bands if value >= b[0])
        counts[label] += 1
        colours.append(QColor(colour))
    return colours, counts


def category_colours(
    ir: GraphIR, categories: Mapping[str, str], colours: Mapping[str, str]
) -> tuple[list[QColor], dict[str, int]]:
    """Each node's category colour (a closed group: its operators' categories joined) and the
    count of nodes per category."""
    counts: dict[str, int] = {}
    result = []
    for i, name in enumerate(ir.names):
        cat = categories.get(name)
        if cat is None and i in ir.members:  # a closed group: its operators' categories
            inside = sorted({categories[m] for m in ir.members[i] if m in categories})
            cat = inside[0] if len(inside) == 1 else " + ".join(inside) or None
        if cat is None:
            result.append(MISSING_COLOUR)
            continue
        counts[cat] = counts.get(cat, 0) + 1
        result.append(QColor(colours.get(cat, "#999999")))
    return result, counts
