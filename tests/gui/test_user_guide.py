"""The user guide: every page reachable from its index, shown in the window offline, and kept
true — every `edgestudio COMMAND` it (or the README) names is a command, every tab it names in
bold is a panel."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt

from edgestudio.cli.main import _subcommand_names
from edgestudio.gui.main_window import MainWindow
from edgestudio.gui.panel_names import PANELS

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide"
PAGES = sorted(GUIDE.glob("*.md"))


def _texts() -> dict[str, str]:
    return {p.name: p.read_text() for p in [*PAGES, ROOT / "README.md"]}


def test_every_page_is_linked_from_the_index_and_every_link_resolves() -> None:
    index = (GUIDE / "index.md").read_text()
    assert {p.name for p in PAGES} - {"index.md"} <= set(re.findall(r"\(([\w-]+\.md)\)", index))
    for name, text in _texts().items():
        base = ROOT if name == "README.md" else GUIDE
        for link in re.findall(r"\]\((?!https?:|#)([^)\s]+)\)", text):
            assert (base / link.split("#")[0]).resolve().exists(), f"{name}: {link}"


def test_every_command_named_exists() -> None:
    commands = set(_subcommand_names())
    flags_and_files = re.compile(r"^(-|…|[\w./-]*\.(onnx|pt2|pt|json)$|[A-Z]|MODEL|\[|\.\.\.)")
    for name, text in _texts().items():
        for word in re.findall(r"`edgestudio\s+([^`\s]+)", text):
            if not flags_and_files.match(word):
                assert word in commands, f"{name} names `edgestudio {word}`"


def test_every_tab_named_in_bold_exists() -> None:
    tabs = {t for title, inner in PANELS.items() for t in (title, *inner)}
    for name, text in _texts().items():
        for tab in re.findall(r"\*\*([\w -]+)\*\* tab", text):
            assert tab in tabs, f"{name} names the {tab} tab"


def test_help_user_guide_shows_the_pages(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    guide = window.show_user_guide()
    assert "EdgeStudio user guide" in guide.browser.toPlainText()
    assert guide.open_page("cost-and-surgery.md")
    assert "Counting conventions" in guide.browser.toPlainText()
    guide.open_page("index.md")
    guide._follow(
        guide.browser.source().resolved(guide.browser.source().__class__("quantization.md"))
    )
    assert guide.page == "quantization.md"
    assert not guide.open_page("missing.md")
    qtbot.keyClick(guide, Qt.Key.Key_Escape)  # a window of its own closes on Escape too
    assert not guide.isVisible()
