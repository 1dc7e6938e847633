"""Typed job results: what a job produced and how it compares with the original."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from edgestudio.core.serialise import register_format, without

R = TypeVar("R")  # the result of the job's kind (its recipe's ``Recipe[R]``)


@dataclass(frozen=True)
class OutputCheck:
    """Agreement of one output between the original and the result, on one input set."""

    name: str
    max_abs_err: float
    max_rel_err: float
    allclose: bool
    shape: list[int]


@dataclass
class CheckCase:
    """One comparison run: a label for the inputs (``batch=3``) and the per-output figures."""

    label: str
    outputs: list[OutputCheck] = field(default_factory=list)
    error: str | None = None  # the result failed where it should have run
    skipped: str | None = None  # why nothing could be compared on these inputs

    @property
    def passed(self) -> bool:
        """True when the result ran and every output was within tolerance."""
        return self.error is None and all(o.allclose for o in self.outputs)

    @property
    def compared(self) -> bool:
        """True when outputs were really compared with the original's."""
        return bool(self.outputs)

    def status(self) -> str:
        """``ok``, ``FAILED`` or ``could not check``."""
        if not self.passed:
            return "FAILED"
        return "ok" if self.compared else "could not check"


@dataclass
class EquivalenceCheck:
    """``onnx.checker`` + an onnxruntime session + numeric agreement with the original."""

    atol: float
    rtol: float
    checker_ok: bool = False
    checker_message: str = ""
    session_ok: bool = False
    session_message: str = ""
    cases: list[CheckCase] = field(default_factory=list)
    note: str = ""  # why no inputs could be made, when there are no cases

    def status(self) -> str:
        """``passed``, ``failed`` (with the numbers) or ``unchecked`` (nothing was compared)."""
        if not (self.checker_ok and self.session_ok) or not all(c.passed for c in self.cases):
            return "failed"
        return "passed" if any(c.compared for c in self.cases) else "unchecked"

    @property
    def passed(self) -> bool:
        """True only when every part of the check passed and something was compared."""
        return self.status() == "passed"

    def unchecked_reason(self) -> str:
        """Why nothing could be compared (empty unless the status is ``unchecked``)."""
        if self.status() != "unchecked":
            return ""
        reasons = [c.skipped for c in self.cases if c.skipped]
        return self.note or (reasons[0] if reasons else "no inputs to compare on")

    def verdict(self) -> str:
        """One phrase for the user: ``"equivalent"`` or what went wrong."""
        if not self.checker_ok:
            return "invalid model (onnx checker)"
        if not self.session_ok:
            return "onnxruntime cannot load it"
        status = self.status()
        if status == "failed":
            return "converted, not equivalent"
        if status == "unchecked":
            return "converted, unchecked"
        skipped = [c for c in self.cases if not c.compared]
        if skipped:  # equivalent where it could be compared: say on what, and what not
            return (
                f"equivalent on {len(self.cases) - len(skipped)} of {len(self.cases)} input "
                f"cases ({len(skipped)} could not be checked)"
            )
        return "equivalent"

    def text_lines(self) -> list[str]:
        """The check as plain text lines (CLI output, the Jobs panel)."""
        lines = [
            f"check: {self.verdict()} (atol={self.atol:g}, rtol={self.rtol:g})",
            f"  onnx checker: {self.checker_message}",
            f"  onnxruntime:  {self.session_message}",
        ]
        if self.status() == "unchecked":
            lines.append(f"  could not check: {self.unchecked_reason()}")
        for case in self.cases:
            lines.append(f"  inputs {case.label}: {case.status()}")
            if case.error:
                lines.append(f"    error: {case.error}")
            if case.skipped:
                lines.append(f"    {case.skipped}")
            for o in case.outputs:
                verdict = "allclose" if o.allclose else "NOT allclose"
                lines.append(
                    f"    {o.name:<24} max abs {o.max_abs_err:.3g}  "
                    f"max rel {o.max_rel_err:.3g}  {verdict}"
                )
        return lines


@dataclass
class JobReport(Generic[R]):
    """The result of one job: files written (names inside the staging folder), check, warnings,
    and ``result``, an ``R`` (the job's recipe is a ``Recipe[R]``).

    The operation returns it typed; only the worker turns it into JSON, and only the runner
    reads it back, by the recipe's type
    (:meth:`~edgestudio.core.job_api.recipe.Recipe.read_result`), so that a ``Job[R]``'s
    report holds an ``R`` for every reader.
    """

    kind: str
    files: list[str] = field(default_factory=list)
    output: str | None = None  # final path of the main output, filled in by the runner
    check: EquivalenceCheck | None = None
    warnings: list[str] = field(default_factory=list)
    # None for the kinds that return nothing more (JobReport[None]); every other operation
    # passes its result.
    result: R = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @property
    def passed(self) -> bool:
        """True when there was no check or the check passed."""
        return self.check is None or self.check.passed

    @property
    def outcome(self) -> str:
        """``passed``, ``failed`` or ``unchecked`` (a check that could not compare anything)."""
        return "passed" if self.check is None else self.check.status()


# The JSON form (the CLI's ``--json`` report, the worker's answer) carries the derived verdicts
# beside the figures, for scripts reading it; they are dropped when it is read back.
register_format(
    CheckCase,
    lambda case, data: {**data, "passed": case.passed, "status": case.status()},
    without("passed", "status"),
)
register_format(
    EquivalenceCheck,
    lambda check, data: {
        **data,
        "passed": check.passed,
        "status": check.status(),
        "verdict": check.verdict(),
    },
    without("passed", "status", "verdict"),
)
register_format(
    JobReport,
    lambda report, data: {**data, "passed": report.passed, "outcome": report.outcome},
    without("passed", "outcome"),
)
