"""How workers start (:mod:`edgestudio.jobs.launch`): forked from a loaded server on Linux, used
only when it fits, every outcome reading as from a cold worker, a job its own process tree, no
descriptor leaked either way, nothing loaded beside a job that measures time, nothing left."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs import launch, scheduler
from edgestudio.jobs.fork_server import ForkLauncher, ForkServer
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import run_job
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_MODEL
from tests.cli.run import run_cli

pytestmark = pytest.mark.e2e  # every test here starts a worker process
forking = pytest.mark.skipif(not launch.FORK_PLATFORM, reason="jobs are forked on Linux only")


@pytest.fixture
def launcher(monkeypatch: pytest.MonkeyPatch) -> Iterator[ForkLauncher]:
    """A fork launcher of the test's own, made this process's default (run_job uses it)."""
    made = ForkLauncher()
    monkeypatch.setattr(scheduler, "_default", made)
    yield made
    made.close()


def _loaded(launcher: ForkLauncher) -> ForkServer:
    server = launcher.current()
    assert server is not None and server.loaded.wait(60)
    return server


@pytest.fixture
def server(launcher: ForkLauncher) -> ForkServer:
    launcher.prepare()
    return _loaded(launcher)


def _parent(pid: int) -> int | None:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None  # it already ended


def _descriptors(pid: int | str) -> dict[int, str]:
    folder = Path(f"/proc/{pid}/fd")
    found = {}
    for entry in folder.iterdir():
        with contextlib.suppress(OSError):  # closed while listed (the listing's own)
            found[int(entry.name)] = os.readlink(entry)
    return found


@forking
def test_the_window_does_not_wait_for_a_loading_server(launcher: ForkLauncher) -> None:
    """Jobs are started on the UI thread: until the server has loaded they start cold."""
    launcher.prepare()
    loading = launcher.current()
    assert loading is not None and not loading.loaded.is_set()
    job = run_job(DiagnosticRecipe(action="succeed"))
    assert job.state is JobState.SUCCEEDED
    assert _loaded(launcher) is loading


@forking
def test_a_command_waits_for_the_loading_server(launcher: ForkLauncher) -> None:
    launcher.prepare(wait_for_load=True)
    server = launcher.current()
    assert server is not None and not server.loaded.is_set()
    job = Job(DiagnosticRecipe(action="succeed"))
    job.start(launcher)
    assert _parent(job.pid or 0) in (server.process.pid, None)
    assert job.wait(60) is JobState.SUCCEEDED


@forking
def test_the_first_job_starts_the_server_and_the_next_ones_are_forked(
    launcher: ForkLauncher,
) -> None:
    """Nothing prepared it (a script, a test): the first job runs cold while the server loads."""
    first = run_job(DiagnosticRecipe(action="succeed"))
    assert first.state is JobState.SUCCEEDED
    server = _loaded(launcher)
    job = Job(DiagnosticRecipe(action="hang"))
    job.start(launcher)
    assert _parent(job.pid or 0) == server.process.pid
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED


@forking
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
    job.start(scheduler.default_launcher())
    assert job.pid is not None and job.pid != server.process.pid
    assert _parent(job.pid) in (server.process.pid, None)
    assert job.wait(120) is JobState.SUCCEEDED, job.error
    assert out.exists() and job.report is not None and job.report.output == str(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]


@forking
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


@forking
def test_cancel_and_timeout_stop_only_the_job(
    launcher: ForkLauncher, server: ForkServer, tmp_path: Path
) -> None:
    job = Job(DiagnosticRecipe(action="hang", output=str(tmp_path / "never.txt")))
    job.start(launcher)
    assert _parent(job.pid or 0) == server.process.pid
    time.sleep(0.3)
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED
    timed = run_job(DiagnosticRecipe(action="hang"), timeout=1.0)
    assert timed.state is JobState.TIMED_OUT
    assert server.alive() and launcher.current() is server  # the server is untouched
    assert list(tmp_path.iterdir()) == []


@forking
@pytest.mark.parametrize("action", ["spawn", "spawn-stubborn"])
def test_cancel_stops_the_forked_jobs_children_too(
    launcher: ForkLauncher, server: ForkServer, action: str
) -> None:
    # spawn-stubborn's child ignores SIGTERM: it outlives the worker unless it is killed.
    job = Job(DiagnosticRecipe(action=action))
    job.start(launcher)
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


@forking
def test_a_server_started_with_another_environment_is_replaced(
    launcher: ForkLauncher, server: ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGESTUDIO_TEST_CHANGED", "1")  # e.g. a setting the job must see
    job = run_job(DiagnosticRecipe(action="succeed"))  # cold, while the replacement loads
    assert job.state is JobState.SUCCEEDED
    replacement = _loaded(launcher)
    assert replacement is not server and replacement.env["EDGESTUDIO_TEST_CHANGED"] == "1"
    assert not server.folder.exists() and server.process.poll() is not None


@forking
def test_a_job_outlives_the_replacement_of_its_server(
    launcher: ForkLauncher, server: ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the server that forked a job can report how it ended: a server replaced while
    its job runs is kept until the job has ended."""
    # long enough to outlast a cold start of the next job on a loaded machine (at 1.5 s it
    # ended first there, and its server was closed as it should be)
    first = Job(DiagnosticRecipe(action="spin", seconds=10))
    first.start(launcher)
    monkeypatch.setenv("EDGESTUDIO_TEST_CHANGED", "1")
    assert run_job(DiagnosticRecipe(action="succeed")).state is JobState.SUCCEEDED
    assert _loaded(launcher) is not server  # replaced
    assert first.state is JobState.RUNNING, first.state
    assert server.alive()  # kept for its running job
    assert first.wait(60) is JobState.SUCCEEDED, first.error
    run_job(DiagnosticRecipe(action="succeed"))  # the next launch closes the idle old one
    assert server.process.poll() is not None and not server.folder.exists()


