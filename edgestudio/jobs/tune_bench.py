"""Timing a tune's candidates: a batch at a time, as one benchmark job that runs alone in the
queue (no quantization meanwhile, so the latencies stay clean), the float model timed beside
them every time (the reference their "vs float" is read against)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.core.quant.tune import Candidate, TuneSettings
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import JobSubmitter

BENCH_BATCH = 2  # candidates per worker benchmarked together (one job, one pause)


class CandidateTimer:
    """The analysed candidates waiting to be timed, the benchmark timing some, and the float
    model's latency as last measured."""

    def __init__(
        self, settings: TuneSettings, jobs: JobSubmitter, float_latency_ms: float | None = None
    ) -> None:
        self.settings = settings
        self.jobs = jobs
        self.waiting: list[Candidate] = []
        self.running: tuple[list[Candidate], Job[Any]] | None = None
        self.float_latency_ms = float_latency_ms

    @property
    def busy(self) -> bool:
        """True while a benchmark runs."""
        return self.running is not None

    def poll(self, quantizing: bool, on_change: Callable[[Candidate], None]) -> None:
        """Take a finished benchmark's latencies (each candidate is then done); start the next
        batch once nothing is ``quantizing``."""
        if self.running is not None:
            candidates, job = self.running
            if not job.state.is_final:
                return
            self.running = None
            self._timed(candidates, job, on_change)
        if self.waiting and not quantizing:
            candidates, self.waiting = self.waiting, []
            s = self.settings
            models = (str(s.model), *(str(c.recipe.output) for c in candidates))
            job = self.jobs.submit(
                BenchRecipe(
                    models=models,
                    providers=(s.provider,),
                    threads=(s.threads,),
                    warmup=5,
                    runs=s.bench_runs,
                    seed=s.seed,
                )
            )
            self.running = (candidates, job)

    def _timed(
        self, candidates: list[Candidate], job: Job[Any], on_change: Callable[[Candidate], None]
    ) -> None:
        rows = (
            {row.model: row for row in job.report.result.rows}
            if job.state is JobState.SUCCEEDED and job.report is not None
            else {}
        )
        reference = rows.get(str(self.settings.model))
        if reference is not None and reference.ok and reference.median_ms is not None:
            self.float_latency_ms = reference.median_ms
        for candidate in candidates:
            candidate.latency = rows.get(str(candidate.recipe.output))
            if candidate.latency is not None and not candidate.latency.ok:
                candidate.error = candidate.latency.error
            elif candidate.latency is None:
                candidate.error = f"benchmark {job.state.value}: {job.error}"
            candidate.state = "done"
            candidate.seconds = time.monotonic() - candidate.started
            on_change(candidate)

    def cancel(self) -> None:
        """Stop the benchmark (if one runs); nothing waits any more."""
        if self.running is not None:
            self.jobs.cancel(self.running[1])
            self.running[1].wait(10)
        self.waiting, self.running = [], None
