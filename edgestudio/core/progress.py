"""Progress reporting and cooperative cancellation for operations.

Every operation is ``op(recipe, reporter) -> report``; it calls ``reporter.stage(...)`` and
``reporter.check_cancelled()`` between steps. In a worker the reporter writes protocol messages;
in tests it can simply record them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class CancelledError(Exception):
    """Raised inside an operation when the user cancelled it."""


class Reporter(Protocol):
    """What an operation may tell the outside world while it runs."""

    def stage(self, name: str, fraction: float | None = None) -> None:
        """A new stage began (``fraction`` of the whole job done so far, when known)."""

    def progress(self, fraction: float) -> None:
        """Progress within the job, 0..1."""

    def log(self, text: str) -> None:
        """A line for the job's log."""

    def warn(self, text: str) -> None:
        """Something the user must see with the result (not buried in the log)."""

    def check_cancelled(self) -> None:
        """Raise :class:`CancelledError` if the job was cancelled."""


def within(reporter: Reporter, start: float, end: float) -> Callable[[float], None]:
    """Progress of one step of a job: its own 0..1 reported as ``start``..``end`` of the whole
    (clamped, so a step that overshoots never moves the bar past its share)."""

    def progress(fraction: float) -> None:
        reporter.progress(start + (end - start) * min(max(fraction, 0.0), 1.0))

    return progress


@dataclass
class _Scaled:
    """A reporter whose fractions are those of one step (see :func:`scaled`)."""

    inner: Reporter
    start: float
    end: float

    def _whole(self, fraction: float) -> float:
        return self.start + (self.end - self.start) * min(max(fraction, 0.0), 1.0)

    def stage(self, name: str, fraction: float | None = None) -> None:
        """A stage of the step, at its place in the whole job."""
        self.inner.stage(name, None if fraction is None else self._whole(fraction))

    def progress(self, fraction: float) -> None:
        """The step's progress, at its place in the whole job."""
        self.inner.progress(self._whole(fraction))

    def log(self, text: str) -> None:
        """As the job's reporter logs."""
        self.inner.log(text)

    def warn(self, text: str) -> None:
        """As the job's reporter warns."""
        self.inner.warn(text)

    def check_cancelled(self) -> None:
        """As the job's reporter checks."""
        self.inner.check_cancelled()


def scaled(reporter: Reporter, start: float, end: float) -> Reporter:
    """``reporter`` for one step of a job that reports stages and progress of its own, 0..1,
    shown as ``start``..``end`` of the whole (a device run inside an analysis)."""
    return _Scaled(reporter, start, end)


@dataclass
class RecordingReporter:
    """A reporter that keeps everything in lists (for tests and in-process runs)."""

    stages: list[str] = field(default_factory=list)
    fractions: list[float] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cancelled: bool = False

    def stage(self, name: str, fraction: float | None = None) -> None:
        """Record a stage."""
        self.stages.append(name)
        if fraction is not None:
            self.fractions.append(fraction)

    def progress(self, fraction: float) -> None:
        """Record a fraction."""
        self.fractions.append(fraction)

    def log(self, text: str) -> None:
        """Record a log line."""
        self.lines.append(text)

    def warn(self, text: str) -> None:
        """Record a warning."""
        self.warnings.append(text)

    def check_cancelled(self) -> None:
        """Raise when :attr:`cancelled` was set."""
        if self.cancelled:
            raise CancelledError()
