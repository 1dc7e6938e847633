"""Performance › Edge vs cloud: the measured edge latency against a cloud round trip (network,
upload, queue, inference) as the payload grows, with the break-even payload."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.perf.edge_cloud import (
    EdgeCloudInputs,
    break_even_payload_kb,
    cloud_total_ms,
    verdict,
)


def _spin(low: float, high: float, value: float) -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setRange(low, high)
    spin.setDecimals(2)
    spin.setValue(value)
    return spin


class EdgeCloudView(QWidget):
    """The inputs on the left, the verdict under them, the two totals plotted on the right."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edge_ms = _spin(0, 1e6, 10.0)
        self.edge_ms.setDecimals(4)
        self.rtt = _spin(0, 1e5, 40.0)
        self.upload = _spin(0.01, 1e5, 10.0)
        self.payload = _spin(0, 1e6, 150.0)
        self.queue = _spin(0, 1e5, 5.0)
        self.cloud = _spin(0, 1e5, 2.0)
        form = QFormLayout()
        self.edge_label = QLabel("Edge latency (ms, measured):")
        rows: list[tuple[QLabel | str, QDoubleSpinBox]] = [
            (self.edge_label, self.edge_ms),
            ("Network round trip (ms):", self.rtt),
            ("Upload bandwidth (Mbit/s):", self.upload),
            ("Payload per request (kB):", self.payload),
            ("Server queue (ms):", self.queue),
            ("Cloud inference (ms):", self.cloud),
        ]
        for caption, spin in rows:
            form.addRow(caption, spin)
            spin.valueChanged.connect(self.refresh)
        self.verdict = QLabel()
        self.verdict.setObjectName("edge_cloud_verdict")
        self.verdict.setWordWrap(True)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setObjectName("edge_cloud_plot")
        self.legend = self.plot.getPlotItem().addLegend(offset=(10, 10))
        layout = QHBoxLayout(self)
        left = QVBoxLayout()
        left.addLayout(form)
        left.addWidget(self.verdict)
        left.addStretch(1)
        layout.addLayout(left, 1)
        layout.addWidget(self.plot, 2)
        self.refresh()

    def set_measured(self, edge_ms: float, where: str) -> None:
        """The edge latency a benchmark measured, and where."""
        self.edge_ms.setValue(edge_ms)
        self.edge_label.setText(f"Edge latency (ms, measured on {where}):")

    def inputs(self) -> EdgeCloudInputs:
        """The view's inputs."""
        return EdgeCloudInputs(
            self.edge_ms.value(),
            self.rtt.value(),
            self.upload.value(),
            self.payload.value(),
            self.queue.value(),
            self.cloud.value(),
        )

    def refresh(self) -> None:
        """Redraw totals against payload size with the break-even point."""
        i = self.inputs()
        self.verdict.setText(verdict(i))
        plot = self.plot.getPlotItem()
        plot.clear()
        self.legend.clear()
        top = max(i.payload_kb * 3, (break_even_payload_kb(i) or 0) * 1.5, 10.0)
        kb = np.linspace(0, top, 200)
        plot.plot(
            kb,
            [cloud_total_ms(i, k) for k in kb],
            pen=pg.mkPen("#d32f2f", width=2),
            name="cloud total",
        )
        plot.plot(kb, np.full_like(kb, i.edge_ms), pen=pg.mkPen("#2e7d32", width=2), name="edge")
        dashed = pg.mkPen("#555", style=Qt.PenStyle.DashLine)
        plot.addItem(
            pg.InfiniteLine(
                i.payload_kb, pen=dashed, label="your payload", labelOpts={"position": 0.9}
            )
        )
        even = break_even_payload_kb(i)
        if even is not None and even <= top:
            plot.addItem(pg.ScatterPlotItem([even], [i.edge_ms], size=10, brush="k"))
        plot.setLabel("bottom", "payload per request (kB)")
        plot.setLabel("left", "latency (ms)")
