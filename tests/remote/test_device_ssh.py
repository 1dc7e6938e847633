"""Devices over SSH, against a real SSH server on the loopback interface and a device Python
with another onnxruntime than the app's: add, check, bench, profile, cancel, a dropped link, a
crashed runner, a full disk, a changed host key, a device without onnxruntime."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import asyncssh
import onnxruntime as ort
import pytest

from edgestudio.cli.main import main
from edgestudio.core.perf.bench_recipes import BenchRecipe, DeviceCheckRecipe, ProfileRecipe
from edgestudio.core.remote.device_info import DeviceInfo
from edgestudio.core.remote.devices import load_devices
from edgestudio.core.remote.ssh_link import known_hosts_file
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import default_launcher, run_job
from tests.models import external_weights
from tests.remote.conftest import DEVICE_PYTHON, Loopback, bare_python, runner_processes

DEVICE_ORT = "1.22.1"  # what `make device-env` installs


def _device_ort() -> str:
    import subprocess

    return subprocess.run(
        [str(DEVICE_PYTHON), "-c", "import onnxruntime;print(onnxruntime.__version__)"],
        capture_output=True,
        text=True,
    ).stdout.strip()


def _wait_for(condition: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


# ----- add, list, check ------------------------------------------------------------------------
@pytest.mark.e2e
def test_device_add_trusts_the_fingerprint_given_and_checks_the_device(
    loopback: Loopback, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    known_hosts_file().unlink()  # a new device: its key is not known yet
    report = tmp_path / "check.json"
    code = main(
        [
            "device",
            "add",
            "pi",
            f"ssh://tester@127.0.0.1:{loopback.server.port}",
            "--python",
            str(DEVICE_PYTHON),
            "--key",
            str(loopback.key_file),
            "--trust-host-key",
            loopback.fingerprint(),
            "--json",
            str(report),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "pi" in load_devices()
    assert loopback.fingerprint() in out
    assert f"[127.0.0.1]:{loopback.server.port} ssh-ed25519" in known_hosts_file().read_text()
    written = json.loads(report.read_text())  # the result's fields beside the report's
    info = DeviceCheckRecipe().read_result(
        {f.name: written[f.name] for f in dataclasses.fields(DeviceInfo) if f.name in written}
    )
    assert info.usable and info.onnxruntime == _device_ort() != ort.__version__
    assert "CPUExecutionProvider" in info.providers and info.cores and info.memory_bytes
    assert info.python_path == str(DEVICE_PYTHON)
    assert "can run models" in out and info.onnxruntime in out
    assert main(["device", "list"]) == 0
    assert f"ssh://tester@127.0.0.1:{loopback.server.port}" in capsys.readouterr().out


def test_an_unknown_host_key_is_not_trusted_without_asking(
    loopback: Loopback, capsys: pytest.CaptureFixture[str]
) -> None:
    known_hosts_file().unlink()
    address = f"ssh://tester@127.0.0.1:{loopback.server.port}"
    assert main(["device", "add", "pi", address, "--key", str(loopback.key_file)]) != 0
    captured = capsys.readouterr()
    assert "can't be established" in captured.out and "--trust-host-key" in captured.err
    assert (
        main(
            [
                "device",
                "add",
                "pi",
                address,
                "--key",
                str(loopback.key_file),
                "--trust-host-key",
                "SHA256:not-this-one",
            ]
        )
        != 0
    )
    assert "not trusted" in capsys.readouterr().err
    assert "pi" not in load_devices()
    assert not known_hosts_file().exists()


@pytest.mark.e2e
def test_a_changed_host_key_is_refused_and_nothing_is_sent(
    loopback: Loopback, sample_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback.restart(host_key=asyncssh.generate_private_key("ssh-ed25519"))
    assert main(["device", "check", "loop"]) != 0
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in capsys.readouterr().err
    job = run_job(BenchRecipe(models=(str(sample_model),), devices=("loop",), runs=5))
    latency = job.report.result if job.report else None
    assert latency is not None and latency.failures
    assert "HAS CHANGED" in latency.failures[0] and not any(r.ok for r in latency.rows)
    assert loopback.server.commands == []  # refused before logging in


@pytest.mark.e2e
def test_a_device_without_onnxruntime_says_the_command_that_installs_it(
    loopback: Loopback, tmp_path: Path, sample_model: Path
) -> None:
    bare = loopback.add("fresh", python=str(bare_python(tmp_path / "fresh-venv")))
    job = run_job(DeviceCheckRecipe(device=bare.name))
    assert job.state is JobState.SUCCEEDED and job.report is not None
    info = job.report.result
    assert not info.usable and info.onnxruntime is None and info.numpy is None
    assert f"{bare.python} -m pip install onnxruntime numpy" in info.problems[0]
    bench = run_job(BenchRecipe(models=(str(sample_model),), devices=("fresh",), runs=5))
    assert bench.report is not None
    row = bench.report.result.rows[0]
    assert not row.ok and "pip install onnxruntime" in (row.error or "")


@pytest.mark.e2e
def test_a_device_without_python_is_a_clear_error(loopback: Loopback) -> None:
    loopback.add("nopython", python="/nonexistent/python3")
    job = run_job(DeviceCheckRecipe(device="nopython"))
    assert job.state is JobState.FAILED
    assert "has no Python at '/nonexistent/python3'" in (job.error or "")


# ----- bench and profile -----------------------------------------------------------------------
@pytest.mark.e2e
def test_bench_on_the_device_beside_this_machine(loopback: Loopback, sample_model: Path) -> None:
    recipe = BenchRecipe(models=(str(sample_model),), devices=("local", "loop"), warmup=3, runs=30)
    job = run_job(recipe)
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    here, there = job.report.result.rows
    assert here.ok and there.ok, there.error
    assert (here.device, there.device) == ("", "loop")
    assert here.runtime == ort.__version__ and there.runtime == _device_ort()
    assert here.runs == there.runs == 30 and len(there.samples_ms) == 30
    assert here.inputs == there.inputs  # the same input specification
    assert there.median_ms is not None and there.median_ms > 0
    models = list((loopback.home / ".cache/edgestudio-device/models").iterdir())
    assert len(models) == 1  # copied under its content hash
    again = run_job(BenchRecipe(models=(str(sample_model),), devices=("loop",), runs=5))
    assert any("already on the device" in line for line in again.log)
    assert len(list((loopback.home / ".cache/edgestudio-device/models").iterdir())) == 1
    assert recipe.to_command()[-2:] == ["--device", "local,loop"]


@pytest.mark.e2e
def test_a_model_with_external_data_is_copied_with_it(loopback: Loopback, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    model = external_weights(folder)
    job = run_job(BenchRecipe(models=(str(model),), devices=("loop",), runs=5))
    assert job.report is not None, job.error
    row = job.report.result.rows[0]
    assert row.ok, row.error
    copied = next((loopback.home / ".cache/edgestudio-device/models").iterdir())
    assert sorted(p.name for p in copied.iterdir()) == ["ext.onnx", "weights.bin"]


@pytest.mark.e2e
def test_profile_on_the_device_maps_onto_the_graph(loopback: Loopback, sample_model: Path) -> None:
    import onnx

    job = run_job(ProfileRecipe(model=str(sample_model), device="loop", runs=5))
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    profile = job.report.result
    assert profile.device == "loop" and profile.runtime == _device_ort()
    names = {n.name for n in onnx.load(str(sample_model)).graph.node}
    covered = {c for n in profile.nodes for c in n.covers}
    assert covered and covered <= names
    assert ProfileRecipe(model="m.onnx", device="loop").to_command()[-2:] == ["--device", "loop"]


@pytest.mark.e2e
def test_cli_bench_prints_where_each_row_was_measured(
    loopback: Loopback, sample_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["bench", str(sample_model), "--device", "local,loop", "--runs", "10", "--warmup", "2"]
    )
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, out + captured.err
    assert "this machine" in out and f"loop (ort {_device_ort()})" in out


# ----- fragile links ---------------------------------------------------------------------------
def _long_bench(model: Path, **fields: object) -> Job:
    job = Job(BenchRecipe(models=(str(model),), devices=("loop",), warmup=1, runs=1, **fields))  # type: ignore[arg-type]
    job.start(default_launcher())
    return job


def _poll_until(job: Job, condition: object, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.poll(0.1)
        if condition():  # type: ignore[operator]
            return True
        if job.state.is_final:
            return False
    return False


@pytest.mark.e2e
def test_cancel_stops_the_runner_on_the_device(loopback: Loopback, sample_model: Path) -> None:
    job = _long_bench(sample_model, seconds=120.0)
    assert _poll_until(job, lambda: "timing" in job.stage), job.log
    assert runner_processes(loopback.home)
    job.cancel()
    job.wait(30)
    assert job.state is JobState.CANCELLED
    assert _wait_for(lambda: not runner_processes(loopback.home), 15), "runner left running"


@pytest.mark.e2e
def test_a_dropped_link_keeps_what_was_measured(loopback: Loopback, sample_model: Path) -> None:
    # Two thread counts are timed one after the other: the first is measured, then the link
    # drops while the second is being timed.
    job = _long_bench(sample_model, seconds=3.0, threads=(1, 2))
    assert _poll_until(job, lambda: any("1 thread(s): median" in line for line in job.log)), (
        "\n".join(job.log) + f"{job.state} {job.error}"
    )
    threading.Timer(0.5, loopback.server.drop_connections).start()
    job.wait(60)
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    latency = job.report.result
    first, second = latency.rows
    assert first.ok and not second.ok
    assert "connection to loop was lost" in (second.error or "")
    assert latency.failures and "loop" in latency.failures[0]
    assert _wait_for(lambda: not runner_processes(loopback.home), 15), "runner left running"


@pytest.mark.e2e
def test_a_crashed_runner_is_a_clear_failure(
    loopback: Loopback, tmp_path: Path, sample_model: Path
) -> None:
    # The device's Python, with a sitecustomize that crashes it (SIGSEGV) once a bench starts,
    # as an onnxruntime with a broken kernel would.
    hook = tmp_path / "crash-hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, signal, sys, threading\n"
        "class _Stdin:\n"
        "    def __init__(self, real): self._real = real\n"
        "    def __getattr__(self, name): return getattr(self._real, name)\n"
        "    def readline(self):\n"
        "        line = self._real.readline()\n"
        "        if '\"bench\"' in line:\n"
        "            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGSEGV)).start()\n"
        "        return line\n"
        "sys.stdin = _Stdin(sys.stdin)\n"
    )
    wrapper = tmp_path / "crashing-python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={hook} exec {DEVICE_PYTHON} "$@"\n')
    wrapper.chmod(0o755)
    loopback.add("crashy", python=str(wrapper))
    job = run_job(BenchRecipe(models=(str(sample_model),), devices=("crashy",), seconds=30.0))
    assert job.report is not None, job.error
    latency = job.report.result
    assert "crashed on crashy" in latency.failures[0] and "SEGV" in latency.failures[0]
    assert "not measured" in (latency.rows[0].error or "")


@pytest.mark.e2e
def test_a_full_disk_on_the_device_is_a_clear_failure(
    loopback: Loopback, sample_model: Path
) -> None:
    loopback.server.sftp.limit = 100_000  # the runner fits, the model does not
    job = run_job(BenchRecipe(models=(str(sample_model),), devices=("local", "loop"), runs=5))
    assert job.report is not None, job.error
    latency = job.report.result
    assert latency.rows[0].ok  # this machine's row is kept
    assert "No space left on device" in latency.failures[0]
    assert "disk full" in latency.failures[0]
    leftovers = list((loopback.home / ".cache/edgestudio-device").rglob("*.onnx"))
    assert leftovers == []  # only a .part, never a model file that looks whole


@pytest.mark.e2e
def test_a_board_with_the_qnn_package_compiles_over_ssh(loopback: Loopback, tmp_path: Path) -> None:
    """`target compile --device` over SSH: a device whose Python has onnxruntime-qnn (this
    machine's own, behind the loopback server) compiles, proves and sends back the binary."""
    import sys

    import numpy as np

    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed here")
    from edgestudio.core.targets import qnn_htp
    from edgestudio.core.targets.target_recipe import TargetCompileRecipe
    from tests import models

    loopback.add("board", python=sys.executable)
    quant = models.quantized_sample(tmp_path)
    out = tmp_path / "compiled" / "m_ctx.onnx"
    out.parent.mkdir()
    job = run_job(TargetCompileRecipe(model=str(quant), output=str(out), device="board"))
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    compiled = job.report.result
    assert compiled.device == "board" and compiled.max_abs_difference == 0.0
    assert "on board" in compiled.provider
    session = ort.InferenceSession(str(out), qnn_htp.session_options("73", fallback=False))
    (y,) = session.run(None, {"image": np.ones((1, 1, 8, 8), np.float32)})
    assert y.shape == (1, 10) and np.isfinite(y).all()
