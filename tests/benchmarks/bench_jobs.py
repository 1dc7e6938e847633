"""Job system: the GUI main loop's longest stall while a CPU-heavy job runs (target ≤ 100 ms),
the runner's overhead against running the same operation in-process, and what a job's start
costs with each launcher (the figures behind :mod:`edgestudio.jobs.launch`)."""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main_loop_stall(seconds: float = 5.0) -> tuple[float, float]:
    """(longest gap, median gap) in ms between 10 ms timer ticks while a spin job runs."""
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
    from edgestudio.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow()
    window.show()
    gaps: list[int] = []
    clock = QElapsedTimer()
    clock.start()
    ticker = QTimer()
    ticker.setInterval(10)
    ticker.timeout.connect(lambda: gaps.append(clock.restart()))
    ticker.start()
    job = window.submit(DiagnosticRecipe(action="spin", seconds=seconds))
    while not job.state.is_final:
        app.processEvents()
        time.sleep(0.001)
    ticker.stop()
    window.jobs.shutdown()
    window.close()
    return float(max(gaps[1:])), float(statistics.median(gaps[1:]))


def runner_overhead(repeats: int = 5) -> tuple[float, float]:
    """(median seconds of a trivial job through a worker, median in-process)."""
    from pathlib import Path

    from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
    from edgestudio.core.diagnostics.diagnostics import run_diagnostic
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.jobs.scheduler import run_job

    worker, local = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        run_job(DiagnosticRecipe(action="succeed"))
        worker.append(time.perf_counter() - start)
        start = time.perf_counter()
        run_diagnostic(DiagnosticRecipe(action="succeed"), RecordingReporter(), Path("."))
        local.append(time.perf_counter() - start)
    return statistics.median(worker), statistics.median(local)


def launcher_start_up(repeats: int = 7) -> dict[str, tuple[float, float]]:
    """For each launcher, median seconds of a whole job (dynamic int8 quantization of the
    digits sample): (one started after a pause, each of eight back to back)."""
    import tempfile
    from pathlib import Path

    from edgestudio.core.quant.quant_recipes import QuantRecipe
    from edgestudio.jobs.launch import FORK_PLATFORM, Launcher, SpawnLauncher
    from edgestudio.jobs.scheduler import run_job
    from edgestudio.resources import SAMPLE_MODEL

    folder = Path(tempfile.mkdtemp())

    def job_seconds(launcher: Launcher, k: int) -> float:
        start = time.perf_counter()
        job = run_job(
            QuantRecipe(model=str(SAMPLE_MODEL), output=str(folder / f"{k}.onnx"), mode="dynamic"),
            launcher=launcher,
        )
        assert job.state.value == "succeeded", job.error
        (folder / f"{k}.onnx").unlink()
        return time.perf_counter() - start

    launchers: dict[str, Launcher] = {"cold (spawned)": SpawnLauncher()}
    if FORK_PLATFORM:
        from edgestudio.jobs.fork_server import ForkLauncher

        launchers["forked from the loaded server"] = ForkLauncher()
    found = {}
    for name, launcher in launchers.items():
        launcher.prepare()
        paused = []
        for k in range(repeats):
            time.sleep(2.0)  # the user looks at the model
            paused.append(job_seconds(launcher, k))
        start = time.perf_counter()
        for k in range(8):
            job_seconds(launcher, k)
        found[name] = (statistics.median(paused), (time.perf_counter() - start) / 8)
        launcher.close()
    return found


BARE_QUANTIZE = """
import sys
import time
import numpy as np
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

class Reader(CalibrationDataReader):
    def __init__(self, path):
        data = np.load(path)
        self.rows = iter([{name: data[name][i:i + 1] for name in data.files}
                          for i in range(len(data[data.files[0]]))])
    def get_next(self):
        return next(self.rows, None)

start = time.perf_counter()
quantize_static(sys.argv[1], sys.argv[2], Reader(sys.argv[3]), quant_format=QuantFormat.QDQ)
print(time.perf_counter() - start)
"""


