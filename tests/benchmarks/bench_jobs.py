"""Job system: the GUI main loop's longest stall while a CPU-heavy job runs (target ≤ 100 ms),
and the runner's overhead against running the same operation in-process."""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main_loop_stall(seconds: float = 5.0) -> tuple[float, float]:
    """(longest gap, median gap) in ms between 10 ms timer ticks while a spin job runs."""
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from edgestudio.core.selftest.diagnostic_recipe import DiagnosticRecipe
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

    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.selftest.diagnostic_recipe import DiagnosticRecipe
    from edgestudio.core.selftest.diagnostics import run_diagnostic
    from edgestudio.jobs.runner import run_job

    worker, local = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        run_job(DiagnosticRecipe(action="succeed"))
        worker.append(time.perf_counter() - start)
        start = time.perf_counter()
        run_diagnostic(DiagnosticRecipe(action="succeed"), RecordingReporter(), Path("."))
        local.append(time.perf_counter() - start)
    return statistics.median(worker), statistics.median(local)


BARE_QUANTIZE = """
import sys
import numpy as np
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

class Reader(CalibrationDataReader):
    def __init__(self, path):
        data = np.load(path)
        self.rows = iter([{name: data[name][i:i + 1] for name in data.files}
                          for i in range(len(data[data.files[0]]))])
    def get_next(self):
        return next(self.rows, None)

quantize_static(sys.argv[1], sys.argv[2], Reader(sys.argv[3]), quant_format=QuantFormat.QDQ)
"""


def cli_against_bare_script(repeats: int = 9) -> tuple[float, float]:
    """(median seconds of ``edgestudio quantize`` from a shell, of a bare quantize_static
    script), static QDQ on the digits sample, calibration cache off: what the command line's
    own start-up, checks and proof cost on a small model."""
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
    cli, bare = [], []
    for k in range(-1, repeats):  # alternated
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "edgestudio", "quantize", str(SAMPLE_MODEL), "-o",
                        str(folder / f"cli{k}.onnx"), "--mode", "qdq", "--calib",
                        str(SAMPLE_CALIBRATION)], check=True, capture_output=True, env=env)
        cli.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([sys.executable, str(script), str(SAMPLE_MODEL), str(folder / f"b{k}.onnx"),
                        str(SAMPLE_CALIBRATION)], check=True, capture_output=True, env=env)
        bare.append(time.perf_counter() - start)
    return statistics.median(cli[1:]), statistics.median(bare[1:])


def main() -> None:
    longest, median = main_loop_stall()
    print(f"main-loop stall while a 5 s CPU-bound job runs: longest {longest:.0f} ms, "
          f"median tick {median:.0f} ms (10 ms timer; target longest ≤ 100 ms)")
    worker, local = runner_overhead()
    print(f"trivial job through a worker process: {worker * 1000:.0f} ms median "
          f"(in-process {local * 1000:.2f} ms): the fixed cost of process isolation")
    cli, bare = cli_against_bare_script()
    print(f"edgestudio quantize (static QDQ, digits, cache off) from a shell: {cli:.2f} s median "
          f"vs a bare quantize_static script {bare:.2f} s: {cli / bare:.2f}x (target <= 1.2x; "
          "ours also checks the data, pre-processes and runs the result before saying ok)")


if __name__ == "__main__":
    main()
