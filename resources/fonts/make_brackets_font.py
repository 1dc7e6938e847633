"""Make ``edgestudio-brackets.ttf``: Netron writes tensor shapes between U+3008/U+3009 (CJK angle
brackets), which the usual Linux fonts lack (missing-glyph boxes in the Netron tab). This font
holds only those two code points, drawn with DejaVu Sans's mathematical angle brackets (U+27E8,
U+27E9), plus U+2026 (the ellipsis Netron writes between them); the Netron page lists it first
for exactly those code points (``unicode-range``), so nothing else changes font.

A developer script (the font is committed): ``python resources/fonts/make_brackets_font.py
[DejaVuSans.ttf]`` with fontTools installed. DejaVu's licence allows this (derived fonts must not
be called DejaVu).
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).with_name("edgestudio-brackets.ttf")
FAMILY = "EdgeStudio Brackets"


def main(source: str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf") -> None:
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(source)
    options = subset.Options()
    options.name_IDs = []
    options.layout_features = []
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[0x27E8, 0x27E9, 0x2026])
    subsetter.subset(font)
    for table in font["cmap"].tables:
        if table.isUnicode():
            table.cmap[0x3008] = table.cmap.pop(0x27E8)
            table.cmap[0x3009] = table.cmap.pop(0x27E9)
    name = font["name"]
    name.names = []
    for name_id, text in (
        (0, "Derived from DejaVu Sans (Bitstream Vera licence)"),
        (1, FAMILY),
        (2, "Regular"),
        (3, FAMILY),
        (4, FAMILY),
        (6, FAMILY.replace(" ", "-")),
    ):
        name.setName(text, name_id, 3, 1, 0x409)
    font.save(str(OUT))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(*sys.argv[1:])
