"""Read-only tables shared by the panels."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


def _num(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


class NumericItem(QTableWidgetItem):
    """A table cell that shows a formatted number (or ``text`` in its place) and sorts by its
    value (n/a last)."""

    def __init__(self, value: float | None, spec: str, text: str | None = None) -> None:
        super().__init__(_num(value, spec) if text is None else text)
        self.value = float("inf") if value is None else float(value)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        if isinstance(other, NumericItem):
            return self.value < other.value
        return super().__lt__(other)


def results_table(columns: list[str], name: str) -> QTableWidget:
    """An empty, read-only, row-selecting table with ``columns``."""
    table = QTableWidget(0, len(columns))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def filled_table(
    headers: list[str], rows: list[list[str]], name: str, max_visible: int = 12
) -> QTableWidget:
    """A read-only table holding ``rows``, as tall as its rows up to ``max_visible`` of them
    (short lists need no inner scroll bar; long ones are capped)."""
    table = QTableWidget(len(rows), len(headers))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            table.setItem(r, c, item)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setStretchLastSection(True)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
    visible = min(max(len(rows), 1), max_visible)
    table.setFixedHeight(
        header.sizeHint().height()
        + visible * table.verticalHeader().defaultSectionSize()
        + 2 * table.frameWidth()
        + 2
    )
    return table
