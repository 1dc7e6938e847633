"""Two models side by side: differences coloured and listed, selection followed across."""

from __future__ import annotations

from pathlib import Path

from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_MODEL
from tests.models import quantized_sample


def _quantized(tmp_path: Path) -> Path:
    out = quantized_sample(tmp_path)
    return out


def test_compare_float_with_quantized(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = window.compare(SAMPLE_MODEL, _quantized(tmp_path))
    assert view.parent() is window and view.isWindow()  # Qt deletes it, on the GUI thread
    qtbot.waitUntil(lambda: view.is_ready, timeout=30_000)
    assert view.result is not None and view.left is not None and view.right is not None
    assert view.list.count() == len(view.result.differences) > 0
    assert "inserted" in view.summary.text()
    assert "Difference" in view.left.view.legend.label.text()
    assert "Difference" in view.right.view.legend.label.text()
    # selecting a node on the left selects its match on the right
    assert view.left.select_by_name("/features/features.0/Conv")
    right = view.right
    assert right.ir is not None and right.ir.names[right.view.selected] == \
        "/features/features.0/Conv"
    # stepping to an inserted Q/DQ node selects it on the right (the node a folded weight
    # dequantization feeds, for those)
    for row, d in enumerate(view.result.differences):
        if d.change.value == "inserted" and d.node_b:
            view.list.setCurrentRow(row)
            assert right.view.selected == right.ir.index_of(d.node_b)
    view.grab().save(str(tmp_path / "compare.png"))
    view.close()


def test_compare_run_colours_the_quantized_side_by_sqnr(qtbot, window: MainWindow,  # type: ignore[no-untyped-def]
                                                       tmp_path: Path) -> None:
    view = window.compare(SAMPLE_MODEL, _quantized(tmp_path),
                          sqnr={"/features/features.0/Conv": 35.0})
    qtbot.waitUntil(lambda: view.is_ready, timeout=30_000)
    assert view.right is not None and "SQNR" in view.right.view.legend.label.text()
    view.close()
