"""Help › User guide: the guide's Markdown pages (``docs/guide``, shipped as
``edgestudio.guide``) rendered in a window, offline; links between pages and to their pictures
follow inside it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QKeyEvent, QTextDocument
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QTextBrowser, QVBoxLayout, QWidget


def guide_folder() -> Path | None:
    """Where the guide's pages are: the package's copy, else the source tree's ``docs/guide``."""
    try:
        from importlib.resources import files

        folder = Path(str(files("edgestudio.guide")))
        if (folder / "index.md").is_file():
            return folder
    except (ModuleNotFoundError, TypeError):
        pass
    source = Path(__file__).resolve().parents[2] / "docs" / "guide"
    return source if (source / "index.md").is_file() else None


class UserGuide(QWidget):
    """A window showing the guide, starting at its index; Back and Home to move about."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("user_guide")
        self.setWindowTitle("EdgeStudio user guide")
        self.resize(980, 760)
        self.browser = QTextBrowser()
        self.browser.setObjectName("guide_text")
        self.browser.setOpenLinks(False)  # pages are read as Markdown, web links go out
        self.browser.anchorClicked.connect(self._follow)
        back, home = QPushButton("Back"), QPushButton("Contents")
        back.clicked.connect(self.browser.backward)
        home.clicked.connect(lambda: self.open_page("index.md"))
        bar = QHBoxLayout()
        for button in (back, home):
            bar.addWidget(button)
        bar.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.browser, 1)
        self.folder = guide_folder()
        self.page = ""
        self.open_page("index.md")

    def open_page(self, name: str) -> bool:
        """Show guide page ``name`` (``quantization.md``); False when it is not there."""
        if self.folder is None or not (self.folder / name).is_file():
            self.browser.setPlainText(
                "The user guide is not installed with this copy of "
                "EdgeStudio (docs/guide in the source tree)."
            )
            return False
        path = self.folder / name
        self.page = name
        self.browser.setSearchPaths([str(path.parent)])
        self.browser.setSource(
            QUrl.fromLocalFile(str(path)), QTextDocument.ResourceType.MarkdownResource
        )
        return True

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Qt: Escape closes the guide, as it would a dialog (it is a window of its own)."""
        if event.key() == Qt.Key.Key_Escape:
            self.close()
            return
        super().keyPressEvent(event)

    def _follow(self, url: QUrl) -> None:
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)  # the system's browser: the guide itself stays offline
            return
        target = Path(url.toLocalFile() or url.path())
        if (
            target.suffix == ".md"
            and self.folder is not None
            and (self.folder / target.name).is_file()
        ):
            self.open_page(target.name)
