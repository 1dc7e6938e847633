"""Performance › Per-op profile: where each node ran, its time and share, its MACs once counted,
the time-vs-work scatter, and colouring the graph by time or provider."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.perf.perf_results import Profile
from edgestudio.core.perf.providers import short_name
from edgestudio.core.workspace.document import ModelDocument, Overlay, OverlayKind
from edgestudio.gui.perf.work_scatter import WorkScatter
from edgestudio.gui.widgets.tables import NumericItem, results_table

PROFILE_COLUMNS = ["Node", "Op", "EP", "µs / run", "Share", "MACs", "Fused from"]


class ProfileView(QWidget):
    """The placement summary, the per-kernel table and the time-vs-work scatter of a model's
    last profile (the document's); a row or a dot chosen names its node."""

    node_chosen = Signal(str)

    def __init__(self, document: ModelDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.placement = QLabel(
            "Run a profile to see per-op time and which provider ran each node."
        )
        self.placement.setObjectName("placement")
        self.placement.setWordWrap(True)
        self.profile_table = results_table(PROFILE_COLUMNS, "profile_table")
        self.profile_table.itemSelectionChanged.connect(self._profile_selected)
        time_button = QPushButton("Colour the graph by time share")
        time_button.clicked.connect(self.show_time_overlay)
        ep_button = QPushButton("Colour the graph by provider")
        ep_button.clicked.connect(self.show_ep_overlay)
        buttons = QHBoxLayout()
        buttons.addWidget(time_button)
        buttons.addWidget(ep_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.placement)
        layout.addLayout(buttons)
        self.work_scatter = WorkScatter()
        self.work_scatter.node_chosen.connect(self.node_chosen)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.profile_table)
        split.addWidget(self.work_scatter)
        split.setSizes([320, 260])
        layout.addWidget(split, 1)
        document.events.cost.connect(self._cost_changed)

    def show_profile(self, profile: Profile) -> None:
        """Fill the per-op table and the placement summary."""
        lines = [
            f"<b>Placement on {short_name(profile.first_choice)}:</b> {profile.placement_text}"
        ]
        lines += [f"<span style='color:#b3261e'>⚠ {w}</span>" for w in profile.warnings]
        for ep, info in profile.mobile.items():
            lines.append(
                f"Predicted {ep}: {info.supported_nodes}/{info.nodes} nodes in "
                f"{info.partitions} partition(s) — {info.suitability}"
                + (
                    f" (unsupported: {', '.join(info.unsupported_ops)})"
                    if info.unsupported_ops
                    else ""
                )
            )
        if profile.mobile_error:
            lines.append(f"NNAPI/CoreML coverage could not be predicted: {profile.mobile_error}")
        self.placement.setText("<br>".join(lines))
        self._fill_profile_table(profile)

    def _fill_profile_table(self, profile: Profile) -> None:
        """The per-kernel rows, with the MACs of the nodes each covers once counted."""
        cost = self.document.cost.by_node() if self.document.cost else {}
        self.profile_table.setRowCount(len(profile.nodes))
        for r, n in enumerate(profile.nodes):
            covered = [cost[c] for c in (n.covers or [n.node]) if c in cost]
            macs = sum(c.macs for c in covered) if covered else None
            cells = [
                QTableWidgetItem(n.node),
                QTableWidgetItem(n.op_type),
                QTableWidgetItem(short_name(n.ep)),
                NumericItem(n.time_us, ".1f"),
                NumericItem(n.share, ".1%"),
                NumericItem(macs, ",.0f"),
                QTableWidgetItem(", ".join(n.covers) if n.fused else ""),
            ]
            for c, cell in enumerate(cells):
                self.profile_table.setItem(r, c, cell)
        self.work_scatter.show_profile(profile, self.document.cost)

    def _cost_changed(self, _cost: object) -> None:
        if self.document.profile is not None:
            self._fill_profile_table(self.document.profile)

    def _profile_selected(self) -> None:
        rows = {i.row() for i in self.profile_table.selectedItems()}
        if len(rows) == 1 and self.document.profile is not None:
            covers = self.document.profile.nodes[rows.pop()].covers
            if covers:
                self.node_chosen.emit(covers[0])

    def show_time_overlay(self) -> None:
        """Colour graph nodes by their share of the run time."""
        if self.document.profile is not None:
            self.document.overlay = Overlay(OverlayKind.TIME)

    def show_ep_overlay(self) -> None:
        """Colour graph nodes by the provider that ran them."""
        if self.document.profile is not None:
            self.document.overlay = Overlay(OverlayKind.PROVIDER)