@forking
def test_a_dead_server_means_cold_jobs_not_failures(server: ForkServer) -> None:
    server.process.kill()
    server.process.wait(5)
    job = run_job(DiagnosticRecipe(action="succeed"))
    assert job.state is JobState.SUCCEEDED


@forking
def test_no_server_is_started_beside_a_job_that_measures_time(
    launcher: ForkLauncher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DiagnosticRecipe, "runs_alone", True)  # as a benchmark's
    job = Job(DiagnosticRecipe(action="hang"))
    job.start(launcher)
    assert launcher.current() is None  # loading modules now would disturb the measurement
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED


@forking
def test_closing_stops_the_server_and_leaves_nothing(launcher: ForkLauncher) -> None:
    launcher.prepare()
    server = _loaded(launcher)
    launcher.close()
    assert server.process.poll() is not None and not server.folder.exists()
    assert run_job(DiagnosticRecipe(action="succeed")).state is JobState.SUCCEEDED  # cold
    assert launcher.current() is None


@forking
def test_descriptors_a_worker_holds_and_the_app_keeps(
    launcher: ForkLauncher, server: ForkServer
) -> None:
    """A worker, forked or cold, holds its stdin (/dev/null), stdout and stderr (its stderr
    file) and its protocol pipe, nothing of the app or the server; ten jobs leave the app
    with the descriptors it had."""
    before = _descriptors("self")
    for chosen in (launcher, launch.SpawnLauncher()):
        job = Job(DiagnosticRecipe(action="hang"))
        job.start(chosen)
        time.sleep(0.5)
        held = _descriptors(job.pid or 0)
        job.cancel()
        assert job.wait(10) is JobState.CANCELLED
        assert held[0] == os.devnull and held[1] == held[2] and held[1].endswith("stderr.txt")
        assert len(held) == 4 and next(v for k, v in held.items() if k > 2).startswith("pipe:")
    for _ in range(10):
        assert run_job(DiagnosticRecipe(action="succeed")).state is JobState.SUCCEEDED
    assert _descriptors("self").keys() == before.keys()


def test_cli_commands_leave_no_server_or_folder_behind(tmp_path: Path) -> None:
    """`edgestudio quantize` starts its worker server while it parses and ends its process
    without the interpreter's teardown: whether it stopped early (a missing model) or ran its
    job, the server is stopped, its folder and the job's are removed, and what the command
    printed and wrote is all there."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    missing = str(tmp_path / "missing.onnx")
    done = run_cli("quantize", missing, "-o", str(tmp_path / "q.onnx"), env=env, timeout=120)
    assert done.returncode != 0 and "missing.onnx" in done.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("edgestudio-")] == []
    report = tmp_path / "report.json"
    args = ("-o", str(tmp_path / "q.onnx"), "--mode", "dynamic", "--json", str(report))
    done = run_cli("quantize", str(SAMPLE_MODEL), *args, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"output: {tmp_path / 'q.onnx'}" in done.stdout  # flushed before the fast exit
    assert done.stderr.rstrip().endswith("succeeded")
    assert json.loads(report.read_text())["state"] == "succeeded"
    assert (tmp_path / "q.onnx").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx", "report.json"]
