"""Jobs forked from the fork server (Linux): every outcome reads as from a cold worker, a job is
its own process tree, a server that no longer fits or died is replaced, and nothing is left."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs import warm
from edgestudio.jobs.fork_server import ForkServer
from edgestudio.jobs.runner import Job, JobState, run_job
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_MODEL

pytestmark = [
    pytest.mark.skipif(not warm.FORK_PLATFORM, reason="jobs are forked on Linux only"),
    pytest.mark.e2e,  # every test here starts a worker process
]


def _loaded() -> ForkServer:
    pool = warm.current_pool()
    assert pool is not None and pool._server is not None
    assert pool._server.loaded.wait(60)
    found = warm.fork_server()
    assert found is pool._server
    return found


@pytest.fixture
def server() -> Iterator[ForkServer]:
    warm.keep_warm(fork=True)
    yield _loaded()
    warm.stop_warm()


def test_the_window_does_not_wait_for_a_loading_server() -> None:
    """Jobs are started on the UI thread: until the server has loaded they start cold."""
    warm.keep_warm(fork=True)
    try:
        assert warm.fork_server() is None  # still loading
        job = run_job(DiagnosticRecipe(action="succeed"))
        assert job.state is JobState.SUCCEEDED
        _loaded()
    finally:
        warm.stop_warm()


def test_a_command_waits_for_the_loading_server() -> None:
    warm.keep_warm(fork=True, wait_for_load=True)
    try:
        server = warm.fork_server()
        assert server is not None and not server.loaded.is_set()
        job = Job(DiagnosticRecipe(action="succeed"))
        job.start()
        assert _parent(job.pid or 0) in (server.process.pid, None)
        assert job.wait(60) is JobState.SUCCEEDED
    finally:
        warm.stop_warm()


def _parent(pid: int) -> int | None:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def test_a_quantize_job_runs_in_a_child_of_the_server(server: ForkServer, tmp_path: Path) -> None:
    out = tmp_path / "q.onnx"
    job = Job(
        QuantRecipe(
            model=str(SAMPLE_MODEL),
            output=str(out),
            mode="qdq",
            calib=DataSource("npz", str(SAMPLE_CALIBRATION)),
        )
    )
    job.start()
    assert job.pid is not None and job.pid != server.process.pid
    assert _parent(job.pid) in (server.process.pid, None)  # None: it already ended
    assert job.wait(120) is JobState.SUCCEEDED, job.error
    assert out.exists() and job.report is not None and job.report.output == str(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]


@pytest.mark.parametrize(
    ("action", "state", "said"),
    [
        ("fail", JobState.FAILED, "failed on purpose"),
        ("crash", JobState.CRASHED, "SIGSEGV"),
        ("partial", JobState.CRASHED, "SIGSEGV"),  # after writing half its output
    ],
)
def test_failures_and_crashes_read_as_from_a_cold_worker(
    server: ForkServer, tmp_path: Path, action: str, state: JobState, said: str
) -> None:
    out = tmp_path / "result.txt"
    job = run_job(DiagnosticRecipe(action=action, output=str(out)))
    assert job.state is state and said in (job.error or ""), job.error
    if action == "crash":
        assert "Fatal Python error" in job.stderr_tail  # faulthandler, into the job's stderr
    assert list(tmp_path.iterdir()) == []  # nothing partial


def test_cancel_and_timeout_stop_only_the_job(server: ForkServer) -> None:
    job = Job(DiagnosticRecipe(action="hang"))
    job.start()
    time.sleep(0.3)
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED
    timed = run_job(DiagnosticRecipe(action="hang"), timeout=1.0)
    assert timed.state is JobState.TIMED_OUT
    assert server.alive() and warm.fork_server() is server  # the server is untouched


@pytest.mark.e2e
@pytest.mark.parametrize("action", ["spawn", "spawn-stubborn"])
def test_cancel_stops_the_forked_jobs_children_too(server: ForkServer, action: str) -> None:
    # spawn-stubborn's child ignores SIGTERM: it outlives the worker unless it is killed.
    job = Job(DiagnosticRecipe(action=action))
    job.start()
    deadline = time.monotonic() + 30
    children: list[psutil.Process] = []
    while not children and time.monotonic() < deadline:
        job.poll(0.1)
        with_children = psutil.Process(job.pid).children() if job.pid else []
        children = [c for c in with_children if c.is_running()]
    assert children, "the self-test job did not start its child"
    time.sleep(1.0)  # the child has set up its signal handling (spawn-stubborn ignores SIGTERM)
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED
    psutil.wait_procs(children, timeout=5)  # killed: give a loaded machine time to reap them
    assert all(not c.is_running() or c.status() == psutil.STATUS_ZOMBIE for c in children)


def test_a_server_started_with_another_environment_is_replaced(
    server: ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGESTUDIO_TEST_CHANGED", "1")
    assert warm.fork_server() is None  # it no longer fits: the job starts cold
    job = run_job(DiagnosticRecipe(action="succeed"))
    assert job.state is JobState.SUCCEEDED
    replacement = _loaded()  # started again once the job ended
    assert replacement is not server
    assert not server.folder.exists() and server.process.poll() is not None


def test_a_job_outlives_the_replacement_of_its_server(
    server: ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the server that forked a job can report how it ended: a server replaced while
    its job runs is kept until the job has ended."""
    monkeypatch.setattr(os, "cpu_count", lambda: 8)  # servers are replaced beside jobs
    first = Job(DiagnosticRecipe(action="spin", seconds=1.5))
    first.start()
    monkeypatch.setenv("EDGESTUDIO_TEST_CHANGED", "1")
    assert run_job(DiagnosticRecipe(action="succeed")).state is JobState.SUCCEEDED
    assert _loaded() is not server  # replaced
    assert first.wait(60) is JobState.SUCCEEDED, first.error
    run_job(DiagnosticRecipe(action="succeed"))  # the next refill retires the idle old one
    assert server.process.poll() is not None and not server.folder.exists()


def test_a_dead_server_means_cold_jobs_not_failures(server: ForkServer) -> None:
    server.process.kill()
    server.process.wait(5)
    job = run_job(DiagnosticRecipe(action="succeed"))
    assert job.state is JobState.SUCCEEDED


def test_the_server_exits_when_the_app_goes_and_leaves_nothing() -> None:
    warm.keep_warm(fork=True)
    server = _loaded()
    warm.stop_warm()
    assert server.process.poll() is not None and not server.folder.exists()


def test_environment_of_a_forked_job_is_the_apps(server: ForkServer) -> None:
    """The child inherits what the server was started with, which fits the app's now."""
    assert server.env.get("ORT_DISABLE_TELEMETRY") == "1"
    assert os.environ.get("PATH") == server.env.get("PATH")
    assert sys.platform == "linux"
