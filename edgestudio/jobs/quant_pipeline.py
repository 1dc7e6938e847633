"""Quantize, then analyse the result: the one chain the window's workflow (moved on as jobs
finish), the tuner (polled, and each candidate on a Ray node) and the command line's
``--workspace`` record (a job already finished) all drive.

A :class:`QuantizeThenAnalyse` holds the two jobs of one quantization, submits the analysis to
the same queue once the quantization succeeded and there is data to judge it on, and ends with
the typed results or with why it stopped and where. It never waits: :meth:`advance` is called
when a job has ended (or on every poll) and returns whether anything is left to run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, Quantization
from edgestudio.core.quant.quant_runs import RunState
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import JobSubmitter

R = TypeVar("R")


@dataclass(frozen=True)
class Judging:
    """How the quantized model is judged: on which data, by which task metric (``auto``:
    detected), where (``""``: the target it was quantized for)."""

    data: DataSource
    metric: str = "auto"
    target: str = ""


class QuantizeThenAnalyse:
    """One quantization and its analysis, as jobs of ``jobs`` (see the module doc).

    Start one with :meth:`start`; the command line's record builds one around the job it ran.
    """

    def __init__(
        self,
        jobs: JobSubmitter,
        recipe: QuantRecipe,
        judging: Judging | None,
        quantizing: Job[Quantization] | None = None,
        analysing: Job[Analysis] | None = None,
        threads: int | None = None,
    ) -> None:
        if quantizing is None and analysing is None:
            raise ValueError("a quantize → analyse chain needs one of its jobs")
        self.jobs = jobs
        self.recipe = recipe  # the quantization's (what its analysis is derived from)
        self.judging = judging
        self.threads = threads
        self.quantizing = quantizing
        self.analysing = analysing
        self.state = RunState.ANALYSING if quantizing is None else RunState.QUANTIZING
        self.quantization: Quantization | None = None
        self.output: str | None = None  # the quantized model, once written
        self.analysis: Analysis | None = None
        self.error = ""  # why it stopped, when it failed

    @classmethod
    def start(
        cls,
        jobs: JobSubmitter,
        recipe: QuantRecipe,
        judging: Judging | None = None,
        threads: int | None = None,
    ) -> QuantizeThenAnalyse:
        """Submit ``recipe``'s quantization; its analysis follows when ``judging`` is given."""
        return cls(jobs, recipe, judging, jobs.submit(recipe, threads=threads), threads=threads)

    @property
    def job(self) -> Job[Any]:
        """The job running now, or the last one."""
        job = self.analysing or self.quantizing
        assert job is not None  # the constructor holds one of them
        return job

    def advance(self) -> bool:
        """Move on from a job that has ended (nothing happens while it runs): record its
        result, start the analysis after a quantization that succeeded. True once the chain
        has ended (:attr:`state` says how: the states of a quantization run)."""
        if self.state is RunState.QUANTIZING:
            assert self.quantizing is not None
            quantized = self._report(self.quantizing, RunState.FAILED)
            if quantized is not None:
                self._quantized(quantized)
        if self.state is RunState.ANALYSING:
            assert self.analysing is not None
            analysed = self._report(self.analysing, RunState.ANALYSIS_FAILED)
            if analysed is not None:
                self.analysis, self.state = analysed.result, RunState.ANALYSED
        return self.state.is_final

    def cancel(self) -> None:
        """Stop the job running now."""
        self.jobs.cancel(self.job)

    def _report(self, job: Job[R], failed: RunState) -> JobReport[R] | None:
        """``job``'s report once it succeeded; None while it runs, or when it failed (the
        chain then stops at ``failed``, with the job's reason)."""
        if not job.state.is_final:
            return None
        if job.state is not JobState.SUCCEEDED or job.report is None:
            self.state, self.error = failed, job.error or job.state.value
            return None
        return job.report

    def _quantized(self, report: JobReport[Quantization]) -> None:
        """Keep a successful quantization; start its analysis when there is data for it."""
        self.quantization, self.output = report.result, report.output
        if self.judging is None or not self.output:
            self.state = RunState.QUANTIZED
            return
        judged = AnalyzeRecipe.after(
            self.recipe, self.output, self.judging.data, self.judging.metric, self.judging.target
        )
        self.analysing = self.jobs.submit(judged, threads=self.threads)
        self.state = RunState.ANALYSING
