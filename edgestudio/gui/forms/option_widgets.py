"""Form widgets made from recipe option declarations (:mod:`edgestudio.core.job_api.options`).

A declared option gets its widget here — a check box, a list to choose from, a number or a
comma-separated list — with its label and help, so an option added to a recipe appears in its
form without form code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox, QWidget

from edgestudio.core.job_api.options import FIELD_OPTION, Option


def option_widget(field: dataclasses.Field[Any], opt: Option, value: Any) -> QWidget:
    """A widget showing ``value`` for the declared ``field``."""
    default = field.default
    widget: QWidget
    if opt.parse is not None:  # a grammar of its own: typed as text, read by opt.parse
        widget = QLineEdit("" if value is None else opt.show(value) if opt.show else str(value))
        widget.setPlaceholderText(opt.placeholder)
    elif isinstance(default, bool):
        widget = QCheckBox(opt.label)
        widget.setChecked(bool(value))
    elif opt.choices:
        widget = QComboBox()
        widget.addItems(list(opt.choices))
        widget.setCurrentText(str(value))
    elif isinstance(default, int):
        widget = QSpinBox()
        widget.setRange(
            int(opt.minimum) if opt.minimum is not None else 0,
            int(opt.maximum) if opt.maximum is not None else 1_000_000,
        )
        widget.setValue(int(value))
    elif isinstance(default, float):
        widget = QDoubleSpinBox()
        widget.setDecimals(4)
        widget.setRange(
            opt.minimum if opt.minimum is not None else -1e9,
            opt.maximum if opt.maximum is not None else 1e9,
        )
        widget.setValue(float(value))
    elif isinstance(default, tuple):
        widget = QLineEdit(", ".join(str(v) for v in value))
        widget.setPlaceholderText(opt.placeholder or "comma-separated")
    else:
        widget = QLineEdit(str(value))
        widget.setPlaceholderText(opt.placeholder)  # what an empty field means
    if isinstance(widget, (QSpinBox, QDoubleSpinBox)) and opt.placeholder:
        widget.setSpecialValueText(opt.placeholder)  # what the lowest value means ("off")
    widget.setToolTip(f"{opt.help} ({opt.flag})")
    return widget


def widget_value(field: dataclasses.Field[Any], widget: QWidget) -> Any:
    """The value ``widget`` holds, as the field's type (raises ValueError, naming the field's
    label, on text its grammar does not read; empty text is the default)."""
    opt: Option | None = field.metadata.get(FIELD_OPTION)
    if opt is not None and opt.parse is not None:
        assert isinstance(widget, QLineEdit)
        text = widget.text().strip()
        if not text:
            return field.default
        try:
            return opt.parse(text)
        except ValueError as exc:
            raise ValueError(f"{opt.label.rstrip(':')}: {exc}") from exc
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
        return widget.value()
    assert isinstance(widget, QLineEdit)
    if isinstance(field.default, tuple):
        return tuple(t.strip() for t in widget.text().split(",") if t.strip())
    return widget.text()


def on_change(widget: QWidget, slot: Callable[[], None]) -> None:
    """Call ``slot`` whenever the user changes ``widget``."""
    if isinstance(widget, QCheckBox):
        widget.toggled.connect(lambda _=False: slot())
    elif isinstance(widget, QComboBox):
        widget.currentIndexChanged.connect(lambda _=0: slot())
    elif isinstance(widget, (QSpinBox, QDoubleSpinBox)):
        widget.valueChanged.connect(lambda _=0: slot())
    elif isinstance(widget, QLineEdit):
        widget.textChanged.connect(lambda _="": slot())
