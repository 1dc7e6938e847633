"""The names ``--panel`` takes: a document's tabs and their own tabs (``performance/profile``).

Qt-free, so the command line checks a name before Qt starts; a test compares this table with
the tabs the document view builds, so a renamed tab cannot leave ``--panel`` behind.
"""

from __future__ import annotations

#: Each document tab's title with the titles of the tabs inside it.
PANELS: dict[str, tuple[str, ...]] = {
    "Summary": (),
    "Graph": (),
    "Inputs": (),
    "Quantization": ("Activations", "Weights", "Sensitivity"),
    "Performance": ("Latency", "Per-op profile", "Edge vs cloud", "Target"),
    "Netron": (),
}

#: What ``--screenshot`` can open besides panels (``--dialog NAME``).
DIALOGS = ("convert", "quantize", "export", "preferences", "tune")


def slug(title: str) -> str:
    """``"Edge vs cloud"`` -> ``"edge-vs-cloud"``."""
    return title.lower().replace(" ", "-")


def panel_names() -> list[str]:
    """Every name ``--panel`` accepts: ``graph``, ``performance/edge-vs-cloud``, …"""
    names = []
    for title, inner in PANELS.items():
        names.append(slug(title))
        names += [f"{slug(title)}/{slug(t)}" for t in inner]
    return names
