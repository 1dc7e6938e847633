"""The PyTorch export form: file, example inputs, output names, opset, dynamic axes, exporter."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.convert.convert_grammar import TORCH_DTYPES, parse_axis_change
from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.convert.export_recipes import ExportRecipe, TorchInput, torch_missing_hint
from edgestudio.core.inputs.grammar import parse_shape
from edgestudio.core.job_api.options import declared_options
from edgestudio.gui.forms.common import (
    JobDialog,
    PathPicker,
    ToleranceFields,
    command_preview,
    findings_html,
)
from edgestudio.gui.forms.option_widgets import on_change, option_widget, widget_value

CODE_WARNING = (
    "PyTorch files can contain code that runs when they are loaded. EdgeStudio opens them only "
    "in a separate worker process with weights-only loading forced, but open files only from "
    "sources you trust."
)


def torch_available() -> bool:
    """True when PyTorch can be imported (without importing it here)."""
    return importlib.util.find_spec("torch") is not None


class ExportDialog(JobDialog):
    """Edits an :class:`ExportRecipe`."""

    def __init__(self, parent: QWidget | None = None, start_dir: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Export from PyTorch")
        self.setObjectName("export_dialog")
        has_torch = self._enabled = torch_available()

        notice = QLabel(CODE_WARNING if has_torch else torch_missing_hint())
        notice.setObjectName("export_notice")
        notice.setWordWrap(True)
        notice.setTextFormat(Qt.TextFormat.RichText)
        notice.setStyleSheet(
            "background: #fff4e5; border: 1px solid #f0c36d; border-radius: 4px;"
            " padding: 6px; color: #5f4100;"
        )

        self.source = PathPicker(start_dir, "PyTorch files (*.pt2 *.pt);;All files (*)", save=False)
        self.inputs = QTableWidget(1, 3)
        self.inputs.setObjectName("inputs_table")
        self.inputs.setHorizontalHeaderLabels(["Input name", "Example shape", "dtype"])
        self.inputs.verticalHeader().setVisible(False)
        self.inputs.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.inputs.setFixedHeight(140)
        self._fill_input_row(0, "input", "1x3x224x224", "float32")
        add, remove = QPushButton("Add input"), QPushButton("Remove input")
        add.clicked.connect(self.add_input_row)
        remove.clicked.connect(self._remove_input_row)
        row_buttons = QHBoxLayout()
        row_buttons.addWidget(add)
        row_buttons.addWidget(remove)
        row_buttons.addStretch(1)

        # ExportRecipe's declared options (output names, opset, exporter): a new one appears here
        # without form code
        first = {"output_names": ("output",)}  # a name to start from
        defaults = ExportRecipe()
        self.options = {
            f.name: (f, opt, option_widget(f, opt, first.get(f.name, getattr(defaults, f.name))))
            for f, opt in declared_options(ExportRecipe)
        }
        self.dynamic = QLineEdit("input:0=batch")
        self.dynamic.setPlaceholderText("NAME:AXIS=SYMBOL, … e.g. input:0=batch")
        self.output = PathPicker("", "ONNX models (*.onnx)")
        self.tolerance = ToleranceFields()
        self.command = command_preview()
        self.findings = QLabel()
        self.findings.setWordWrap(True)
        self.findings.setTextFormat(Qt.TextFormat.RichText)

        form = QFormLayout()
        form.addRow("PyTorch file:", self.source)
        form.addRow("Inputs:", self.inputs)
        form.addRow("", self._wrap(row_buttons))
        for _, opt, widget in self.options.values():
            form.addRow(opt.label, widget)
        form.addRow("Dynamic axes:", self.dynamic)
        form.addRow("Output:", self.output)
        form.addRow("Check tolerance:", self.tolerance)
        form.addRow("Command:", self.command)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.run_button = self.buttons.addButton("Export", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(notice)
        layout.addLayout(form)
        layout.addWidget(self.findings)
        layout.addWidget(self.buttons)
        self.resize(720, 640)

        for signal in (
            self.source.changed,
            self.output.changed,
            self.dynamic.textChanged,
            self.tolerance.atol.textChanged,
            self.tolerance.rtol.textChanged,
        ):
            signal.connect(self.refresh)
        for _, _, widget in self.options.values():
            on_change(widget, self.refresh)
        self.inputs.itemChanged.connect(self.refresh)
        self.source.changed.connect(self._suggest_output)
        self.refresh()

    @staticmethod
    def _wrap(layout: QHBoxLayout) -> QWidget:
        widget = QWidget()
        layout.setContentsMargins(0, 0, 0, 0)
        widget.setLayout(layout)
        return widget

    def _fill_input_row(self, row: int, name: str, shape: str, dtype: str) -> None:
        self.inputs.setItem(row, 0, QTableWidgetItem(name))
        self.inputs.setItem(row, 1, QTableWidgetItem(shape))
        combo = QComboBox()
        combo.addItems(list(TORCH_DTYPES))
        combo.setCurrentText(dtype)
        combo.currentIndexChanged.connect(self.refresh)
        self.inputs.setCellWidget(row, 2, combo)

    def add_input_row(self, name: str = "", shape: str = "1", dtype: str = "float32") -> None:
        """Append an input row."""
        row = self.inputs.rowCount()
        self.inputs.insertRow(row)
        self._fill_input_row(row, name or f"input{row}", shape, dtype)
        self.refresh()

    def _remove_input_row(self) -> None:
        if self.inputs.rowCount() > 1:
            self.inputs.removeRow(self.inputs.rowCount() - 1)
            self.refresh()

    def option(self, name: str) -> QWidget:
        """The field for ExportRecipe's declared option ``name`` (``opset``, …)."""
        return self.options[name][2]

    def _suggest_output(self, text: str) -> None:
        if text and not self.output.path():
            self.output.edit.setText(str(Path(text).with_suffix(".onnx")))

    def set_inputs(self, rows: list[tuple[str, str, str]]) -> None:
        """Replace the inputs table with (name, shape, dtype) rows."""
        self.inputs.setRowCount(0)
        for name, shape, dtype in rows:
            self.inputs.insertRow(self.inputs.rowCount())
            self._fill_input_row(self.inputs.rowCount() - 1, name, shape, dtype)
        self.refresh()

    def parse(self) -> tuple[ExportRecipe | None, list[str]]:
        """Return (recipe, problems); the recipe is None when something cannot be parsed."""
        problems: list[str] = []
        inputs: list[TorchInput] = []
        for r in range(self.inputs.rowCount()):
            name_item, shape_item = self.inputs.item(r, 0), self.inputs.item(r, 1)
            combo = self.inputs.cellWidget(r, 2)
            name = name_item.text().strip() if name_item else ""
            try:
                shape = parse_shape(shape_item.text() if shape_item else "")
            except ValueError as exc:
                problems.append(f"Input {r + 1}: {exc}")
                continue
            dtype = combo.currentText() if isinstance(combo, QComboBox) else "float32"
            if not name:
                problems.append(f"Input {r + 1} needs a name.")
            inputs.append(TorchInput(name, shape, dtype))
        dynamic: list[DimChange] = []
        for part in filter(None, (p.strip() for p in self.dynamic.text().split(","))):
            try:
                dynamic.append(parse_axis_change(part, symbolic=True))
            except ValueError as exc:
                problems.append(f"Dynamic axes: {exc}")
        names = {i.name for i in inputs}
        problems += [
            f"Dynamic axis names '{d.tensor}', which is not an input."
            for d in dynamic
            if d.tensor not in names
        ]
        if not self.source.path():
            problems.append("Choose a .pt2 or .pt file.")
        elif not Path(self.source.path()).is_file():
            problems.append(f"{self.source.path()} does not exist.")
        if not self.output.path():
            problems.append("Choose an output file.")
        if not self._enabled:
            problems.append("PyTorch is not installed.")
        recipe = ExportRecipe(
            model=self.source.path(),
            output=self.output.path(),
            overwrite=self._overwrite,
            inputs=tuple(inputs),
            dynamic=tuple(dynamic),
            tolerance=self.tolerance.tolerance(),
            **{name: widget_value(f, widget) for name, (f, _, widget) in self.options.items()},
        )
        return recipe, problems

    def recipe(self) -> ExportRecipe:
        """The recipe as the form stands."""
        recipe, _ = self.parse()
        assert recipe is not None
        return recipe

    def refresh(self) -> None:
        """Re-validate; update findings, the command line and the Export button."""
        recipe, problems = self.parse()
        self.findings.setText(findings_html(problems, []))
        self.findings.setVisible(bool(problems))
        if recipe is not None:
            self.command.setText(recipe.command_line())
        self.run_button.setEnabled(not problems)

    def has_blockers(self) -> bool:
        """True while the form holds something that stops the job."""
        return bool(self.parse()[1])
