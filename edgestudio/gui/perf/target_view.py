"""Performance › Target: which nodes the target's accelerator takes and, for each it leaves to
the CPU, the provider's own reason; before → after the app's fixes; and compiling the binary
a device loads (the document's last check and compile)."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.targets.target_recipe import (
    ON_CPU,
    PLACEMENT_COLOURS,
    TargetCheck,
    TargetCompile,
    placement_categories,
)
from edgestudio.core.workspace.document import ModelDocument, Overlay, OverlayKind
from edgestudio.gui.widgets.tables import results_table

TARGET_COLUMNS = ["Node", "Op", "Runs on", "The provider's reason"]
EMPTY = (
    "Tools › Check on target (Ctrl+Shift+G) asks the Qualcomm NPU's own provider, emulated on "
    "this machine, which nodes of this model it takes — and why not the others."
)


class TargetView(QWidget):
    """The last target check: a summary, every node's placement (those left to the CPU first),
    and the actions that follow (check again, colour the graph, compile)."""

    node_chosen = Signal(str)
    check_requested = Signal()
    compile_requested = Signal(str)  # the device to compile on ("": this machine's emulator)

    def __init__(self, document: ModelDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.summary = QLabel(EMPTY)
        self.summary.setObjectName("target_summary")
        self.summary.setWordWrap(True)
        self.compiled = QLabel()
        self.compiled.setObjectName("target_compiled")
        self.compiled.setWordWrap(True)
        self.only_cpu = QCheckBox("Only the nodes left to the CPU")
        self.only_cpu.toggled.connect(self._fill)
        self.check_button = QPushButton("Check on target")
        self.check_button.clicked.connect(self.check_requested)
        self.overlay_button = QPushButton("Colour the graph by placement")
        self.overlay_button.clicked.connect(
            lambda: setattr(self.document, "overlay", Overlay(OverlayKind.TARGET))
        )
        self.compile_button = QPushButton("Compile for the NPU…")
        self.compile_button.setObjectName("compile_for_target")
        self.compile_button.setToolTip(
            "Write the EPContext model and the QNN context binary a device loads, proven "
            "here to give the emulated run's outputs"
        )
        self.compile_on = QComboBox()
        self.compile_on.setObjectName("compile_on")
        self.compile_on.setToolTip(
            "Where to compile: this machine's emulator, or a device with the QNN package "
            "(a board over SSH, another environment here), which reloads and runs the binary"
        )
        self.list_devices()
        self.compile_button.clicked.connect(
            lambda: self.compile_requested.emit(self.compile_on.currentData() or "")
        )
        buttons = QHBoxLayout()
        for widget in (self.check_button, self.overlay_button, self.compile_button):
            buttons.addWidget(widget)
        buttons.addWidget(QLabel("on"))
        buttons.addWidget(self.compile_on)
        buttons.addStretch(1)
        # a device's long name must not widen the window (the view's row sets its minimum)
        self.compile_on.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.compile_on.setMinimumContentsLength(16)
        self.table = results_table(TARGET_COLUMNS, "target_table")
        # a real model's node names are long: the name is elided (whole in its tooltip) so the
        # provider's reason keeps the room
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(0, 260)
        self.table.itemSelectionChanged.connect(self._selected)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addLayout(buttons)
        layout.addWidget(self.only_cpu)  # a row of its own: with the buttons, 900 px wide
        layout.addWidget(self.table, 1)
        layout.addWidget(self.compiled)
        document.events.target.connect(self.show_check)
        document.events.compiled.connect(self.show_compiled)
        self.show_check(document.target)
        self.show_compiled(document.compiled)

    def list_devices(self) -> None:
        """Offer this machine first, then every device the user added (the list may have
        changed; an unreadable device file offers this machine alone)."""
        from edgestudio.core.remote.devices import DeviceError, load_devices

        chosen = self.compile_on.currentData()
        try:
            names = sorted(load_devices())
        except DeviceError:
            names = []
        self.compile_on.clear()
        self.compile_on.addItem("this machine (emulated)", "")
        for name in names:
            self.compile_on.addItem(name, name)
        self.compile_on.setCurrentIndex(max(0, self.compile_on.findData(chosen)))

    def show_check(self, check: TargetCheck | None) -> None:
        """Show ``check`` (None: nothing checked yet)."""
        self.list_devices()
        self.overlay_button.setEnabled(check is not None and not check.final.session_error)
        # the compile job refuses a model the NPU does not take whole: offered only then
        self.compile_button.setEnabled(check is not None and check.final.whole)
        self.only_cpu.setEnabled(check is not None)
        if check is None:
            self.summary.setText(EMPTY)
            self.table.setRowCount(0)
            return
        where = escape(f"{check.target} v{check.htp_arch}") + (
            f", emulated by {escape(check.provider)}" if check.emulated and check.provider else ""
        )
        lines = [f"<b>Placement on {where}</b>: {escape(check.final.text())}."]
        if check.after is not None:
            lines.append(
                escape(
                    f"As the model is: {check.before.text()}; after {', '.join(check.fixes)}: "
                    f"{check.after.text()}."
                )
            )
        if check.final.whole:
            lines.append("Every node runs on the NPU, but the graph-edge Q/DQ it leaves by design.")
        elif not check.final.session_error:
            reasons = check.final.reasons()
            lines.append(
                "Left to the CPU: "
                + escape("; ".join(f"{count} × {reason}" for reason, count in reasons.items()))
                + "."
            )
        # names and the provider's words are text, not markup (a reason may hold "<…>")
        self.summary.setText("<br>".join(lines))
        self._fill()

    def show_compiled(self, compiled: TargetCompile | None) -> None:
        """Say what was compiled last (nothing: the line is empty)."""
        self.compiled.setText(
            ""
            if compiled is None
            else f"Compiled {compiled.context_model} and {compiled.binary}: {compiled.text()}."
        )

    def _fill(self) -> None:
        check = self.document.target
        if check is None:
            return
        categories = placement_categories(check.final)
        nodes = check.final.nodes
        if self.only_cpu.isChecked():
            nodes = [n for n in nodes if n.placed == ON_CPU]
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(nodes))
        for row, node in enumerate(nodes):
            where = categories.get(node.node, node.placed)
            cells = [node.node, node.op_type, where, node.reason]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if col == 2 and where in PLACEMENT_COLOURS:
                    item.setForeground(QColor(PLACEMENT_COLOURS[where]))
                self.table.setItem(row, col, item)
        self.table.setSortingEnabled(True)
        self.table.sortItems(2)  # by where it runs: the CPU's rows ("CPU (…)") first

    def _selected(self) -> None:
        rows = {i.row() for i in self.table.selectedItems()}
        if len(rows) == 1:
            item = self.table.item(rows.pop(), 0)
            if item is not None:
                self.node_chosen.emit(item.text())
