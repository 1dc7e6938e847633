"""Read-only tables shared by the panels."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


def _num(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


class NumericItem(QTableWidgetItem):
    """A table cell that shows a formatted number and sorts by its value (n/a last)."""

    def __init__(self, value: float | None, spec: str) -> None:
        super().__init__(_num(value, spec))
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
