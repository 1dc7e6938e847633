"""How the window is opened from a shell: ``edgestudio [MODEL ...] [--screenshot PNG] …``.

The flags are fields of :class:`WindowLaunch`, declared once with their help and parsed from
that declaration (:func:`~edgestudio.core.job_api.arguments.add_spelled`), so the window's
start-up reads typed values rather than an argparse namespace.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.command import positional, spelled


def window_size(text: str) -> tuple[int, int]:
    """``1280x820`` → ``(1280, 820)``; a ValueError that says the form otherwise."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"reads WIDTHxHEIGHT, e.g. 1280x820 (got '{text}')") from None
    if width <= 0 or height <= 0:
        raise ValueError(f"reads WIDTHxHEIGHT with both above 0 (got '{text}')")
    return width, height


@dataclass(frozen=True)
class WindowLaunch:
    """The window's command line: what to open and, for a screenshot, what to show."""

    models: tuple[str, ...] = positional(
        (),
        each=True,
        optional=True,
        metavar="MODEL",
        help="model files or workspaces (*.edgestudio.json) to open",
    )
    screenshot: str | None = spelled(
        None,
        "--screenshot",
        metavar="PNG",
        help="save a PNG of the window once the models are loaded and drawn, then exit",
    )
    panel: str = spelled(
        "summary",
        "--panel",
        help="panel to show before the screenshot (default: summary); a tab inside one as "
        "OUTER/INNER, e.g. performance/per-op-profile; a wrong name lists them all",
    )
    select: str | None = spelled(
        None,
        "--select",
        metavar="NODE",
        help="with --screenshot: select NODE in the graph (and centre it)",
    )
    open_group: str | None = spelled(
        None,
        "--open-group",
        metavar="GROUP",
        help="with --screenshot: open the closed group GROUP (its name or its label, e.g. "
        "'encoder.layer.3') in the graph",
    )
    compare: str | None = spelled(
        None,
        "--compare",
        metavar="OTHER",
        help="with --screenshot: the Compare window of the first model with OTHER.onnx, on "
        "its first difference",
    )
    dialog: str | None = spelled(
        None,
        "--dialog",
        metavar="NAME",
        help="with --screenshot: open a form instead (convert, quantize, export, preferences, "
        "tune) and save it",
    )
    workspace: tuple[str, ...] = spelled(
        (),
        "--workspace",
        each=True,
        metavar="W",
        help="open the workspace W (*.edgestudio.json) with its model and runs",
    )
    size: tuple[int, int] = spelled(
        (1280, 820),
        "--size",
        parse=window_size,
        metavar="WxH",
        help="with --screenshot: the window's size (default 1280x820)",
    )
    self_test: bool = spelled(
        False,
        "--self-test",
        help="check this installation: open the bundled sample, quantize and analyse it in "
        "background jobs, print the numbers, exit 0 if all worked",
    )
    new_window: bool = spelled(
        False,
        "--new-window",
        help="open a separate window even if EdgeStudio is already running (by default the "
        "files go to the running window)",
    )


def add_window_args(parser: argparse.ArgumentParser) -> None:
    """The window's flags, from :class:`WindowLaunch`'s declaration."""
    add_spelled(parser, WindowLaunch)


def window_launch(args: argparse.Namespace) -> WindowLaunch:
    """The parsed flags as a :class:`WindowLaunch`."""
    return WindowLaunch(**spelled_values(args, WindowLaunch))
