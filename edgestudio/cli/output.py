"""The CLI's terminal output through rich: tables and a progress bar on a terminal, plain
aligned text when piped or redirected (logs, CI, ``| grep``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table


def console(stream: TextIO | None = None) -> Console:
    """A console on ``stream`` (stdout by default): styled on a terminal, plain otherwise."""
    stream = stream or sys.stdout
    tty = stream.isatty()
    return Console(
        file=stream,
        force_terminal=tty,
        no_color=not tty,
        highlight=False,
        soft_wrap=not tty,
        width=None if tty else 200,
    )


def print_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    title: str | None = None,
    numeric: Sequence[int] = (),
    stream: TextIO | None = None,
) -> None:
    """Rows under their column names; ``numeric`` columns right-aligned. Framed on a terminal,
    plain space-separated columns when piped."""
    out = console(stream)
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD if out.is_terminal else None,
        show_edge=False,
        pad_edge=False,
        title_justify="left",
    )
    for i, name in enumerate(columns):
        table.add_column(name, justify="right" if i in numeric else "left", overflow="fold")
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    out.print(table)


class JobProgress:
    """A job's progress: a bar on a terminal, one line per stage otherwise (logs, CI)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        # Resolved per call, not at import: the stream may be swapped after import.
        self._console = console(stream or sys.stderr)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._last_stage = ""
        self._printed_warnings = 0
        if self._console.is_terminal:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                console=self._console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("starting", total=1.0)

    def update(
        self, stage: str, fraction: float | None, elapsed: float, warnings: Sequence[str]
    ) -> None:
        """Show the job's state (and any warnings that arrived since the last update)."""
        for warning in warnings[self._printed_warnings :]:
            self._console.print(f"warning: {warning}", markup=False)
        self._printed_warnings = len(warnings)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=stage[:60], completed=fraction or 0.0)
        elif stage != self._last_stage:
            self._console.print(f"[{elapsed:6.1f}s] {stage}", markup=False)
        self._last_stage = stage

    def done(self) -> None:
        """Take the bar away."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
