"""Pieces every job form shares: output path picker, tolerance fields, command preview."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QWidget,
)

from edgestudio.core.job_api.recipe import Tolerance

WARNING_STYLE = "color: #8a5300;"
ERROR_STYLE = "color: #b3261e;"


class PathPicker(QWidget):
    """A line edit with a Browse… button for a file to save."""

    changed = Signal(str)

    def __init__(
        self, default: str, file_filter: str, save: bool = True, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.edit = QLineEdit(default)
        self.edit.textChanged.connect(self.changed)
        self._filter = file_filter
        self._save = save
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit, 1)
        layout.addWidget(browse)

    def path(self) -> str:
        """The path typed or chosen."""
        return self.edit.text().strip()

    def _browse(self) -> None:
        if self._save:
            path, _ = QFileDialog.getSaveFileName(self, "Save as", self.path(), self._filter)
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Open", self.path(), self._filter)
        if path:
            self.edit.setText(path)


class ToleranceFields(QWidget):
    """atol / rtol inputs for the equivalence check."""

    def __init__(self, tolerance: Tolerance | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        tol = tolerance or Tolerance()
        self.atol = QLineEdit(f"{tol.atol:g}")
        self.rtol = QLineEdit(f"{tol.rtol:g}")
        for edit in (self.atol, self.rtol):
            validator = QDoubleValidator(0.0, 1e6, 12, edit)
            validator.setNotation(QDoubleValidator.Notation.ScientificNotation)
            edit.setValidator(validator)
            edit.setMaximumWidth(90)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("atol"))
        layout.addWidget(self.atol)
        layout.addWidget(QLabel("rtol"))
        layout.addWidget(self.rtol)
        layout.addStretch(1)

    def tolerance(self) -> Tolerance:
        """The typed tolerance (defaults where a field is not a number)."""
        default = Tolerance()
        try:
            atol = float(self.atol.text())
        except ValueError:
            atol = default.atol
        try:
            rtol = float(self.rtol.text())
        except ValueError:
            rtol = default.rtol
        return Tolerance(atol, rtol)


class JobDialog(QDialog):
    """A form that edits a recipe writing ``self.output``: Run is refused while
    :meth:`has_blockers`, and an existing output is replaced only when the user agrees."""

    output: PathPicker
    _overwrite = False

    def has_blockers(self) -> bool:
        """True while the form holds something that stops the job (forms override this)."""
        return False

    def accept(self) -> None:
        """Confirm overwriting an existing output, then close with the recipe ready."""
        if self.has_blockers():
            return
        if Path(self.output.path()).exists():
            if not confirm_overwrite(self, self.output.path()):
                return
            self._overwrite = True
        super().accept()


def command_preview() -> QLineEdit:
    """A read-only, selectable line for the equivalent ``edgestudio`` command."""
    edit = QLineEdit()
    edit.setReadOnly(True)
    edit.setObjectName("command_preview")
    edit.setStyleSheet("font-family: monospace;")
    return edit


def confirm_overwrite(parent: QWidget, path: str) -> bool:
    """Ask before replacing an existing file; True when the user agreed (or nothing exists)."""
    if not Path(path).exists():
        return True
    answer = QMessageBox.question(
        parent,
        "Replace file?",
        f"{path} already exists. Replace it when the job succeeds?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No,
    )
    return answer == QMessageBox.StandardButton.Yes


def findings_html(blockers: list[str], warnings: list[str]) -> str:
    """Blockers in red, warnings in amber, as one HTML block for a QLabel."""
    import html

    parts = [f'<p style="{ERROR_STYLE}">✖ {html.escape(b)}</p>' for b in blockers]
    parts += [f'<p style="{WARNING_STYLE}">⚠ {html.escape(w)}</p>' for w in warnings]
    return "".join(parts)
