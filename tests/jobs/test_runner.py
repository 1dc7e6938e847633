"""Every job outcome, with purpose-made worker jobs; nothing partial is ever left behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.jobs import launch, protocol, scheduler
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import default_launcher, run_job
from edgestudio.jobs.staging import OutputPathError


@pytest.fixture(autouse=True)
def _cold_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Here every worker starts cold; tests/jobs/test_launch.py holds forked ones to the same
    outcomes."""
    monkeypatch.setattr(scheduler, "_default", launch.SpawnLauncher())


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.e2e
def test_succeeded_job_moves_output_into_place(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    job = run_job(DiagnosticRecipe(action="succeed", output=str(out)))
    assert job.state is JobState.SUCCEEDED
    assert out.read_text() == "EdgeStudio self-test output\n"
    assert job.report is not None and job.report.output == str(out)
    assert _files(tmp_path) == ["result.txt"]  # the staging folder is gone


@pytest.mark.e2e
def test_failed_job_carries_the_exception_message() -> None:
    job = run_job(DiagnosticRecipe(action="fail"))
    assert job.state is JobState.FAILED
    assert job.error == "The self-test job failed on purpose."
    assert job.error_type == "ValueError"
    assert any("Traceback" in line for line in job.log)


@pytest.mark.e2e
def test_segfault_is_a_crash_with_stderr_tail(tmp_path: Path) -> None:
    job = run_job(DiagnosticRecipe(action="crash"))
    assert job.state is JobState.CRASHED
    assert "SIGSEGV" in (job.error or "")
    assert "Fatal Python error" in job.stderr_tail  # faulthandler's report


@pytest.mark.e2e
def test_crash_leaves_no_partial_output(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    job = run_job(DiagnosticRecipe(action="partial", output=str(out)))
    assert job.state is JobState.CRASHED
    assert _files(tmp_path) == []


@pytest.mark.e2e
def test_hang_times_out(tmp_path: Path) -> None:
    started = time.monotonic()
    job = run_job(DiagnosticRecipe(action="hang"), timeout=1.0)
    assert job.state is JobState.TIMED_OUT
    assert "1 s limit" in (job.error or "")
    assert time.monotonic() - started < 10


@pytest.mark.e2e
def test_cancel_stops_a_hanging_worker(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    job = Job(DiagnosticRecipe(action="hang", output=str(out)))
    job.start(default_launcher())
    job.poll(0.5)
    pid = job.pid
    assert pid is not None
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED
    assert _files(tmp_path) == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.e2e
def test_existing_output_needs_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    out.write_text("keep me")
    with pytest.raises(OutputPathError, match="already exists"):
        Job(DiagnosticRecipe(action="succeed", output=str(out))).start(default_launcher())
    assert out.read_text() == "keep me"
    job = run_job(DiagnosticRecipe(action="succeed", output=str(out), overwrite=True))
    assert job.state is JobState.SUCCEEDED and out.read_text().startswith("EdgeStudio")


@pytest.mark.e2e
def test_failed_job_keeps_the_existing_output(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    out.write_text("keep me")
    job = run_job(DiagnosticRecipe(action="partial", output=str(out), overwrite=True))
    assert job.state is JobState.CRASHED
    assert out.read_text() == "keep me"
    assert _files(tmp_path) == ["result.txt"]


def test_missing_output_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputPathError, match="does not exist"):
        Job(DiagnosticRecipe(output=str(tmp_path / "nope" / "x.txt"))).start(default_launcher())


@pytest.mark.e2e
def test_progress_and_stage_arrive() -> None:
    seen: list[float] = []
    job = run_job(
        DiagnosticRecipe(action="spin", seconds=0.5),
        on_update=lambda j: seen.append(j.fraction or 0.0),
    )
    assert job.state is JobState.SUCCEEDED
    assert seen and max(seen) > 0.5
    assert job.log[0].startswith("▸ self-test: spin")


def test_protocol_round_trip_and_version_check() -> None:
    line = protocol.encode("progress", fraction=0.5)
    assert protocol.decode(line.strip()) == {
        "v": protocol.PROTOCOL_VERSION,
        "type": "progress",
        "fraction": 0.5,
    }
    assert protocol.decode(b'{"v": 999, "type": "progress"}') is None
    assert protocol.decode(b"native library noise") is None


def test_equivalent_command_line() -> None:
    recipe = DiagnosticRecipe(action="spin", seconds=2.0, output="/tmp/x y.txt")
    assert recipe.command_line() == "edgestudio diagnostic spin -o '/tmp/x y.txt' --seconds 2.0"


@pytest.mark.e2e
def test_memory_error_in_the_worker_is_a_clear_failure(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    job = run_job(DiagnosticRecipe(action="hog", megabytes=200, output=str(out)))
    assert job.state is JobState.FAILED
    assert job.error_type == "MemoryError"
    assert "ran out of memory" in (job.error or "")
    assert _files(tmp_path) == []


@pytest.mark.e2e
def test_out_of_memory_kill_is_a_crash_with_peak_memory_and_stderr_tail(tmp_path: Path) -> None:
    out = tmp_path / "result.txt"
    job = Job(DiagnosticRecipe(action="hog", output=str(out)))
    job.start(default_launcher())
    deadline = time.monotonic() + 60
    while (job.peak_memory_mb or 0) < 300 and time.monotonic() < deadline:
        job.poll(0.1)
    assert job.pid is not None and (job.peak_memory_mb or 0) >= 300
    os.kill(job.pid, signal.SIGKILL)  # what the kernel's out-of-memory killer sends
    assert job.wait(30) is JobState.CRASHED
    assert "SIGKILL" in (job.error or "") and "out of memory" in (job.error or "")
    assert " MB" in (job.error or "")
    assert "self-test: holding" in job.stderr_tail
    assert _files(tmp_path) == []


@pytest.mark.e2e
def test_cancel_stops_the_workers_children_too() -> None:
    """The whole process tree goes, found through psutil (no process groups)."""
    import psutil

    job = Job(DiagnosticRecipe(action="spawn"))
    job.start(default_launcher())
    deadline = time.monotonic() + 30
    while not any(line.startswith("child ") for line in job.log) and time.monotonic() < deadline:
        job.poll(0.1)
    child_pid = int(next(line for line in job.log if line.startswith("child ")).split()[1])
    assert psutil.pid_exists(child_pid)
    job.cancel()
    assert job.wait(10) is JobState.CANCELLED
    if psutil.pid_exists(child_pid):
        _, alive = psutil.wait_procs([psutil.Process(child_pid)], timeout=5)
        assert not alive


@pytest.mark.e2e
def test_native_prints_on_stdout_do_not_disturb_the_protocol() -> None:
    """The worker points fd 1 at stderr: a library writing there lands in the stderr tail."""
    job = run_job(DiagnosticRecipe(action="noise"))
    assert job.state is JobState.SUCCEEDED
    assert "noise from a native library" in job.stderr_tail


@pytest.mark.e2e
def test_peak_memory_is_the_workers_own() -> None:
    """Sampled through psutil: more than an interpreter, far less than a forked parent's."""
    job = run_job(DiagnosticRecipe(action="spin", seconds=0.5))
    assert job.peak_memory_mb is not None and 5 < job.peak_memory_mb < 300


def test_the_runner_reads_no_proc_and_uses_no_process_groups() -> None:
    """Portable by construction: nothing under edgestudio/ reads /proc or calls killpg.

    Except the device runner, which runs on a device, not here: it reads /proc/cpuinfo for the
    CPU's feature flags where there is one, and falls back to ``platform`` elsewhere."""
    root = Path(__file__).resolve().parents[2] / "edgestudio"
    for path in root.rglob("*.py"):
        text = path.read_text()
        if path.name == "device_runner.py":
            text = text.replace('open("/proc/cpuinfo"', "")
        assert "/proc/" not in text and "killpg" not in text and "pass_fds" not in text, path


@pytest.mark.e2e
def test_a_killed_owners_staging_folder_goes_with_the_next_job(tmp_path: Path) -> None:
    """``kill -9`` of a command leaves its staging folder (nothing ran its clean-up); the next
    job writing to that folder removes it, and never a live owner's."""
    import subprocess
    import sys

    from edgestudio.jobs.staging import remove_stale_staging

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = tmp_path / f".m.onnx.edgestudio-{gone.pid}-abc.tmp"
    live = tmp_path / f".m.onnx.edgestudio-{os.getpid()}-def.tmp"
    older = tmp_path / ".m.onnx.edgestudio-xyz.tmp"  # an older version's: owner unknown, kept
    for folder in (stale, live, older):
        folder.mkdir()
    out = tmp_path / "out.txt"
    job = run_job(DiagnosticRecipe(action="succeed", output=str(out)), timeout=60)
    assert job.state is JobState.SUCCEEDED and out.exists()
    assert not stale.exists() and live.exists() and older.exists()
    assert remove_stale_staging(tmp_path) == []
