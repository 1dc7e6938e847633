"""Colouring a graph's nodes by a number, a band or a category, with the legend that reads the
colours, and outlining a set of nodes: the overlay half of
:class:`~edgestudio.gui.model.graph_view.GraphView` (the colours themselves are computed, free
of widgets, in :mod:`edgestudio.gui.model.overlay_colours`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsPathItem

from edgestudio.core.model.graph_ir import GraphIR
from edgestudio.core.quant.verdicts import sqnr_bands
from edgestudio.gui.model.graph_chrome import Legend, Minimap
from edgestudio.gui.model.graph_items import GraphGeometry, NodeBatchItem, marker_path
from edgestudio.gui.model.overlay_colours import (
    banded_colours,
    category_colours,
    scalar_colours,
    values_by_node,
)


class NodeOverlays:
    """Mixed into the graph view, whose attributes below it uses."""

    ir: GraphIR | None
    geometry_: GraphGeometry | None
    legend: Legend
    minimap: Minimap
    overlay_values: np.ndarray | None
    marked: list[int]
    _base_colours: list[QColor]
    _node_items: list[NodeBatchItem]
    _mark_item: QGraphicsPathItem
    _update_minimap: Callable[[], None]  # the view's: places the legend and the minimap again

    def set_scalar_overlay(
        self,
        values: Mapping[str, float] | np.ndarray,
        title: str,
        log: bool = False,
        reverse: bool = False,
        aggregate: str = "min",
    ) -> None:
        """Colour nodes by a number per node (by node name, or an array in node order).

        Nodes without a value turn light grey. ``log`` uses a log scale (values > 0);
        ``reverse`` puts high values at the dark end (e.g. SQNR, where low is bad). A closed
        group shows the ``aggregate`` (``min``, ``max`` or ``sum``) of its operators' values:
        the worst SQNR inside it, its summed time share.
        """
        if self.geometry_ is None or self.ir is None:
            return
        raw = values_by_node(self.ir, values, aggregate)
        self.overlay_values = raw
        colours, bounds, missing = scalar_colours(raw, log, reverse)
        self._apply_colours(colours)
        self.legend.show_scale(title, bounds[0], bounds[1], log, missing)
        self._update_minimap()  # the legend's size changed: place it again

    def set_banded_overlay(
        self,
        values: Mapping[str, float],
        bands: Sequence[tuple[float, str, str]],
        title: str,
        note: str = "",
    ) -> None:
        """Colour nodes by the band their value falls in (``(lower bound, label, colour)``, best
        first): an absolute scale, the same for every model and run. A closed group shows the
        band of its worst operator; ``note`` goes under the legend (the data it was measured
        on)."""
        if self.geometry_ is None or self.ir is None:
            return
        raw = values_by_node(self.ir, values, "min")
        self.overlay_values = raw
        colours, counts = banded_colours(raw, bands)
        self._apply_colours(colours)
        self.legend.show_categories(title, counts, {label: c for _, label, c in bands}, note)
        self._update_minimap()  # the legend's size changed: place it again

    def show_sqnr(
        self, values: Mapping[str, float], representative: bool, title: str, note: str = ""
    ) -> None:
        """Colour nodes by per-layer SQNR on the absolute scale of the Quantization tab: the
        verdict's colours on the user's data, neutral shades on synthetic data."""
        self.set_banded_overlay(values, sqnr_bands(representative), title, note)

    def set_category_overlay(
        self, categories: Mapping[str, str], colours: Mapping[str, str], title: str
    ) -> None:
        """Colour nodes by a category per node name (e.g. the EP that ran it)."""
        if self.ir is None:
            return
        self.overlay_values = None
        result, counts = category_colours(self.ir, categories, colours)
        self._apply_colours(result)
        self.legend.show_categories(
            title, dict(sorted(counts.items(), key=lambda kv: -kv[1])), colours
        )
        self._update_minimap()  # the legend's size changed: place it again

    def clear_overlay(self) -> None:
        """Back to colours by operator category."""
        self.overlay_values = None
        self._apply_colours(list(self._base_colours))
        self.legend.hide()

    def set_marked(self, nodes: list[int] | list[str]) -> None:
        """Outline a set of nodes (indices or names), e.g. the layers excluded from quantization."""
        if self.geometry_ is None or self.ir is None:
            return
        indices = [n if isinstance(n, int) else self.ir.index_of(n) for n in nodes]
        self.marked = [i for i in indices if i is not None]
        self._mark_item.setPath(marker_path(self.geometry_, self.marked, pad=7))

    def node_colour(self, index: int) -> QColor:
        """The current fill colour of a node (for tests and legends)."""
        assert self.geometry_ is not None
        return self.geometry_.colours[index]

    def _apply_colours(self, colours: list[QColor]) -> None:
        assert self.geometry_ is not None
        self.geometry_.colours = colours
        for item in self._node_items:
            item.refresh_colours()
        self.minimap.render_scene()
