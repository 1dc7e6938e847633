"""The Netron tab: offline (no port, no outside request), no banner, no update lock."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from edgestudio.gui.main_window import MainWindow
from edgestudio.gui.model import netron_view
from tests.gui.conftest import open_and_wait


def test_index_is_rewritten_for_offline_use() -> None:
    root = netron_view.netron_dir()
    if root is None:
        pytest.skip(reason="netron is not installed (optional extra)")
    html = netron_view.rewritten_index(
        (root / "index.html").read_text(), "m.onnx", dt.datetime(2031, 5, 6, 7, 8, 9)
    )
    assert '<meta name="version" content="0.0.0">' in html  # unpackaged: no telemetry
    assert '<meta name="date" content="2031-05-06 07:08:09">' in html  # never "too old"
    assert '<meta name="file" content="model/m.onnx">' in html


def test_missing_webengine_explains_how_to_install(qtbot, monkeypatch, sample_model: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(netron_view, "_available", False)
    view = netron_view.NetronView(sample_model)
    qtbot.addWidget(view)
    assert "pip install 'edgestudio[netron]'" in view.notice.text()
    assert view.web is None


def _js(qtbot, view: netron_view.NetronView, code: str) -> object:  # type: ignore[no-untyped-def]
    result: dict[str, object] = {}
    view.run_js(code, lambda value: result.setdefault("value", value))
    qtbot.waitUntil(lambda: "value" in result, timeout=10_000)
    return result["value"]


@pytest.mark.e2e
def test_netron_tab_shows_the_model_offline(qtbot, window: MainWindow, sample_model: Path) -> None:
    if not netron_view.prepare_web_engine():
        pytest.skip(reason="QtWebEngine or netron is not installed (optional extra)")
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    with qtbot.waitSignal(doc.panels.currentChanged):
        doc.show_panel("netron")
    view = doc.netron_view
    assert view is not None and view.web is not None
    with qtbot.waitSignal(view.loaded, timeout=30_000) as loaded:
        pass
    assert loaded.args == [True]
    # Netron draws the graph asynchronously after the page has loaded.
    deadline = time.monotonic() + 20
    nodes = 0
    while time.monotonic() < deadline and not nodes:
        nodes = int(_js(qtbot, view, "document.querySelectorAll('#canvas g.node').length") or 0)
        qtbot.wait(200)
    assert nodes >= 11
    # settled (what --screenshot waits for) only once Netron shows the graph, not its spinner
    qtbot.waitUntil(view.is_settled, timeout=30_000)
    assert "default" in str(_js(qtbot, view, "document.body.className"))
    assert f"model/{sample_model.name}" in view.served
    # the brackets Netron writes shapes between come from our font, loaded (no missing glyphs)
    assert (
        _js(
            qtbot,
            view,
            "document.fonts.load(\"11px 'EdgeStudio Brackets'\", '\\u3008').then(() => 0); 1",
        )
        == 1
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and netron_view.BRACKETS_FONT not in view.served:
        qtbot.wait(100)
    assert netron_view.BRACKETS_FONT in view.served
    loaded_font = _js(
        qtbot, view, "document.fonts.check(\"11px 'EdgeStudio Brackets'\", '\\u3008\\u3009')"
    )
    assert loaded_font is True
    family = str(
        _js(qtbot, view, "getComputedStyle(document.querySelector('.node-item text')).fontFamily")
    )
    assert family.startswith('"EdgeStudio Brackets"')
    classes = str(_js(qtbot, view, "document.body.className"))
    assert "notification" not in classes  # no consent banner, no "please update"
    assert view.blocked_requests == []
    assert view.intercepted and all(u.startswith("netron://app/") for u in view.intercepted)
    # A page request to the web never leaves: Chromium's rule for local schemes stops it before
    # the network stack, and the interceptor (second wall) would block anything else.
    _js(qtbot, view, "fetch('https://example.invalid/track').catch(() => 0); 1")
    qtbot.wait(500)
    assert all(u.startswith("netron://") for u in view.intercepted)


@pytest.mark.e2e
def test_closing_the_document_frees_the_netron_view_without_the_collector(
    qtbot, window: MainWindow, sample_model: Path
) -> None:  # type: ignore[no-untyped-def]
    """No reference cycle through the scheme handler: the view must go by reference counting.

    A cycle left QtWebEngine objects to the cyclic collector, which once finalised them at a random
    point while a Chromium thread waited on the GIL inside our handler: a deadlock.
    """
    import gc
    import weakref

    if not netron_view.prepare_web_engine():
        pytest.skip(reason="QtWebEngine or netron is not installed (optional extra)")
    open_and_wait(qtbot, window, sample_model)
    doc = window.current_document()
    assert doc is not None
    doc.show_panel("netron")
    view = doc.netron_view
    assert view is not None
    with qtbot.waitSignal(view.loaded, timeout=30_000):
        pass
    gone = weakref.ref(view)
    gc.collect()
    gc.disable()
    try:
        del view, doc
        window.close_document(window.tabs.currentIndex())
        for _ in range(20):
            qtbot.wait(50)
        assert gone() is None, [type(r).__name__ for r in gc.get_referrers(gone())]
    finally:
        gc.enable()
