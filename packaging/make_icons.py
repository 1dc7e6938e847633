"""Render the app icon from resources/icons/edgestudio.svg into every raster size packagers need.

Writes resources/icons/png/edgestudio-{16…512}.png (Linux hicolor theme sizes), edgestudio.ico
(Windows) and edgestudio.icns (macOS). Run by ``make icons``; the outputs are committed, and
tests/test_packaging_files.py checks they match the SVG, so an edited SVG cannot ship stale PNGs.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SVG = ICONS / "edgestudio.svg"
PNG_DIR = ICONS / "png"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render_png(size: int) -> bytes:
    """The SVG rendered at ``size`` × ``size`` pixels, as PNG bytes (Qt's SVG renderer)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(str(SVG)).render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def main() -> int:
    """Write every icon file; print what was written."""
    from PIL import Image

    PNG_DIR.mkdir(exist_ok=True)
    images = {}
    for size in SIZES:
        data = render_png(size)
        (PNG_DIR / f"edgestudio-{size}.png").write_bytes(data)
        images[size] = Image.open(io.BytesIO(data))
    images[256].save(ICONS / "edgestudio.ico", sizes=[(s, s) for s in SIZES if s <= 256])
    images[512].save(ICONS / "edgestudio.icns")
    print(f"wrote {len(SIZES)} PNG sizes, edgestudio.ico and edgestudio.icns under {ICONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
