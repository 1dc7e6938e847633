"""Small text formatters shared by the CLI and the GUI."""

from __future__ import annotations


def human_bytes(n: int) -> str:
    """Format a byte count with binary units: ``192498`` -> ``"188.0 KiB"``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def human_count(n: int) -> str:
    """Format a large count compactly: ``47530`` -> ``"47.5 K"``, ``3_400_000`` -> ``"3.40 M"``."""
    if n < 10_000:
        return f"{n:,}"
    if n < 1_000_000:
        return f"{n / 1e3:.1f} K"
    if n < 1_000_000_000:
        return f"{n / 1e6:.2f} M"
    return f"{n / 1e9:.2f} G"
