"""``edgestudio convert/export/diagnostic``: exit codes, JSON reports, --overwrite, Ctrl+C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests import models
from tests.cli.run import run_cli
from tests.conftest import SAMPLE


def test_convert_json_report(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(opset=13), tmp_path / "m.onnx")
    out, report = tmp_path / "o.onnx", tmp_path / "r.json"
    proc = run_cli("convert", str(src), "-o", str(out), "--opset", "17", "--json", str(report))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    assert data["output"] == str(out) and data["passed"] is True
    outputs = data["check"]["cases"][0]["outputs"]
    assert outputs[0]["name"] == "y" and outputs[0]["max_abs_err"] < 1e-5
    assert "max_rel_err" in outputs[0]
    assert data["command"].startswith("edgestudio convert")
    assert "check: equivalent" in proc.stdout


def test_convert_static_whole_shape_and_dynamic(tmp_path: Path) -> None:
    src = models.save(models.fixed_batch_conv(), tmp_path / "m.onnx")
    proc = run_cli(
        "convert",
        str(src),
        "-o",
        str(tmp_path / "d.onnx"),
        "--dynamic",
        "x:0=batch",
        "--dynamic",
        "y:0=batch",
    )
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(
        "convert",
        str(tmp_path / "d.onnx"),
        "-o",
        str(tmp_path / "s.onnx"),
        "--static",
        "x=2x3x8x8",
        "--static",
        "y:0=2",
    )
    assert proc.returncode == 0, proc.stderr


def test_not_equivalent_exits_1(tmp_path: Path) -> None:
    # Unseeded random noise: the converted model runs, but never gives the same numbers.
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("RandomUniformLike", ["x"], ["noise"], dtype=TensorProto.FLOAT),
            helper.make_node("Add", ["x", "noise"], ["y"]),
        ],
        "noisy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    src = models.save(model, tmp_path / "m.onnx")
    proc = run_cli("convert", str(src), "-o", str(tmp_path / "o.onnx"), "--opset", "18")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "converted, not equivalent" in proc.stdout
    assert (tmp_path / "o.onnx").exists()  # it runs: kept, with the numbers


def test_a_dynamic_axis_the_model_cannot_take_exits_2(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    proc = run_cli("convert", str(src), "-o", str(tmp_path / "o.onnx"), "--dynamic", "x:2=h")
    assert proc.returncode == 2
    assert "declares dynamic axes but does not run" in proc.stderr
    assert not (tmp_path / "o.onnx").exists()


def test_existing_output_needs_overwrite(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(opset=13), tmp_path / "m.onnx")
    out = tmp_path / "o.onnx"
    out.write_bytes(b"precious")
    proc = run_cli("convert", str(src), "-o", str(out), "--opset", "17")
    assert proc.returncode == 2 and "--overwrite" in proc.stderr
    assert out.read_bytes() == b"precious"
    proc = run_cli("convert", str(src), "-o", str(out), "--opset", "17", "--overwrite")
    assert proc.returncode == 0 and out.read_bytes() != b"precious"


def test_output_equal_to_input_is_refused(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(opset=13), tmp_path / "m.onnx")
    before = src.read_bytes()
    proc = run_cli("convert", str(src), "-o", str(src), "--opset", "17", "--overwrite")
    assert proc.returncode == 2 and "never overwrites its input" in proc.stderr
    assert src.read_bytes() == before


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    proc = run_cli("convert", "m.onnx", "-o", "o.onnx", "--dynamic", "x0batch")
    assert proc.returncode == 2 and "NAME:AXIS=SYMBOL" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_crash_exit_code_and_message() -> None:
    proc = run_cli("diagnostic", "crash")
    assert proc.returncode == 2
    assert "job crashed" in proc.stderr and "SIGSEGV" in proc.stderr


def _interruptible() -> None:
    """Ctrl+C as in a terminal, even when the tests run in the background (a shell starts a
    background job with SIGINT ignored, and the child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_cancels_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "o.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgestudio", "diagnostic", "hang", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    # Wait for the state, not a time: the job's own stage line says its worker runs (two
    # seconds were not enough on a loaded machine: the signal landed while Python started).
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "self-test: hang" in line:
            break
    else:
        pytest.fail(f"the job never said it started: {''.join(seen)}")
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=30)
    assert proc.returncode == 130, "".join(seen) + rest
    assert "cancelled" in rest
    assert os.listdir(tmp_path) == []


def _marked(mark: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if (
                process.environ().get("EDGESTUDIO_TEST_MARK") == mark
                and process.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(process)
        except psutil.Error:
            continue
    return found


@pytest.mark.e2e
@pytest.mark.parametrize("delay", [0.3, 0.6, 0.9, 1.2])
def test_ctrl_c_while_the_job_starts_leaves_no_process(tmp_path: Path, delay: float) -> None:
    """Ctrl+C may land while the command's job is still being started (its worker loading or
    being forked): the job must be stopped all the same, not left running unseen."""
    mark = f"{os.getpid()}-{delay}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgestudio", "diagnostic", "hang", "-o", str(tmp_path / "o.txt")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "EDGESTUDIO_TEST_MARK": mark},
        preexec_fn=_interruptible,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == []
    assert os.listdir(tmp_path) == []


def test_a_missing_model_or_unwritable_report_stops_before_anything_runs(tmp_path: Path) -> None:
    good = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    start = time.monotonic()
    proc = run_cli("bench", str(good), str(tmp_path / "missing.onnx"), "--runs", "5")
    assert proc.returncode == 2
    assert "missing.onnx does not exist" in proc.stderr and "nothing was run" in proc.stderr
    proc = run_cli(
        "bench", str(good), "--runs", "5", "--json", str(tmp_path / "no_such_folder" / "r.json")
    )
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert time.monotonic() - start < 60  # refused up front, no benchmark ran


def test_a_benchmark_that_measured_nothing_is_not_a_success(tmp_path: Path) -> None:
    good = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    proc = run_cli("bench", str(good), "--ep", "tensorrt", "--runs", "5")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing was measured" in proc.stderr
    both = run_cli("bench", str(good), "--ep", "tensorrt,cpu", "--runs", "5")
    assert both.returncode == 0, both.stderr  # CPU was measured; the table says why not TRT


def test_shapes_and_ranges_are_checked_when_the_command_is_read() -> None:
    """A mistyped --shape/--range/--threads stops the command before any job starts, with the
    flag named by the command line and the form said by the grammar."""
    for args, says in (
        (
            ["inputs", str(SAMPLE), "--shape", "image=1xQ"],
            "--shape: image: a shape is written DIMxDIM",
        ),
        (["bench", str(SAMPLE), "--range", "image=5:1"], "--range: image: HIGH must be above LOW"),
        (["bench", str(SAMPLE), "--threads", "0"], "--threads: give counts ≥ 1"),
    ):
        proc = run_cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert says in proc.stderr and "Loading" not in proc.stderr


def test_the_entry_point_knows_every_subcommand() -> None:
    """``edgestudio.__main__`` decides before importing the CLI which words are subcommands
    (to start the worker server, to end the process fast); its list is the parser's."""
    from edgestudio.__main__ import COMMANDS, JOB_COMMANDS
    from edgestudio.cli.main import _subcommand_names

    assert set(COMMANDS) == set(_subcommand_names())
    assert JOB_COMMANDS < COMMANDS
