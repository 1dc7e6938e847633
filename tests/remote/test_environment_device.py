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
from edgestudio.core.remote import devices
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
    here, there = job.report.result.rows
    assert here.ok and there.ok, there.error
    assert there.device == "older" and there.runtime not in ("", ort.__version__)
    assert there.runs == 20 and here.inputs == there.inputs
    check = run_job(DeviceCheckRecipe(device="older"))
    assert check.report is not None, check.error
    info = check.report.result
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
    row = job.report.result.rows[0]
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
    cpu, openvino = job.report.result.rows
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
    profile = job.report.result
    assert profile.device == OPENVINO and profile.runtime
    assert profile.nodes and np.isfinite(profile.total_us) and profile.total_us > 0


def test_the_runner_sends_back_each_samples_outputs(tmp_path: Path, sample_model: Path) -> None:
    """``run``: the provider alone computes each feeds file's outputs, sent back as .npz; the
    values are the session's own."""
    import base64
    import io
    import json
    import subprocess

    from edgestudio.core.remote import device_runner

    model = sample_model
    feeds = []
    rng = np.random.default_rng(0)
    for k in range(2):
        path = tmp_path / f"feeds{k}.npz"
        np.savez(path, image=rng.standard_normal((1, 1, 8, 8)).astype(np.float32))
        feeds.append(str(path))
    request = {
        "op": "run",
        "model": str(model),
        "feeds": feeds,
        "provider": "CPUExecutionProvider",
        "outputs": ["logits"],
    }
    # stdin stays open while it runs, as a link keeps it: the runner exits when it closes
    runner = subprocess.Popen(
        [sys.executable, device_runner.__file__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert runner.stdin is not None and runner.stdout is not None
    runner.stdin.write(json.dumps(request) + "\n")
    runner.stdin.flush()
    events = []
    for line in runner.stdout:
        if line.startswith("{"):
            events.append(json.loads(line))
            if events[-1]["event"] in ("result", "error"):
                break
    assert runner.wait(timeout=60) == 0, runner.stderr.read() if runner.stderr else ""
    runner.stdin.close()
    sent = [e for e in events if e["event"] == "outputs"]
    assert [e["index"] for e in sent] == [0, 1] and events[-1]["event"] == "result"
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for event, path in zip(sent, feeds, strict=True):
        with np.load(io.BytesIO(base64.b64decode(event["npz"]))) as got:
            expected = session.run(["logits"], dict(np.load(path)))[0]
            np.testing.assert_array_equal(got["o0"], expected)


@pytest.mark.e2e
def test_openvino_judges_a_quantized_model_in_its_own_arithmetic(
    tmp_path: Path, sample_model: Path
) -> None:
    """analyze --target openvino: the whole-model figures come from OpenVINO's onnxruntime in
    its environment, said beside them; the per-layer ones stay the CPU's."""
    if not OPENVINO_PYTHON.exists():
        pytest.skip(reason=NO_OPENVINO)
    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import AnalyzeRecipe
    from tests import models

    quant = models.quantized_sample(tmp_path)
    data = DataSource("synthetic", samples=4, seed=0)
    figures = {}
    for target in ("cpu", "openvino"):
        recipe = AnalyzeRecipe(
            float_model=str(sample_model), quant_model=str(quant), data=data, target=target
        )
        job = run_job(recipe)
        assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
        analysis = job.report.result
        assert analysis.measured_on == target
        figures[target] = analysis.outputs[0].sqnr_db
        said = [w for w in job.report.warnings if "Whole-model figures measured on" in w]
        assert bool(said) == (target == "openvino"), job.report.warnings
    assert "OpenVINOExecutionProvider in 'openvino'" in said[0]
    # one model, two runtimes' arithmetic: OpenVINO's differs from onnxruntime's integer kernels
    assert all(15 < sqnr < 90 for sqnr in figures.values()), figures


def test_judging_in_openvino_without_its_environment_says_how_to_get_it(
    tmp_path: Path, sample_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnx

    from edgestudio.core.quant.deployed import Deployed

    monkeypatch.setattr(devices, "made_environments", dict)
    model = onnx.load(str(sample_model))
    with pytest.raises(DeviceError, match="make openvino-env"):
        Deployed(model, ["logits"], sample_model, "openvino", tmp_path)


# ----- compiling for the NPU on a device ------------------------------------------------------
@pytest.mark.e2e
def test_a_device_with_the_qnn_package_compiles_reloads_and_sends_the_binary_back(
    tmp_path: Path,
) -> None:
    """`target compile --device`: this environment (the app's own, with onnxruntime-qnn) as the
    device; the runner compiles, reloads and runs the binary there, and the files come back
    whole — loadable here, with the outputs of the binary compiled here."""
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed here")
    from edgestudio.core.targets import qnn_htp
    from edgestudio.core.targets.target_recipe import TargetCompileRecipe
    from tests import models

    add_device(make_device("board", f"env:{sys.executable}"))
    quant = models.quantized_sample(tmp_path)  # the digits sample, QDQ, dynamic batch
    outputs = []
    for device, folder in (("board", "from_board"), ("", "here")):
        out = tmp_path / folder / "m_ctx.onnx"
        out.parent.mkdir()
        job = run_job(TargetCompileRecipe(model=str(quant), output=str(out), device=device))
        assert job.state is JobState.SUCCEEDED and job.report is not None, job.error
        compiled = job.report.result
        assert compiled.device == device and compiled.max_abs_difference == 0.0
        assert ("on board" in compiled.text()) == bool(device)
        assert compiled.fixes == ["image fixed to 1x1x8x8"]
        binary = out.parent / compiled.binary
        assert binary.stat().st_size == compiled.binary_bytes > 0
        assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, binary.name])
        session = ort.InferenceSession(str(out), qnn_htp.session_options("73", fallback=False))
        outputs.append(session.run(None, {"image": np.ones((1, 1, 8, 8), np.float32)})[0])
    np.testing.assert_array_equal(outputs[0], outputs[1])


@pytest.mark.e2e
def test_compiling_on_a_device_without_qnn_says_how_to_get_it(tmp_path: Path) -> None:
    from edgestudio.core.targets.target_recipe import TargetCompileRecipe
    from tests import models

    add_device(make_device("old", f"env:{_device_python()}"))
    quant = models.quantized_sample(tmp_path)
    out = tmp_path / "m_ctx.onnx"
    job = run_job(TargetCompileRecipe(model=str(quant), output=str(out), device="old"))
    assert job.state is JobState.FAILED
    assert (
        "has no QNN execution provider" in job.error and "pip install onnxruntime-qnn" in job.error
    )
    assert not out.exists() and list(tmp_path.glob("*.bin")) == []
