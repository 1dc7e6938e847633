"""Devices that are other Python environments on this machine (``env:PYTHON``): the device
environment of ``make device-env`` (an older onnxruntime) and the OpenVINO environment of
``make openvino-env`` (OpenVINO's own onnxruntime), through the runner SSH devices use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edgestudio.cli.main import main
from edgestudio.core.perf.bench import unavailable_reason
from edgestudio.core.perf.bench_recipes import BenchRecipe, DeviceCheckRecipe, ProfileRecipe
from edgestudio.core.perf.perf_results import Latency, Profile
from edgestudio.core.remote import devices
from edgestudio.core.remote.device_info import DeviceInfo
from edgestudio.core.remote.devices import (
    OPENVINO,
    Device,
    DeviceError,
    add_device,
    load_devices,
    make_device,
    remove_device,
)
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.remote.conftest import DEVICE_PYTHON, REPO

OPENVINO_PYTHON = REPO / ".openvino-venv" / "bin" / "python"
# `make test` makes the OpenVINO environment first; run another way, its tests skip.
NO_OPENVINO = f"no OpenVINO environment at {OPENVINO_PYTHON}: `make openvino-env` makes it"


@pytest.fixture(autouse=True)
def _own_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _device_python() -> Path:
    if not DEVICE_PYTHON.exists():
        pytest.skip(reason=f"no device environment at {DEVICE_PYTHON}: `make device-env`")
    return DEVICE_PYTHON


# ----- the address and the list ---------------------------------------------------------------
def test_an_environment_is_named_by_its_python() -> None:
    device = make_device("other", f"env:{sys.executable}")
    assert device.environment and device.host == ""
    assert device.python == str(Path(sys.executable).absolute())
    assert device.address == f"env:{device.python}"
    assert not make_device("pi", "ssh://pi@raspberrypi.local").environment


def test_an_environment_without_a_python_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match="is not a Python executable"):
        make_device("other", f"env:{tmp_path / 'bin' / 'python'}")


def test_an_added_environment_is_kept_and_forgotten(tmp_path: Path) -> None:
    add_device(make_device("other", f"env:{sys.executable}"))
    assert load_devices()["other"].environment
    remove_device("other")
    assert "other" not in load_devices()


def test_the_environment_make_made_is_listed_but_not_removable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = {OPENVINO: Device(OPENVINO, "", python=sys.executable)}
    monkeypatch.setattr(devices, "made_environments", lambda: made)
    assert load_devices()[OPENVINO].environment
    with pytest.raises(DeviceError, match="is the environment `make` made"):
        remove_device(OPENVINO)
    # the user's own device of that name wins
    add_device(make_device(OPENVINO, "ssh://me@box"))
    assert not load_devices()[OPENVINO].environment


def test_a_provider_missing_here_names_the_environment_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(devices, "made_environments", lambda: {OPENVINO: None})
    reason = unavailable_reason("OpenVINOExecutionProvider")
    assert reason is not None and "env:PYTHON" in reason and "--device local,openvino" in reason


# ----- runs in another environment -------------------------------------------------------------
@pytest.mark.e2e
def test_bench_in_another_environment_beside_this_machine(sample_model: Path) -> None:
    python = _device_python()
    add_device(make_device("older", f"env:{python}"))
    job = run_job(
        BenchRecipe(models=(str(sample_model),), devices=("local", "older"), warmup=3, runs=20)
    )
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    here, there = job.report.result_as(Latency).rows
    assert here.ok and there.ok, there.error
    assert there.device == "older" and there.runtime not in ("", ort.__version__)
    assert there.runs == 20 and here.inputs == there.inputs
    check = run_job(DeviceCheckRecipe(device="older"))
    assert check.report is not None, check.error
    info = check.report.result_as(DeviceInfo)
    assert info.usable and info.address == f"env:{python}"


@pytest.mark.e2e
def test_an_environment_whose_python_is_gone_fails_with_the_way_back(
    tmp_path: Path, sample_model: Path
) -> None:
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    os.symlink(sys.executable, python)
    add_device(make_device("gone", f"env:{python}"))
    python.unlink()
    job = run_job(BenchRecipe(models=(str(sample_model),), devices=("gone",), runs=5))
    assert job.report is not None, job.error
    row = job.report.result_as(Latency).rows[0]
    assert not row.ok and "there is no Python at" in (row.error or "")


@pytest.mark.e2e
def test_openvino_benchmarks_the_sample_beside_the_cpu(
    sample_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OpenVINO's environment, listed without being added, times its CPU EP and OpenVINO side
    by side on the same inputs, and the CLI says where each row was measured."""
    if not OPENVINO_PYTHON.exists():
        pytest.skip(reason=NO_OPENVINO)
    assert OPENVINO in load_devices()
    code = main(
        [
            "bench",
            str(sample_model),
            "--device",
            "local,openvino",
            "--ep",
            "cpu,openvino",
            "--runs",
            "20",
            "--warmup",
            "3",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    there = [line for line in captured.out.splitlines() if "openvino (ort" in line]
    assert len(there) == 2 and not any("not in" in line for line in there), captured.out
    job = run_job(
        BenchRecipe(
            models=(str(sample_model),),
            devices=(OPENVINO,),
            providers=("CPUExecutionProvider", "OpenVINOExecutionProvider"),
            runs=20,
        )
    )
    assert job.report is not None, job.error
    cpu, openvino = job.report.result_as(Latency).rows
    assert cpu.ok and openvino.ok, openvino.error
    assert openvino.ep == "OpenVINOExecutionProvider" and openvino.median_ms is not None
    assert cpu.inputs == openvino.inputs


@pytest.mark.e2e
def test_openvino_profiles_the_sample(sample_model: Path) -> None:
    if not OPENVINO_PYTHON.exists():
        pytest.skip(reason=NO_OPENVINO)
    job = run_job(
        ProfileRecipe(
            model=str(sample_model),
            device=OPENVINO,
            providers=("OpenVINOExecutionProvider",),
            runs=5,
        )
    )
    assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
    profile = job.report.result_as(Profile)
    assert profile.device == OPENVINO and profile.runtime
    assert profile.nodes and np.isfinite(profile.total_us) and profile.total_us > 0
