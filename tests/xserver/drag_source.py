"""Another X client that drags a file: a small window that starts an XDND drag of the file
named on its command line when the pointer is pressed on it (``tests/xserver``)."""

from __future__ import annotations

import sys

from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtGui import QDrag, QMouseEvent
from PySide6.QtWidgets import QApplication, QLabel


class DragSource(QLabel):
    """Press on it and a drag of the file begins."""

    def __init__(self, path: str) -> None:
        super().__init__(f"drag {path}")
        self.path = path
        self.setWindowTitle("drag source")

    def mousePressEvent(self, event: QMouseEvent) -> None:
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(self.path)])
        drag = QDrag(self)
        drag.setMimeData(mime)
        drag.exec(Qt.DropAction.CopyAction)


if __name__ == "__main__":
    app = QApplication(sys.argv[:1])
    source = DragSource(sys.argv[1])
    source.setGeometry(int(sys.argv[2]), int(sys.argv[3]), 200, 100)
    source.show()
    sys.exit(app.exec())
