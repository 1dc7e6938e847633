"""The Convert form: target opset and per-axis dims, with problems flagged before the job runs."""

from __future__ import annotations

import typing
from pathlib import Path

import onnx
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHeaderView,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.convert.conversion_plan import io_dims, plan_dim_changes, plan_opset_conversion
from edgestudio.core.convert.convert_grammar import parse_dim_value
from edgestudio.core.convert.convert_recipes import ConvertRecipe, DimChange
from edgestudio.core.job_api.options import declared_options
from edgestudio.core.model.summary import ModelSummary
from edgestudio.gui.forms.common import (
    JobDialog,
    PathPicker,
    ToleranceFields,
    command_preview,
    findings_html,
)
from edgestudio.gui.forms.option_widgets import option_widget

NEW_COLUMN = 4


def default_output(path: Path, suffix: str) -> str:
    """``model.onnx`` -> ``model_<suffix>.onnx`` in the same folder."""
    return str(path.with_name(f"{path.stem}_{suffix}.onnx"))


class ConvertDialog(JobDialog):
    """Edits a :class:`ConvertRecipe` for one open model."""

    def __init__(
        self, model: onnx.ModelProto, summary: ModelSummary, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Convert {Path(summary.path).name}")
        self.setObjectName("convert_dialog")
        self.model = model
        self.summary = summary
        self.source = Path(summary.path)

        current = summary.default_opset
        facts = QLabel(
            f"Current opset <b>{current}</b> · operators need ≥ <b>{summary.min_opset_required}"
            f"</b> · onnxruntime {summary.runtime_version or '?'} runs ≤ "
            f"<b>{summary.max_runtime_opset or '?'}</b> · onnx knows ≤ {summary.max_onnx_opset}"
        )
        self.opset_box = QGroupBox("Change opset")
        self.opset_box.setCheckable(True)
        self.opset_box.setChecked(False)
        self.opset = QSpinBox()
        self.opset.setRange(1, summary.max_onnx_opset)
        self.opset.setValue(
            min(summary.max_runtime_opset or summary.max_onnx_opset, summary.max_onnx_opset)
            if current is None
            else current
        )
        opset_form = QFormLayout(self.opset_box)
        opset_form.addRow("Target opset:", self.opset)

        dims_box = QGroupBox("Input and output dims")
        self.dims_table = self._dims_table()
        hint = QLabel(
            "Type a name (e.g. <i>batch</i>) to make a dim dynamic, a number to fix it; "
            "leave blank to keep it."
        )
        hint.setWordWrap(True)
        dims_layout = QVBoxLayout(dims_box)
        dims_layout.addWidget(hint)
        dims_layout.addWidget(self.dims_table)

        self.findings = QLabel()
        self.findings.setObjectName("findings")
        self.findings.setWordWrap(True)
        self.findings.setTextFormat(Qt.TextFormat.RichText)
        self.output = PathPicker(default_output(self.source, "converted"), "ONNX models (*.onnx)")
        self.tolerance = ToleranceFields()
        self.command = command_preview()
        # Declared once on ConvertRecipe: the form's check box and the CLI flag agree.
        field_, declared = next(
            (f, o) for f, o in declared_options(ConvertRecipe) if f.name == "fix_output_shapes"
        )
        self.fix_output_shapes = typing.cast(QCheckBox, option_widget(field_, declared, False))
        self.fix_output_shapes.setObjectName("fix_output_shapes")
        self.fix_output_shapes.setToolTip(declared.help)
        form = QFormLayout()
        form.addRow(self.fix_output_shapes)
        form.addRow("Output:", self.output)
        form.addRow("Check tolerance:", self.tolerance)
        form.addRow("Command:", self.command)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.run_button = self.buttons.addButton("Run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(facts)
        layout.addWidget(self.opset_box)
        layout.addWidget(dims_box, 1)
        layout.addWidget(self.findings)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self.resize(760, 560)

        self.opset_box.toggled.connect(self.refresh)
        self.fix_output_shapes.toggled.connect(self.refresh)
        self.opset.valueChanged.connect(self.refresh)
        self.dims_table.itemChanged.connect(self.refresh)
        self.output.changed.connect(self.refresh)
        self.tolerance.atol.textChanged.connect(self.refresh)
        self.tolerance.rtol.textChanged.connect(self.refresh)
        self.refresh()

    def _dims_table(self) -> QTableWidget:
        input_names = {v.name for v in self.model.graph.input}
        rows = [
            (name, axis, dim)
            for name, dims in io_dims(self.model).items()
            for axis, dim in enumerate(dims)
        ]
        table = QTableWidget(len(rows), 5)
        table.setObjectName("dims_table")
        table.setHorizontalHeaderLabels(["Tensor", "Kind", "Axis", "Current", "New"])
        table.verticalHeader().setVisible(False)
        table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        for r, (name, axis, dim) in enumerate(rows):
            kind = "input" if name in input_names else "output"
            for c, text in enumerate([name, kind, str(axis), "?" if dim is None else str(dim)]):
                item = QTableWidgetItem(text)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                table.setItem(r, c, item)
            new = QTableWidgetItem("")
            new.setToolTip("blank: keep · a name: dynamic · a number: fixed")
            table.setItem(r, NEW_COLUMN, new)
        header = table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in range(1, 5):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        header.setMinimumSectionSize(70)
        return table

    def set_new_dim(self, tensor: str, axis: int, value: str) -> None:
        """Fill the New cell of ``tensor`` axis ``axis`` (used by tests and presets)."""
        for r in range(self.dims_table.rowCount()):
            name, ax = self.dims_table.item(r, 0), self.dims_table.item(r, 2)
            if name and ax and name.text() == tensor and int(ax.text()) == axis:
                cell = self.dims_table.item(r, NEW_COLUMN)
                assert cell is not None
                cell.setText(value)
                return
        raise KeyError(f"{tensor}:{axis}")

    def dim_changes(self) -> list[DimChange]:
        """The dims the user changed."""
        changes = []
        for r in range(self.dims_table.rowCount()):
            cells = [self.dims_table.item(r, c) for c in (0, 2, NEW_COLUMN)]
            if any(c is None for c in cells):
                continue
            name, axis, new = (c.text() for c in cells if c is not None)
            value = parse_dim_value(new)
            if value is not None:
                changes.append(DimChange(name, int(axis), value))
        return changes

    def recipe(self) -> ConvertRecipe:
        """The recipe as the form stands."""
        return ConvertRecipe(
            model=str(self.source),
            output=self.output.path(),
            overwrite=self._overwrite,
            opset=self.opset.value() if self.opset_box.isChecked() else None,
            dims=tuple(self.dim_changes()),
            tolerance=self.tolerance.tolerance(),
            fix_output_shapes=self.fix_output_shapes.isChecked(),
        )

    def blockers_and_warnings(self) -> tuple[list[str], list[str]]:
        """Everything the form knows is wrong (blockers) or risky (warnings) right now."""
        blockers: list[str] = []
        warnings: list[str] = []
        recipe = self.recipe()
        if recipe.opset is None and not recipe.dims and not recipe.fix_output_shapes:
            blockers.append(
                "Nothing to do: tick Change opset, type a new dim or fix the output "
                "shape declarations."
            )
        if recipe.opset is not None:
            plan = plan_opset_conversion(self.model, recipe.opset, self.summary.max_runtime_opset)
            blockers += plan.blockers
            warnings += plan.warnings
        if recipe.dims:
            plan = plan_dim_changes(self.model, list(recipe.dims))
            blockers += plan.blockers
            warnings += plan.warnings
        if not recipe.output:
            blockers.append("Choose an output file.")
        elif Path(recipe.output).resolve() == self.source.resolve():
            blockers.append("The output must not be the input model.")
        return blockers, warnings

    def refresh(self) -> None:
        """Re-validate and update the findings, the command line and the Run button."""
        blockers, warnings = self.blockers_and_warnings()
        self.findings.setText(findings_html(blockers, warnings))
        self.findings.setVisible(bool(blockers or warnings))
        self.command.setText(self.recipe().command_line())
        self.run_button.setEnabled(not blockers)

    def has_blockers(self) -> bool:
        """True while the form holds something that stops the job."""
        return bool(self.blockers_and_warnings()[0])
