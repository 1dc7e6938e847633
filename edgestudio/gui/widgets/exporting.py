"""Saving plots and widgets as PNG or SVG, atomically."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QFileDialog, QWidget

from edgestudio.core.paths import atomic_target

PLOT_FILTER = "PNG (*.png);;SVG (*.svg)"


def save_path(
    parent: QWidget, given: str | None, title: str, suggested: str, file_filter: str
) -> str | None:
    """Where to save: ``given`` when the caller has a path (tests, scripts), else the file the
    user picks in the save dialog; None when there is none (the dialog was cancelled)."""
    if given is None:
        given, _ = QFileDialog.getSaveFileName(parent, title, suggested, file_filter)
    return given or None


def export_widget(widget: QWidget, path: str) -> str:
    """Render ``widget`` to ``path`` (.svg as vectors via QtSvg, anything else as PNG).

    pyqtgraph's own SVG exporter chokes on the path syntax of current Qt versions, so SVG goes
    through QSvgGenerator instead.
    """
    target = Path(path)
    with atomic_target(target) as tmp:
        _render(widget, target, tmp)
    return str(target)


def _render(widget: QWidget, target: Path, tmp: Path) -> None:
    if target.suffix.lower() == ".svg":
        from PySide6.QtSvg import QSvgGenerator

        generator = QSvgGenerator()
        generator.setFileName(str(tmp))
        generator.setSize(QSize(widget.width(), widget.height()))
        generator.setViewBox(QRect(0, 0, widget.width(), widget.height()))
        generator.setTitle(widget.objectName() or "EdgeStudio plot")
        painter = QPainter(generator)
        # QWidget::render(QPainter*) exists in Qt (and pyqtgraph's views only take a painter);
        # PySide's stubs list the QPaintDevice overload alone.
        widget.render(painter)  # type: ignore[call-overload]
        painter.end()
    elif not widget.grab().save(str(tmp), "PNG"):
        raise OSError(f"could not write {target}")