@dataclass(frozen=True)
class CommandTimes:
    """Medians of one command's runs: the whole process, and the work inside it."""

    whole: float
    work: float

    @property
    def rest(self) -> float:
        """Starting the interpreter(s), loading modules, ending: the command's own cost."""
        return self.whole - self.work


def cli_against_bare_script(repeats: int = 9) -> tuple[CommandTimes, CommandTimes]:
    """``edgestudio quantize`` from a shell against a bare quantize_static script, static QDQ
    on the digits sample, calibration cache off: each whole process, and inside it the work
    (our job as its report times it, which also checks the data, pre-processes and loads and
    runs the result; the script's quantize_static call)."""
    import json
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_MODEL
    from tests.benchmarks import run_from_bytecode

    folder = Path(tempfile.mkdtemp())
    script = folder / "bare.py"
    script.write_text(BARE_QUANTIZE)
    run_from_bytecode()  # both, as installed; the first round only writes the bytecode
    env = {**os.environ, "EDGESTUDIO_NO_CALIB_CACHE": "1"}
    runs: dict[str, list[tuple[float, float]]] = {"cli": [], "bare": []}
    for k in range(-1, repeats):  # alternated
        report = folder / f"cli{k}.json"
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "edgestudio",
                "quantize",
                str(SAMPLE_MODEL),
                "-o",
                str(folder / f"cli{k}.onnx"),
                "--mode",
                "qdq",
                "--calib",
                str(SAMPLE_CALIBRATION),
                "--json",
                str(report),
            ],
            check=True,
            capture_output=True,
            env=env,
        )
        runs["cli"].append(
            (time.perf_counter() - start, float(json.loads(report.read_text())["elapsed_s"]))
        )
        start = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                str(script),
                str(SAMPLE_MODEL),
                str(folder / f"b{k}.onnx"),
                str(SAMPLE_CALIBRATION),
            ],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        runs["bare"].append((time.perf_counter() - start, float(done.stdout.split()[-1])))
    cli, bare = (
        CommandTimes(
            statistics.median(whole for whole, _ in runs[name][1:]),
            statistics.median(work for _, work in runs[name][1:]),
        )
        for name in ("cli", "bare")
    )
    return cli, bare


def main() -> None:
    longest, median = main_loop_stall()
    print(
        f"main-loop stall while a 5 s CPU-bound job runs: longest {longest:.0f} ms, "
        f"median tick {median:.0f} ms (10 ms timer; target longest ≤ 100 ms)"
    )
    worker, local = runner_overhead()
    print(
        f"trivial job through a worker process: {worker * 1000:.0f} ms median "
        f"(in-process {local * 1000:.2f} ms): the fixed cost of process isolation"
    )
    for name, (paused, chained) in launcher_start_up().items():
        print(
            f"a small job (dynamic int8, digits), worker {name}: {paused * 1000:.0f} ms after "
            f"a pause, {chained * 1000:.0f} ms each back to back (median of 7; 8 in a row)"
        )
    cli, bare = cli_against_bare_script()
    print(
        f"edgestudio quantize (static QDQ, digits, cache off) from a shell: {cli.whole:.2f} s "
        f"median vs a bare quantize_static script {bare.whole:.2f} s: {cli.whole / bare.whole:.2f}x "
        "(target <= 1.2x)"
    )
    print(
        f"  the work inside: our job {cli.work:.2f} s (it also checks the data, pre-processes, "
        f"loads and runs the result) vs the quantize_static call {bare.work:.2f} s; the rest "
        f"(interpreters, imports, exit): ours {cli.rest:.2f} s vs {bare.rest:.2f} s "
        f"({cli.rest / bare.rest:.2f}x)"
    )


if __name__ == "__main__":
    main()
