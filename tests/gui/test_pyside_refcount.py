"""Regression guard for PySide6 6.11.0/6.12.0, which drop a reference to None on every call that
returns None and abort CPython < 3.12 ("none_dealloc") after a few thousand calls."""

import sys

from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QGraphicsRectItem


def test_none_returning_calls_keep_none_refcount(qtbot) -> None:  # type: ignore[no-untyped-def]
    item = QGraphicsRectItem(0, 0, 10, 10)
    before = sys.getrefcount(None)
    for i in range(10_000):
        item.setPos(QPointF(i, i))  # returns None
    after = sys.getrefcount(None)
    assert after >= before - 100, f"None refcount fell by {before - after}"
