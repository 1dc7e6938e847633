"""What ``--screenshot`` is to show (Qt-free: the command line builds it before Qt starts)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScreenshotPlan:
    """A PNG of the window after its models and their background work have settled, showing
    ``panel``; optionally with a node selected, a group opened, the Compare window with
    ``compare`` instead, or a form (``dialog``)."""

    path: str
    panel: str = "summary"
    select: str | None = None
    open_group: str | None = None
    compare: str | None = None
    dialog: str | None = None
    size: tuple[int, int] = (1280, 820)
