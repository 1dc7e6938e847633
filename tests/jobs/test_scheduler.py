"""The one job queue: a limit on jobs at once, benchmarks alone, the tuner's jobs in it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import Scheduler

pytestmark = pytest.mark.e2e  # every test here starts a worker process


def _hang() -> DiagnosticRecipe:
    return DiagnosticRecipe(action="hang")


def _cancel(queue: Scheduler, job: Job) -> None:
    """Cancel ``job`` and drive the queue until its worker is gone (a cancel never blocks)."""
    queue.cancel(job)
    deadline = time.monotonic() + 30
    while not job.state.is_final and time.monotonic() < deadline:
        queue.poll()
        time.sleep(0.02)


def test_at_most_max_parallel_run_and_the_rest_wait_in_order() -> None:
    events: list[str] = []
    queue = Scheduler(
        max_parallel=2,
        on_added=lambda j: events.append("added"),
        on_finished=lambda j: events.append(j.state.value),
    )
    jobs = [queue.submit(_hang()) for _ in range(3)]
    try:
        assert [j.state for j in jobs] == [JobState.RUNNING, JobState.RUNNING, JobState.QUEUED]
        _cancel(queue, jobs[0])  # a slot frees: the waiting one starts
        assert jobs[2].state is JobState.RUNNING and len(queue.running()) == 2
        assert events == ["added"] * 3 + ["cancelled"]
    finally:
        queue.shutdown()
    assert not queue.busy()


@dataclass(frozen=True)
class _TimingDiagnostic(DiagnosticRecipe):
    """A diagnostic job that, like a benchmark, measures time."""

    runs_alone: ClassVar[bool] = True


def test_a_job_that_measures_time_runs_alone_and_what_comes_after_waits_for_it(
    tmp_path: Path,
) -> None:
    queue = Scheduler(max_parallel=4)
    first = queue.submit(_hang())
    alone = queue.submit(_TimingDiagnostic(action="succeed", output=str(tmp_path / "a.bin")))
    after = queue.submit(_hang())
    try:
        assert first.state is JobState.RUNNING
        assert alone.state is JobState.QUEUED and after.state is JobState.QUEUED
        _cancel(queue, first)
        assert alone.state is JobState.RUNNING and after.state is JobState.QUEUED
        queue.run_until_done([alone])
        assert alone.state is JobState.SUCCEEDED
        queue.poll()
        assert after.state is JobState.RUNNING
    finally:
        queue.shutdown()


def test_a_job_that_cannot_start_fails_and_the_queue_goes_on(tmp_path: Path) -> None:
    finished: list[Job] = []
    queue = Scheduler(on_finished=finished.append)
    target = tmp_path / "exists.bin"
    target.write_bytes(b"keep")
    bad = queue.submit(DiagnosticRecipe(action="succeed", output=str(target)))  # no overwrite
    good = queue.submit(DiagnosticRecipe(action="succeed", output=str(tmp_path / "new.bin")))
    queue.run_until_done()
    assert bad.state is JobState.FAILED and finished[0] is bad
    assert good.state is JobState.SUCCEEDED and target.read_bytes() == b"keep"


def test_benchmarks_and_profiles_always_run_alone() -> None:
    from edgestudio.core.perf.bench_recipes import BenchRecipe, ProfileRecipe
    from edgestudio.core.quant.quant_recipes import QuantRecipe

    assert BenchRecipe.runs_alone and ProfileRecipe.runs_alone and not QuantRecipe.runs_alone
    queue = Scheduler(max_parallel=4)
    queue.submit(_hang())
    bench = queue.submit(BenchRecipe(models=("m.onnx",)))
    try:
        assert bench.state is JobState.QUEUED  # it waits for the running job, with 3 slots free
    finally:
        queue.shutdown()
