"""The report's charts as inline SVG, drawn from the results alone (no Qt, no display).

The same functions draw the charts whether the report comes from the window or from
``edgestudio report``, so both give the same file. Bars only — the interactive plots stay in the
app — with units on both axes and the full name of each bar in its tooltip (``<title>``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path

from edgestudio.core.perf.perf_results import LatencyRow
from edgestudio.core.perf.providers import provider_colour, short_name
from edgestudio.core.quant.quant_results import LayerError
from edgestudio.core.quant.verdicts import band_of, sqnr_bands

WIDTH, HEIGHT = 760, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 104
MAX_BARS = 60  # beyond this the worst are shown; the table has them all


def _nice_top(value: float) -> float:
    """A round axis maximum at or above ``value``."""
    if value <= 0:
        return 1.0
    step = 10.0 ** math.floor(math.log10(value))
    for k in (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        if k * step >= value:
            return k * step
    return 10.0 * step


def bar_chart(
    labels: Sequence[str],
    values: Sequence[float],
    colours: Sequence[str],
    title: str,
    y_label: str,
    x_label: str,
    thresholds: Sequence[tuple[float, str]] = (),
) -> str:
    """An SVG bar chart; labels are abbreviated under the bars and complete in tooltips."""
    e = html.escape
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    low = min(0.0, *values) if values else 0.0
    high = _nice_top(max([*values, *(t for t, _ in thresholds), 0.0]) * 1.05)
    span = high - low or 1.0

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - low) / span)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13" '
        f'font-weight="bold">{e(title)}</text>',
    ]
    for k in range(6):  # horizontal grid with values
        v = low + span * k / 5
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            f'stroke="#e0e0e0"/><text x="{LEFT - 6}" y="{y(v) + 4:.1f}" '
            f'text-anchor="end">{v:.3g}</text>'
        )
    for value, colour in thresholds:
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" '
            f'y2="{y(value):.1f}" stroke="{colour}" stroke-dasharray="5,4"/>'
        )
    n = max(len(values), 1)
    slot = plot_w / n
    for i, (label, value, colour) in enumerate(zip(labels, values, colours, strict=True)):
        x = LEFT + i * slot
        top, bottom = sorted((y(value), y(0.0)))
        parts.append(
            f'<rect x="{x + slot * 0.1:.1f}" y="{top:.1f}" width="{slot * 0.8:.1f}" '
            f'height="{max(bottom - top, 0.5):.1f}" fill="{colour}">'
            f"<title>{e(label)}: {value:.4g}</title></rect>"
        )
        if n <= 30:  # readable labels, rotated so that neighbours never overlap
            short = label if len(label) <= 16 else label[:7] + "…" + label[-8:]
            cx, cy = x + slot / 2, TOP + plot_h + 10
            parts.append(
                f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="end" '
                f'transform="rotate(-40 {cx:.1f} {cy:.1f})">{e(short)}'
                f"<title>{e(label)}</title></text>"
            )
    parts += [
        f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#555"/>',
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(0.0):.1f}" y2="{y(0.0):.1f}" '
        'stroke="#555"/>',
        f'<text transform="rotate(-90)" x="{-(TOP + plot_h / 2):.1f}" y="14" '
        f'text-anchor="middle">{e(y_label)}</text>',
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle">'
        f"{e(x_label)}</text>",
        "</svg>",
    ]
    return "".join(parts)


def sqnr_chart(layers: list[LayerError], representative: bool = True) -> str | None:
    """Per-layer SQNR, worst first, coloured on the absolute scale (neutral greys when the
    data was synthetic: no colour that reads as a verdict); None without numbers."""
    values = sorted((r.sqnr_db, r.node) for r in layers if r.sqnr_db is not None)
    if not values:
        return None
    shown = values[:MAX_BARS]
    bands = sqnr_bands(representative)
    more = f" ({len(shown)} worst of {len(values)})" if len(values) > len(shown) else ""
    check = "" if representative else " — pipeline check on synthetic data, no verdict"
    return bar_chart(
        [node for _, node in shown],
        [v for v, _ in shown],
        [band_of(v, bands)[2] for v, _ in shown],
        f"Per-layer SQNR, worst first{more}{check}",
        "SQNR (dB), higher is better",
        "layer (node)",
        [(bound, colour) for bound, _, colour in bands[:2]],
    )


def latency_chart(rows: list[LatencyRow]) -> str | None:
    """Median latency per (model, provider, threads); None when nothing was measured."""
    ok = [r for r in rows if r.ok]
    if not ok:
        return None
    remote = any(r.device for r in ok)  # then every label says where
    labels = [
        f"{Path(r.model).stem}{f' @{r.where}' if remote else ''} {short_name(r.ep)}×{r.threads}"
        for r in ok
    ]
    return bar_chart(
        labels,
        [r.median_ms or 0.0 for r in ok],
        [provider_colour(r.ep) for r in ok],
        "Median latency per model, provider and threads",
        "median latency (ms)",
        "model, provider × threads",
    )
