"""The Inputs panel: the input specification every job of this model feeds it with.

One row per model input: its type, the shape the model declares, the concrete shape and values
the jobs use, and why they were chosen. Shape and values can be edited (``1x3x224x224``,
``0:30522``, ``ones``…); edits are remembered for the model and used by every job started from
the window (calibration with synthetic data, the conversion check, bench, profile). "Find inputs"
runs the model on them in the background and shows whether it ran.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.inputs.grammar import InputOverrides, parse_named_range, parse_named_shape
from edgestudio.core.inputs.input_derivation import declared_inputs
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.workspace.document import ModelDocument

COLUMNS = ["Input", "Type", "Declared shape", "Shape used", "Values", "Why"]
SHAPE_COL, VALUES_COL = 3, 4
_STATES = {
    "unknown": (
        "#616161",
        "Not run yet: press Find inputs (Ctrl+I) to derive the inputs from the "
        "graph and run the model on them in the background.",
    ),
    "running": ("#1565c0", "Running the model on candidate inputs…"),
    "edited": (
        "#e65100",
        "Edited: press Find inputs (Ctrl+I) to check that the model runs on "
        "them. Every job started from this window uses them.",
    ),
}


def _user_columns(name: str, shapes: dict[str, str], ranges: dict[str, str]) -> set[int]:
    """The columns of input ``name`` that the user set (shown bold)."""
    return {col for col, given in ((SHAPE_COL, shapes), (VALUES_COL, ranges)) if name in given}


class InputsPanel(QWidget):
    """Shows and edits one model's input specification; ``find_requested`` starts the job."""

    find_requested = Signal(object)  # an InputsRecipe

    def __init__(
        self, document: ModelDocument, model: onnx.ModelProto, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.path: Path = document.path
        self._filling = False
        intro = QLabel(
            "The inputs every job feeds this model with — calibration with synthetic "
            "data, the conversion check, benchmarks and profiles. Edit a shape or "
            "the values to override what was derived from the graph."
        )
        intro.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("inputs_table")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setAlternatingRowColors(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        header.setMinimumSectionSize(72)
        for col, tip in (
            (SHAPE_COL, "Type a shape to use: 1x3x224x224, or 'scalar'"),
            (
                VALUES_COL,
                "Type the values: LOW:HIGH (integers below HIGH), "
                "V1,V2,…, ones, zeros, normal or bool",
            ),
        ):
            header_item = self.table.horizontalHeaderItem(col)
            if header_item is not None:
                header_item.setToolTip(tip)
        self.table.itemChanged.connect(self._edited)
        self.status = QLabel()
        self.status.setObjectName("inputs_status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.find_button = QPushButton("Find inputs")
        self.find_button.setObjectName("find_inputs")
        self.find_button.setShortcut(QKeySequence("Ctrl+I"))
        self.find_button.setToolTip("Run the model on these inputs in the background (Ctrl+I)")
        self.find_button.clicked.connect(self.request_find)
        self.reset_button = QPushButton("Reset to derived")
        self.reset_button.setObjectName("reset_inputs")
        self.reset_button.clicked.connect(self.reset)
        buttons = QHBoxLayout()
        buttons.addWidget(self.find_button)
        buttons.addWidget(self.reset_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self._declared = declared_inputs(model)
        document.events.input_spec.connect(self._spec_changed)
        document.input_spec_failed.connect(self.show_error)
        document.restored.connect(self._show_document)
        self._show_document()

    @property
    def overrides(self) -> InputOverrides:
        """What the user set (the document's)."""
        return self.document.inputs

    @property
    def spec(self) -> InputSpecification | None:
        """The specification the model last ran on (the document's)."""
        return self.document.input_spec

    def _show_document(self) -> None:
        if self.spec is not None:
            self.show_spec(self.spec)
        else:
            self._fill_declared()
            self._set_state("edited" if self.overrides else "unknown")

    def _spec_changed(self, spec: InputSpecification | None) -> None:
        if spec is not None:
            self.show_spec(spec)

    # ----- state -----------------------------------------------------------------------------
    def _set_state(self, state: str, text: str = "") -> None:
        colour, default = _STATES.get(state, ("#616161", ""))
        if state == "verified":
            colour = "#2e7d32"
        elif state == "failed":
            colour = "#c62828"
        self.state = state
        self.status.setText(text or default)
        self.status.setStyleSheet(f"color: {colour}; font-weight: 600;")
        self.find_button.setEnabled(state != "running")
        self.reset_button.setEnabled(bool(self.overrides))

    def request_find(self) -> None:
        """Ask for the inputs job with the current overrides."""
        self._set_state("running")
        self.find_requested.emit(
            InputsRecipe(
                model=str(self.path), shapes=self.overrides.shapes, ranges=self.overrides.ranges
            )
        )

    def show_spec(self, spec: InputSpecification) -> None:
        """The job found ``spec`` and the model ran on it."""
        self._fill_spec(spec)
        shapes = ", ".join(f"{e.name} {e.shape_text()}" for e in spec.inputs)
        self._set_state("verified", f"✓ The model runs on these inputs ({spec.note}): {shapes}.")

    def show_error(self, message: str) -> None:
        """The job could not find inputs the model runs on."""
        self._set_state("failed", f"✗ {message}")

    def reset(self) -> None:
        """Forget the user's edits and derive again."""
        self._set_overrides(InputOverrides())
        self._fill_declared()
        self.request_find()

    # ----- table -----------------------------------------------------------------------------
    def _row(self, r: int, cells: list[str], user: set[int]) -> None:
        for c, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            editable = c in (SHAPE_COL, VALUES_COL)
            flags = item.flags()
            item.setFlags(
                flags | Qt.ItemFlag.ItemIsEditable
                if editable
                else flags & ~Qt.ItemFlag.ItemIsEditable
            )
            if c in user:
                font = QFont(item.font())
                font.setBold(True)
                item.setFont(font)
            self.table.setItem(r, c, item)

    def _fill_declared(self) -> None:
        shapes, ranges = self._override_maps()
        self._filling = True
        self.table.setRowCount(len(self._declared))
        for r, inp in enumerate(self._declared):
            declared = "[" + ", ".join("?" if d is None else str(d) for d in inp.shape) + "]"
            user = _user_columns(inp.name, shapes, ranges)
            self._row(
                r,
                [
                    inp.name,
                    inp.dtype,
                    declared,
                    shapes.get(inp.name, ""),
                    ranges.get(inp.name, ""),
                    "set by you" if user else "",
                ],
                user,
            )
        self._filling = False

    def _fill_spec(self, spec: InputSpecification) -> None:
        shapes, ranges = self._override_maps()
        self._filling = True
        self.table.setRowCount(len(spec.inputs))
        for r, e in enumerate(spec.inputs):
            user = _user_columns(e.name, shapes, ranges)
            self._row(
                r,
                [
                    e.name,
                    e.dtype,
                    e.declared_text(),
                    e.shape_text(),
                    ranges.get(e.name, e.domain.cli_text()),
                    e.reason,
                ],
                user,
            )
        self._filling = False

    def _override_maps(self) -> tuple[dict[str, str], dict[str, str]]:
        def split(items: tuple[str, ...]) -> dict[str, str]:
            return {name: value for name, _, value in (t.rpartition("=") for t in items)}

        return split(self.overrides.shapes), split(self.overrides.ranges)

    def _edited(self, item: QTableWidgetItem) -> None:
        if self._filling or item.column() not in (SHAPE_COL, VALUES_COL):
            return
        name_item = self.table.item(item.row(), 0)
        if name_item is None:
            return
        name, text = name_item.text(), item.text().strip()
        shapes, ranges = self._override_maps()
        target = shapes if item.column() == SHAPE_COL else ranges
        derived = self._derived_text(name, item.column())
        if not text or text == derived:
            target.pop(name, None)
        else:
            # checked here, where it is typed, by the grammar the command line uses
            parse = parse_named_shape if item.column() == SHAPE_COL else parse_named_range
            try:
                parse(f"{name}={text}")
            except ValueError as exc:
                column = "Shape used" if item.column() == SHAPE_COL else "Values"
                self._set_state("failed", f"{column} of {exc} — not applied.")
                return
            target[name] = text
        self._set_overrides(
            InputOverrides(
                tuple(f"{k}={v}" for k, v in shapes.items()),
                tuple(f"{k}={v}" for k, v in ranges.items()),
            )
        )
        font = QFont(item.font())
        font.setBold(name in target)
        item.setFont(font)
        self._set_state("edited")

    def _derived_text(self, name: str, column: int) -> str:
        if self.spec is None:
            return ""
        try:
            entry = self.spec.entry(name)
        except KeyError:
            return ""
        return entry.shape_text() if column == SHAPE_COL else entry.domain.cli_text()

    def _set_overrides(self, overrides: InputOverrides) -> None:
        self.document.inputs = overrides
