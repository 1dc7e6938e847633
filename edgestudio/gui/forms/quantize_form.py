"""The Quantize form: a mode, only the options that mode takes, calibration data, and ORT's
rules explained before the job starts."""

from __future__ import annotations

from pathlib import Path

import onnx
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.convert.conversion_plan import model_opset
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.parsing import parse_data_source, parse_floats
from edgestudio.core.quant.quant_recipes import (
    CALIB_METHODS,
    QUANT_MODES,
    QUANT_TYPES,
    QuantRecipe,
    check_rules,
)
from edgestudio.gui.forms.common import JobDialog, PathPicker, command_preview


def _list(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


class QuantizeDialog(JobDialog):
    """Edits a :class:`QuantRecipe`; ``analyze_data()`` says what to evaluate on afterwards."""

    def __init__(self, model: onnx.ModelProto, model_path: Path, excluded: list[str],
                 parent: QWidget | None = None, base: QuantRecipe | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Quantize {model_path.name}")
        self.setObjectName("quantize_dialog")
        self.model_path = model_path
        self.opset = model_opset(model)
        self.node_names = {n.name for n in model.graph.node}
        base = base or QuantRecipe(model=str(model_path))

        self.mode = QComboBox()
        for m in QUANT_MODES.values():
            self.mode.addItem(m.label, m.name)
        self.mode.setCurrentIndex(list(QUANT_MODES).index(base.mode))

        self.types_box = QGroupBox("Types")
        types = QFormLayout(self.types_box)
        self.activation_type = QComboBox()
        self.activation_type.addItems(list(QUANT_TYPES))
        self.activation_type.setCurrentText(base.activation_type)
        self.weight_type = QComboBox()
        self.weight_type.addItems(list(QUANT_TYPES))
        self.weight_type.setCurrentText(base.weight_type)
        self.per_channel = QCheckBox("Per-channel weights")
        self.per_channel.setChecked(base.per_channel)
        self.reduce_range = QCheckBox("Reduce range (7-bit weights)")
        self.reduce_range.setChecked(base.reduce_range)
        self.act_sym = QCheckBox("Symmetric activations")
        self.act_sym.setChecked(base.activation_symmetric)
        self.weight_sym = QCheckBox("Symmetric weights")
        self.weight_sym.setChecked(base.weight_symmetric)
        self.op_types = QLineEdit(", ".join(base.op_types))
        self.op_types.setPlaceholderText("all supported (e.g. Conv, MatMul)")
        types.addRow("Activations:", self.activation_type)
        types.addRow("Weights:", self.weight_type)
        types.addRow(self.per_channel)
        types.addRow(self.reduce_range)
        types.addRow(self.act_sym)
        types.addRow(self.weight_sym)
        types.addRow("Op types:", self.op_types)

        self.calib_box = QGroupBox("Calibration")
        calib = QFormLayout(self.calib_box)
        self.calib_method = QComboBox()
        self.calib_method.addItems(list(CALIB_METHODS))
        self.calib_method.setCurrentText(base.calib_method)
        self.percentile = QDoubleSpinBox()
        self.percentile.setDecimals(4)
        self.percentile.setRange(0.0, 100.0)
        self.percentile.setValue(base.percentile)
        default_calib = base.calib.path if base.calib else self._guess_data("calib")
        self.calib_path = PathPicker(default_calib, "Data (*.npz);;All files (*)", save=False)
        self.calib_path.edit.setPlaceholderText(".npz, a folder, or synthetic:32")
        self.samples = QSpinBox()
        self.samples.setRange(0, 1_000_000)
        self.samples.setSpecialValueText("all")
        self.image_size = QLineEdit("")
        self.image_size.setPlaceholderText("images: resize to HxW, e.g. 224x224")
        self.image_mean = QLineEdit("0")
        self.image_std = QLineEdit("1")
        self.preprocess = QCheckBox("Run ORT's pre-processing (quant_pre_process)")
        self.preprocess.setChecked(base.preprocess)
        calib.addRow("Method:", self.calib_method)
        calib.addRow("Percentile:", self.percentile)
        calib.addRow("Data:", self.calib_path)
        calib.addRow("Samples:", self.samples)
        calib.addRow("Image size:", self.image_size)
        calib.addRow("Image mean / std:", self._pair(self.image_mean, self.image_std))

        self.fp16_box = QGroupBox("float16")
        fp16 = QFormLayout(self.fp16_box)
        self.keep_io = QCheckBox("Keep float32 inputs and outputs")
        self.keep_io.setChecked(base.keep_io_types)
        self.block_ops = QLineEdit(", ".join(base.op_block_list))
        self.block_ops.setPlaceholderText("op types to keep in float32")
        fp16.addRow(self.keep_io)
        fp16.addRow("Block ops:", self.block_ops)

        self.int4_box = QGroupBox("4-bit")
        int4 = QFormLayout(self.int4_box)
        self.block_size = QSpinBox()
        self.block_size.setRange(16, 4096)
        self.block_size.setValue(base.block_size)
        self.int4_sym = QCheckBox("Symmetric")
        self.int4_sym.setChecked(base.int4_symmetric)
        int4.addRow("Block size:", self.block_size)
        int4.addRow(self.int4_sym)

        self.exclude = QLineEdit(", ".join(sorted(set(base.exclude) | set(excluded))))
        self.exclude.setObjectName("exclude")
        self.exclude.setPlaceholderText("node names to keep in float (pick them in the graph)")
        self.analyze = QCheckBox("Analyze the result afterwards on:")
        self.analyze.setChecked(True)
        self.eval_path = PathPicker(self._guess_data("eval") or default_calib,
                                    "Data (*.npz);;All files (*)", save=False)
        self.output = PathPicker(str(model_path.with_name(f"{model_path.stem}_{base.mode}.onnx")),
                                 "ONNX models (*.onnx)")
        self.messages = QLabel()
        self.messages.setObjectName("rules")
        self.messages.setWordWrap(True)
        self.messages.setTextFormat(Qt.TextFormat.RichText)
        self.command = command_preview()

        form = QFormLayout()
        form.addRow("Mode:", self.mode)
        form.addRow("Exclude nodes:", self.exclude)
        form.addRow(self.preprocess)
        form.addRow(self.analyze, self.eval_path)
        form.addRow("Output:", self.output)
        form.addRow("Command:", self.command)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.run_button = self.buttons.addButton("Quantize", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        for box in (self.types_box, self.calib_box, self.fp16_box, self.int4_box):
            layout.addWidget(box)
        layout.addWidget(self.messages)
        layout.addWidget(self.buttons)
        self.resize(720, 760)

        for w in (self.mode, self.activation_type, self.weight_type, self.calib_method):
            w.currentIndexChanged.connect(self.refresh)
        for c in (self.per_channel, self.reduce_range, self.act_sym, self.weight_sym,
                  self.preprocess, self.keep_io, self.int4_sym, self.analyze):
            c.toggled.connect(self.refresh)
        for e in (self.op_types, self.exclude, self.block_ops, self.image_size, self.image_mean,
                  self.image_std):
            e.textChanged.connect(self.refresh)
        for p in (self.calib_path, self.output, self.eval_path):
            p.changed.connect(self.refresh)
        self.percentile.valueChanged.connect(self.refresh)
        self.samples.valueChanged.connect(self.refresh)
        self.block_size.valueChanged.connect(self.refresh)
        self.mode.currentIndexChanged.connect(self._suggest_output)
        self.refresh()

    @staticmethod
    def _pair(a: QWidget, b: QWidget) -> QWidget:
        from PySide6.QtWidgets import QHBoxLayout

        w = QWidget()
        row = QHBoxLayout(w)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(a)
        row.addWidget(b)
        return w

    def _guess_data(self, kind: str) -> str:
        """A ``*_calib.npz`` / ``*_eval.npz`` beside the model, if there is one."""
        folder = self.model_path.parent
        hits = sorted(folder.glob(f"*{kind}*.npz"))
        return str(hits[0]) if hits else ""

    def _suggest_output(self) -> None:
        mode = str(self.mode.currentData())
        self.output.edit.setText(str(self.model_path.with_name(
            f"{self.model_path.stem}_{mode}.onnx")))

    def data_source(self, text: str) -> DataSource | None:
        """The DataSource for a path typed in one of the data fields (None when empty)."""
        text = text.strip()
        if not text:
            return None
        size = None
        if self.image_size.text().strip():
            h, _, w = self.image_size.text().lower().partition("x")
            size = (int(h), int(w))
        return parse_data_source(text, self.samples.value(), size=size,
                                 mean=parse_floats(self.image_mean.text() or "0"),
                                 std=parse_floats(self.image_std.text() or "1"))

    def recipe(self) -> QuantRecipe:
        """The recipe as the form stands (raises ValueError on unparsable fields)."""
        mode = str(self.mode.currentData())
        calib = (self.data_source(self.calib_path.path()) if QUANT_MODES[mode].calibrated
                 else None)
        return QuantRecipe(
            model=str(self.model_path), output=self.output.path(), overwrite=self._overwrite,
            mode=mode, activation_type=self.activation_type.currentText(),
            weight_type=self.weight_type.currentText(), per_channel=self.per_channel.isChecked(),
            reduce_range=self.reduce_range.isChecked(),
            activation_symmetric=self.act_sym.isChecked(),
            weight_symmetric=self.weight_sym.isChecked(),
            calib_method=self.calib_method.currentText(), percentile=self.percentile.value(),
            op_types=_list(self.op_types.text()), exclude=_list(self.exclude.text()),
            preprocess=self.preprocess.isChecked(), calib=calib,
            keep_io_types=self.keep_io.isChecked(), op_block_list=_list(self.block_ops.text()),
            block_size=self.block_size.value(), int4_symmetric=self.int4_sym.isChecked(),
        )

    def analyze_data(self) -> DataSource | None:
        """The evaluation data to analyze the result on (None: do not analyze)."""
        if not self.analyze.isChecked():
            return None
        return self.data_source(self.eval_path.path())

    def problems(self) -> tuple[list[str], list[str], list[str]]:
        """(errors, warnings, notes) for the form as it stands."""
        try:
            recipe = self.recipe()
            self.analyze_data()
        except ValueError as exc:
            return [str(exc)], [], []
        check = check_rules(recipe, self.opset, self.node_names)
        errors = list(check.errors)
        if not recipe.output:
            errors.append("Choose an output file.")
        elif Path(recipe.output).resolve() == self.model_path.resolve():
            errors.append("The output must not be the input model.")
        if self.analyze.isChecked() and not self.eval_path.path():
            errors.append("Choose evaluation data for the analysis, or untick Analyze.")
        return errors, check.warnings, check.notes

    def refresh(self) -> None:
        """Show the options of the chosen mode and re-check the rules."""
        import html

        mode = QUANT_MODES[str(self.mode.currentData())]  # what it uses is declared per option
        self.types_box.setVisible(mode.uses("weight_type"))
        self.activation_type.setEnabled(mode.uses("activation_type"))
        self.act_sym.setEnabled(mode.uses("activation_symmetric"))
        self.calib_box.setVisible(mode.calibrated)
        self.percentile.setEnabled(self.calib_method.currentText() == "percentile")
        self.fp16_box.setVisible(mode.uses("keep_io_types"))
        self.int4_box.setVisible(mode.uses("block_size"))
        errors, warnings, notes = self.problems()
        parts = [f"<p style='color:#b3261e'>✖ {html.escape(e)}</p>" for e in errors]
        parts += [f"<p style='color:#8a5300'>⚠ {html.escape(w)}</p>" for w in warnings]
        parts += [f"<p style='color:#555'>ℹ {html.escape(n)}</p>" for n in notes]
        self.messages.setText("".join(parts))
        self.run_button.setEnabled(not errors)
        if not errors:
            self.command.setText(self.recipe().command_line())

    def has_blockers(self) -> bool:
        """True while the form holds something that stops the job."""
        return bool(self.problems()[0])
