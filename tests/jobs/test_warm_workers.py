"""Jobs that start loaded: forked from a fork server (Linux) or handed to a worker started ahead
(elsewhere); used only when they fit, every outcome unchanged, nothing loaded beside a job that
measures time, and nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.jobs import warm
from edgestudio.jobs.runner import Job, JobState, run_job
from edgestudio.resources import SAMPLE_MODEL


@pytest.fixture
def pool() -> Iterator[warm.WarmPool]:
    """Workers started ahead (the fallback where jobs are not forked)."""
    started = warm.keep_warm(fork=False)
    yield started
    warm.stop_warm()


def _waiting(pool: warm.WarmPool) -> warm.WarmWorker:
    worker = pool.waiting
    assert worker is not None and worker.process.poll() is None
    return worker


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.e2e
@pytest.mark.parametrize("cores", [2, 8])
def test_a_job_runs_in_the_waiting_worker_and_the_next_one_is_started(
    pool: warm.WarmPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    first = _waiting(pool)
    out = tmp_path / "result.txt"
    job = Job(DiagnosticRecipe(action="succeed", output=str(out)))
    job.start()
    assert job.pid == first.process.pid
    if cores >= warm.SPARE_CORES:  # loaded beside the job
        assert _waiting(pool).process.pid != first.process.pid
    else:  # the job has every core: the next worker waits for it to end
        assert pool.waiting is None
    assert job.wait(60) is JobState.SUCCEEDED
    assert _waiting(pool).process.pid != first.process.pid
    assert out.read_text() == "EdgeStudio self-test output\n"
    assert not first.folder.exists()  # the job's folder went with it


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("action", "state", "said"),
    [
        ("fail", JobState.FAILED, "failed on purpose"),
        ("crash", JobState.CRASHED, "SIGSEGV"),
    ],
)
def test_failures_and_crashes_read_the_same_in_a_warm_worker(
    pool: warm.WarmPool, action: str, state: JobState, said: str
) -> None:
    pid = _waiting(pool).process.pid
    job = run_job(DiagnosticRecipe(action=action))
    assert job.pid == pid
    assert job.state is state and said in (job.error or "")
    if action == "crash":
        assert "Fatal Python error" in job.stderr_tail


@pytest.mark.e2e
def test_cancel_stops_a_warm_worker(pool: warm.WarmPool, tmp_path: Path) -> None:
    job = Job(DiagnosticRecipe(action="hang", output=str(tmp_path / "never.txt")))
    job.start()
    time.sleep(0.5)
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED
    assert job.pid is not None and _gone(job.pid)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.e2e
def test_a_worker_started_with_another_environment_is_not_used(
    pool: warm.WarmPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = _waiting(pool)
    monkeypatch.setenv("EDGESTUDIO_TEST_CHANGED", "1")  # e.g. a setting the job must see
    job = run_job(DiagnosticRecipe(action="succeed"))
    assert job.state is JobState.SUCCEEDED
    assert job.pid != stale.process.pid
    assert _gone(stale.process.pid) and not stale.folder.exists()


@pytest.mark.e2e
def test_no_worker_is_started_while_a_job_measures_time(
    pool: warm.WarmPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DiagnosticRecipe, "runs_alone", True)  # as a benchmark's
    job = Job(DiagnosticRecipe(action="hang"))
    job.start()
    assert pool.waiting is None  # loading modules now would disturb the measurement
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED
    assert _waiting(pool) is not None  # started once it ended


@pytest.mark.e2e
def test_stopping_leaves_no_worker_or_folder() -> None:
    worker = _waiting(warm.keep_warm(fork=False))
    warm.stop_warm()
    assert _gone(worker.process.pid) and not worker.folder.exists()
    assert warm.take_warm() is None


@pytest.mark.e2e
def test_a_waiting_worker_whose_app_went_away_exits_by_itself() -> None:
    """Its stdin closes when the app dies (even killed): it exits instead of waiting forever."""
    pool = warm.WarmPool(refill=False, fork=False)
    pool.fill()
    worker = _waiting(pool)
    assert worker.process.stdin is not None
    worker.process.stdin.close()
    assert worker.process.wait(60) == 0
    pool.close()


def test_cli_commands_leave_no_waiting_worker_behind(tmp_path: Path) -> None:
    """`edgestudio quantize` starts its worker server while it parses and ends its process
    without the interpreter's teardown: whether it stopped early (a missing model) or ran its
    job, the server is stopped, its folder and the job's are removed, and what the command
    printed and wrote is all there."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgestudio",
            "quantize",
            str(tmp_path / "missing.onnx"),
            "-o",
            str(tmp_path / "q.onnx"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "missing.onnx" in done.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("edgestudio-")] == []
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgestudio",
            "quantize",
            str(SAMPLE_MODEL),
            "-o",
            str(tmp_path / "q.onnx"),
            "--mode",
            "dynamic",
            "--json",
            str(report),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"output: {tmp_path / 'q.onnx'}" in done.stdout  # flushed before the fast exit
    assert done.stderr.rstrip().endswith("succeeded")
    assert json.loads(report.read_text())["state"] == "succeeded"
    assert (tmp_path / "q.onnx").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx", "report.json"]
