"""The Quantize form: a mode, only the options that mode takes, calibration data, and ORT's
rules explained before the job starts."""

from __future__ import annotations

import typing
from pathlib import Path

import onnx
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.convert.conversion_plan import model_opset
from edgestudio.core.inputs.data_source import DataSource, parse_data_source
from edgestudio.core.job_api.options import declared_options
from edgestudio.core.model.opsets import iter_nodes
from edgestudio.core.quant.quant_recipes import (
    QUANT_MODES,
    AnalyzeRecipe,
    QuantRecipe,
)
from edgestudio.core.quant.quant_rules import check_rules
from edgestudio.gui.forms.common import JobDialog, PathPicker, command_preview
from edgestudio.gui.forms.data_memory import DataMemory
from edgestudio.gui.forms.option_widgets import on_change, option_widget, widget_value

BOX_TITLES = {
    "types": "Types",
    "calibration": "Calibration",
    "float16": "float16",
    "4-bit": "4-bit",
}  # the boxes options are declared in, in the form's order


def _data_kind(text: str) -> str | None:
    """The kind of data a path typed in a data field is (None: nothing usable typed yet)."""
    if not text.strip():
        return None
    try:
        return parse_data_source(text.strip()).kind
    except (OSError, ValueError):
        return None


class QuantizeDialog(JobDialog):
    """Edits a :class:`QuantRecipe`; ``analyze_data()`` says what to evaluate on afterwards."""

    def __init__(
        self,
        model: onnx.ModelProto,
        model_path: Path,
        excluded: list[str],
        parent: QWidget | None = None,
        base: QuantRecipe | None = None,
        memory: DataMemory | None = None,
    ) -> None:
        super().__init__(parent)
        self.memory = memory
        self.setWindowTitle(f"Quantize {model_path.name}")
        self.setObjectName("quantize_dialog")
        self.model_path = model_path
        self.opset = model_opset(model)
        self.node_names = {n.name for n in iter_nodes(model.graph)}
        base = base or QuantRecipe(model=str(model_path))

        self.mode = QComboBox()
        for m in QUANT_MODES.values():
            self.mode.addItem(m.label, m.name)
        self.mode.setCurrentIndex(list(QUANT_MODES).index(base.mode))

        # Every declared option gets its widget, in the box its declaration names.
        self.boxes = {name: QGroupBox(title) for name, title in BOX_TITLES.items()}
        form = general = QFormLayout()
        form.addRow("Mode:", self.mode)
        self.options: dict[str, QWidget] = {}
        self._declared = [(f, opt) for f, opt in declared_options(QuantRecipe) if f.name != "mode"]
        for f, opt in self._declared:
            value = getattr(base, f.name)
            if f.name == "exclude":
                value = tuple(sorted(set(base.exclude) | set(excluded)))
            widget = option_widget(f, opt, value)
            widget.setObjectName(f.name)
            self.options[f.name] = widget
            rows = general if not opt.group else self._box_layout(opt.group)
            if isinstance(widget, QCheckBox):
                rows.addRow(widget)
            else:
                rows.addRow(opt.label, widget)
            on_change(widget, self.refresh)
        self.types_box = self.boxes["types"]
        self.calib_box = self.boxes["calibration"]
        self.fp16_box = self.boxes["float16"]
        self.int4_box = self.boxes["4-bit"]

        calib = self._box_layout("calibration")
        default_calib = base.calib.path if base.calib else self._recall_data("calib")
        self.calib_path = PathPicker(default_calib, "Data (*.npz);;All files (*)", save=False)
        self.calib_path.edit.setPlaceholderText(".npz, a folder, or synthetic:32")
        source = base.calib or DataSource()
        self.samples = QSpinBox()
        self.samples.setRange(0, 1_000_000)
        self.samples.setSpecialValueText("all")
        self.samples.setValue(source.samples)
        # How the data is prepared, from DataSource's declarations (the CLI's --image-*,
        # --sample-rate, --tokenizer): a row for each, shown when the kind of the data in use
        # (calibration, evaluation) needs it. A box of its own: a dynamic quantization has no
        # calibration box, and its analysis may still read images.
        self.data_options = {
            f.name: (f, opt, option_widget(f, opt, getattr(source, f.name)))
            for f, opt in declared_options(DataSource)
        }
        calib.addRow("Data:", self.calib_path)
        calib.addRow("Samples:", self.samples)
        self.prep_box = QGroupBox("Data preparation")
        self.prep_box.setObjectName("data_preparation")
        prep = QFormLayout(self.prep_box)
        for _, opt, widget in self.data_options.values():
            prep.addRow(opt.label, widget)

        self.analyze = QCheckBox("Analyze the result afterwards on:")
        self.analyze.setChecked(True)
        self.eval_path = PathPicker(
            self._recall_data("eval") or default_calib, "Data (*.npz);;All files (*)", save=False
        )
        # The task metric the analysis judges by, declared once on AnalyzeRecipe.
        metric_field, metric_option = next(
            (f, o) for f, o in declared_options(AnalyzeRecipe) if f.name == "metric"
        )
        self._metric_field = metric_field
        self.metric_box = option_widget(metric_field, metric_option, "auto")
        self.metric_box.setObjectName("metric")
        self.metric_box.setToolTip(
            "auto: detected from the outputs and the graph (classification, "
            "CTC text, tokens, embeddings, detection, signal); the analysis "
            "says which and why"
        )
        # Where the analysis judges the result, declared once on AnalyzeRecipe: the target the
        # result is quantized for, unless another runtime is chosen (OpenVINO's).
        judge_field, judge_option = next(
            (f, o) for f, o in declared_options(AnalyzeRecipe) if f.name == "target"
        )
        self._judge_field = judge_field
        self._judge_label = judge_option.label
        self.judge_box = option_widget(judge_field, judge_option, base.target)
        self.judge_box.setObjectName("judge_on")
        self.eval_note = QLabel()
        self.eval_note.setObjectName("eval_note")
        self.eval_note.setWordWrap(True)
        self.output = PathPicker(
            str(model_path.with_name(f"{model_path.stem}_{base.mode}.onnx")), "ONNX models (*.onnx)"
        )
        self.messages = QLabel()
        self.messages.setObjectName("rules")
        self.messages.setWordWrap(True)
        self.messages.setTextFormat(Qt.TextFormat.RichText)
        self.command = command_preview()

        form.addRow(self.analyze, self.eval_path)
        form.addRow(metric_option.label, self.metric_box)
        form.addRow(self._judge_label, self.judge_box)
        form.addRow("", self.eval_note)
        form.addRow("Output:", self.output)
        form.addRow("Command:", self.command)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.run_button = self.buttons.addButton("Quantize", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        # Everything but the buttons scrolls: with every box shown, the form is taller than a
        # 1600×1000 screen, and Quantize/Cancel must stay in reach.
        content = QWidget()
        inner = QVBoxLayout(content)
        inner.addLayout(form)
        for box in self.boxes.values():
            inner.addWidget(box)
        inner.addWidget(self.prep_box)
        inner.addWidget(self.messages)
        inner.addStretch(1)
        scroll = QScrollArea()
        scroll.setObjectName("quantize_scroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.buttons)
        screen = self.screen().availableGeometry() if self.screen() else None
        self.resize(760, min(820, screen.height() - 80) if screen else 820)

        self.mode.currentIndexChanged.connect(self.refresh)
        self.analyze.toggled.connect(self.refresh)
        for _, _, widget in self.data_options.values():
            on_change(widget, self.refresh)
        for p in (self.calib_path, self.output, self.eval_path):
            p.changed.connect(self.refresh)
        self.samples.valueChanged.connect(self.refresh)
        for choice in (self.metric_box, self.judge_box):  # both show in the analysis's command
            on_change(choice, self.refresh)
        self.mode.currentIndexChanged.connect(self._suggest_output)
        # a result quantized for a target is judged there unless another runtime is chosen
        typing.cast(QComboBox, self.options["target"]).currentTextChanged.connect(
            typing.cast(QComboBox, self.judge_box).setCurrentText
        )
        self.refresh()

    def _box_layout(self, group: str) -> QFormLayout:
        box = self.boxes[group]
        if not isinstance(box.layout(), QFormLayout):
            QFormLayout(box)
        rows = box.layout()
        assert isinstance(rows, QFormLayout)
        return rows

    def option(self, name: str) -> QWidget:
        """The widget of the declared option ``name`` (``per_channel``, ``weight_type``, …)."""
        return self.options[name]

    @property
    def per_channel(self) -> QCheckBox:
        """The per-channel check box."""
        return typing.cast(QCheckBox, self.options["per_channel"])

    @property
    def weight_type(self) -> QComboBox:
        """The weight type."""
        return typing.cast(QComboBox, self.options["weight_type"])

    @property
    def activation_type(self) -> QComboBox:
        """The activation type."""
        return typing.cast(QComboBox, self.options["activation_type"])

    @property
    def exclude(self) -> QLineEdit:
        """The nodes kept in float."""
        return typing.cast(QLineEdit, self.options["exclude"])

    def _recall_data(self, kind: str) -> str:
        """The data last used for this model as ``kind``, else a ``*_calib.npz`` /
        ``*_eval.npz`` beside the model, if there is one."""
        if self.memory is not None and (kept := self.memory.recall(self.model_path, kind)):
            return kept
        folder = self.model_path.parent
        hits = sorted(folder.glob(f"*{kind}*.npz"))
        return str(hits[0]) if hits else ""

    def _suggest_output(self) -> None:
        mode = str(self.mode.currentData())
        self.output.edit.setText(
            str(self.model_path.with_name(f"{self.model_path.stem}_{mode}.onnx"))
        )

    def data_source(self, text: str) -> DataSource | None:
        """The DataSource for a path typed in one of the data fields (None when empty)."""
        text = text.strip()
        if not text:
            return None
        preparation = {
            name: widget_value(f, widget) for name, (f, _, widget) in self.data_options.items()
        }
        return parse_data_source(text, self.samples.value(), **preparation)

    def data_widget(self, name: str) -> QWidget:
        """The field for DataSource's declared option ``name`` (``size``, ``sample_rate``, …)."""
        return self.data_options[name][2]

    def _show_data_options(self) -> None:
        """Show the preparation rows the kinds of the data in use need: the calibration data's
        (when the mode calibrates) and the evaluation data's (when the result is analysed)."""
        in_use = [
            path
            for path, used in (
                (self.calib_path.path(), QUANT_MODES[str(self.mode.currentData())].calibrated),
                (self.eval_path.path(), self.analyze.isChecked()),
            )
            if used
        ]
        kinds = {kind for kind in map(_data_kind, in_use) if kind}
        layout = self.prep_box.layout()
        assert isinstance(layout, QFormLayout)
        shown = [any(opt.used_in(k) for k in kinds) for _, opt, _ in self.data_options.values()]
        for (_, _, widget), visible in zip(self.data_options.values(), shown, strict=True):
            layout.setRowVisible(widget, visible)
        self.prep_box.setVisible(any(shown))

    def recipe(self) -> QuantRecipe:
        """The recipe as the form stands (raises ValueError on unparsable fields)."""
        mode = str(self.mode.currentData())
        calib = self.data_source(self.calib_path.path()) if QUANT_MODES[mode].calibrated else None
        values = {f.name: widget_value(f, self.options[f.name]) for f, _ in self._declared}
        return QuantRecipe(
            model=str(self.model_path),
            output=self.output.path(),
            overwrite=self._overwrite,
            mode=mode,
            calib=calib,
            **values,
        )

    def analyze_metric(self) -> str:
        """The task metric the analysis judges by (``auto``: detected)."""
        return str(widget_value(self._metric_field, self.metric_box))

    def analyze_target(self) -> str:
        """Where the analysis judges the result (the quantization's target by default)."""
        return str(widget_value(self._judge_field, self.judge_box))

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
        for what, source in (("calibration", recipe.calib), ("evaluation", self.analyze_data())):
            if source is not None and source.kind != "synthetic" and not Path(source.path).exists():
                errors.append(f"The {what} data {source.path} does not exist.")
        return errors, check.warnings, check.notes

    def refresh(self) -> None:
        """Show the options of the chosen mode and re-check the rules."""
        import html

        mode = QUANT_MODES[str(self.mode.currentData())]  # what it uses is declared per option
        for f, opt in self._declared:
            self.options[f.name].setEnabled(opt.used_in(mode.name))
        for group, box in self.boxes.items():
            box.setVisible(
                any(opt.group == group and opt.used_in(mode.name) for _, opt in self._declared)
                or (group == "calibration" and mode.calibrated)
            )
        self._show_data_options()
        method = typing.cast(QComboBox, self.options["calib_method"]).currentText()
        self.options["percentile"].setEnabled(mode.calibrated and method == "percentile")
        self.metric_box.setEnabled(self.analyze.isChecked())
        self.judge_box.setEnabled(self.analyze.isChecked())
        errors, warnings, notes = self.problems()
        self.eval_note.setText(self._eval_note())
        parts = [f"<p style='color:#b3261e'>✖ {html.escape(e)}</p>" for e in errors]
        parts += [f"<p style='color:#8a5300'>⚠ {html.escape(w)}</p>" for w in warnings]
        parts += [f"<p style='color:#555'>ℹ {html.escape(n)}</p>" for n in notes]
        self.messages.setText("".join(parts))
        self.run_button.setEnabled(not errors)
        if not errors:
            self.command.setText(self.command_line())

    def command_line(self) -> str:
        """The equivalent commands: the quantization, then its analysis when it is ticked
        (judged by the chosen metric, where the form says)."""
        recipe = self.recipe()
        data = self.analyze_data()
        if data is None:
            return recipe.command_line()
        judged = AnalyzeRecipe.after(
            recipe, self.output.path(), data, self.analyze_metric(), self.analyze_target()
        )
        return f"{recipe.command_line()} && {judged.command_line()}"

    def _eval_note(self) -> str:
        """What the analysis will be able to say on the chosen evaluation data."""
        try:
            data = self.analyze_data()
        except ValueError:
            return ""
        if data is None or (data.kind != "synthetic" and not Path(data.path).exists()):
            return ""
        if data.kind == "synthetic":
            return (
                "<span style='color:#8a5300'>Synthetic: a pipeline check, no verdict. "
                "Real samples give one.</span>"
            )
        name = Path(data.path).name or data.path
        return f"<span style='color:#555'>Verdict on {data.kind} {name}, by the task metric.</span>"

    def has_blockers(self) -> bool:
        """True while the form holds something that stops the job."""
        return bool(self.problems()[0])

    def accept(self) -> None:
        """Remember the data paths for this model, then start as every job form does."""
        if self.memory is not None and not self.has_blockers():
            if QUANT_MODES[str(self.mode.currentData())].calibrated:
                self.memory.remember(self.model_path, "calib", self.calib_path.path())
            if self.analyze.isChecked():
                self.memory.remember(self.model_path, "eval", self.eval_path.path())
        super().accept()
