"""Quantizing big graphs: stock onnxruntime vs EdgeStudio's quantize job, side by side.

Generated residual-MLP graphs (MatMul → Add → Relu → Add → Mul blocks, each with its own
weights), 8 calibration samples. Stock ORT is a fresh process calling ``quantize_static`` /
``quantize_dynamic``; ours is the whole job (a fresh process running the job: input
specification, ORT's pre-processing, quantization with the accelerated helpers, loading and
running the result). Stock ORT runs at 1k, 2k and 4k nodes (8k takes over half an hour: set
EDGESTUDIO_BENCH_STOCK_8K=1); ours also at 8k and 20k. Then calibration peak memory at 8 and 64
samples on the 8k graph, and histogram (Entropy) calibration memory at 8 and 128 samples on a
CNN, stock vs ours. Ours runs as in the window, in a worker started ahead: the median of
three jobs, with where the median job spent its time (pre-processing, quantizing, loading and
running the result); where stock runs too, three jobs before it and three after. Stock ORT is
one run per cell (minutes each). The exponent is the slope of
log(time) over log(nodes).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from tests.benchmarks.bench_quant import build_cnn
from tests.graph_builders import residual_mlp

SAMPLES = 8
STOCK_SIZES = [1000, 2000, 4000] + ([8000] if os.environ.get("EDGESTUDIO_BENCH_STOCK_8K") else [])
OUR_SIZES = [1000, 2000, 4000, 8000, 20000]

STOCK = """
import json, os, resource, sys, time, numpy as np
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
from onnxruntime.quantization import QuantFormat, quantize_dynamic, quantize_static
data = np.load(sys.argv[2])["x"]
class R:
    def __init__(s): s.i = 0
    def get_next(s):
        if s.i >= len(data): return None
        s.i += 1; return {"x": data[s.i - 1:s.i]}
    def rewind(s): s.i = 0
start = time.perf_counter()
if sys.argv[4] == "dynamic":
    quantize_dynamic(sys.argv[1], sys.argv[3])
else:
    quantize_static(sys.argv[1], sys.argv[3], R(), quant_format=QuantFormat.QDQ)
print(json.dumps({"seconds": time.perf_counter() - start,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

OURS_RUNS = 3
OURS = """
import json, sys, time
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.scheduler import close_default_launcher, default_launcher
from edgestudio.jobs.scheduler import run_job
mode = sys.argv[4]
default_launcher().prepare()
runs = []
for _ in range(int(sys.argv[5])):
    time.sleep(3)  # as in the window: the worker server has loaded
    stages = {}  # stage -> seconds since the job started, when it began
    def seen(job):
        for line in job.log:
            if line.startswith("▸ ") and line not in stages:
                stages[line] = time.perf_counter() - start
    start = time.perf_counter()
    job = run_job(QuantRecipe(model=sys.argv[1], output=sys.argv[3], mode=mode, overwrite=True,
                              calib=DataSource("npz", sys.argv[2]) if mode == "qdq" else None),
                  timeout=3600, on_update=seen)
    seconds = time.perf_counter() - start
    assert job.state.value == "succeeded", job.error
    seen(job)
    runs.append({"seconds": seconds, "peak_mb": job.peak_memory_mb, "stages": stages,
                 "accelerated": not any("stock onnxruntime" in line for line in job.log)})
print(json.dumps(runs))
close_default_launcher()
"""


def _phases(run: dict[str, Any]) -> str:
    """Where one job spent its time: up to quantizing, quantizing, proving the result."""
    begun = sorted(((stage.lower(), t) for stage, t in run["stages"].items()), key=lambda st: st[1])
    quantize = next((t for s, t in begun if "quantizing" in s or "calibrating" in s), None)
    prove = next((t for s, t in begun if "loading and running" in s), None)
    if quantize is None or prove is None:
        return ""
    calibrated = any("calibrating" in s for s, _ in begun)
    return (
        f"  [{quantize:.1f} s inputs + pre-processing, {prove - quantize:.1f} s "
        f"{'calibrating + ' if calibrated else ''}quantizing, "
        f"{run['seconds'] - prove:.1f} s loading + running the result]"
    )


CALIBRATION_MEMORY = """
import json, resource, sys, numpy as np
from onnxruntime.quantization import QuantFormat, quantize_static
from edgestudio.core.quant.accel.accelerator import accelerated
count = int(sys.argv[3])
class R:
    def __init__(s): s.i = 0
    def get_next(s):
        if s.i >= count: return None
        s.i += 1; return {"x": np.random.default_rng(s.i).standard_normal((1, 16)).astype("float32")}
    def rewind(s): s.i = 0
with accelerated() as used:
    quantize_static(sys.argv[1], sys.argv[2], R(), quant_format=QuantFormat.QDQ)
print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "accelerated": used}))
"""


HISTOGRAM_MEMORY = """
import contextlib, json, resource, sys, time, numpy as np
from onnxruntime.quantization import CalibrationMethod, QuantFormat, quantize_static
from edgestudio.core.quant.accel.accelerator import accelerated
count = int(sys.argv[3])
class R:  # like the job's reader, it says how many samples it holds
    sample_count = count
    def __init__(s): s.i = 0
    def get_next(s):
        if s.i >= count: return None
        s.i += 1
        return {"image": np.random.default_rng(s.i).random((1, 3, 64, 64), dtype=np.float32)}
    def rewind(s): s.i = 0
start = time.perf_counter()
with accelerated() if sys.argv[4] == "ours" else contextlib.nullcontext():
    quantize_static(sys.argv[1], sys.argv[2], R(), quant_format=QuantFormat.QDQ,
                    calibrate_method=CalibrationMethod.Entropy)
print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "seconds": time.perf_counter() - start}))
"""


def _run(code: str, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _side_by_side(
    model: Path, data: Path, tmp: Path, mode: str, with_stock: bool
) -> tuple[dict[str, Any], dict[str, float] | None]:
    """Ours (see :func:`_summary`) and, ``with_stock``, stock ORT's one run — between as many
    of our jobs before it as after it: this machine's speed drifts over the minutes stock
    takes, and our median then spans the same stretch of time."""
    ours = [str(model), str(data), str(tmp / "ours.onnx"), mode, str(OURS_RUNS)]
    runs = _run(OURS, *ours)
    stock = None
    if with_stock:
        stock = _run(STOCK, str(model), str(data), str(tmp / "stock.onnx"), mode)
        runs += _run(OURS, *ours)
    return _summary(runs), stock


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median job (the run itself, with its stage times) with the median time, the range
    of the times and the highest peak memory."""
    times = [r["seconds"] for r in runs]
    median = statistics.median(times)
    middle = min(runs, key=lambda r: abs(r["seconds"] - median))
    return {
        **middle,
        "seconds": median,
        "range": (min(times), max(times)),
        "peak_mb": max(r["peak_mb"] or 0 for r in runs),
        "accelerated": all(r["accelerated"] for r in runs),
    }


def growth_exponent(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(seconds) over log(size): time ~ size^k."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    data = tmp / "calib.npz"
    np.savez(data, x=np.random.default_rng(0).standard_normal((SAMPLES, 16)).astype(np.float32))
    models = {}
    for n in sorted(set(STOCK_SIZES) | set(OUR_SIZES)):
        models[n] = tmp / f"mlp{n}.onnx"
        onnx.save(residual_mlp(n), str(models[n]))
    print(
        f"residual-MLP graphs, {SAMPLES} calibration samples; stock: one run; ours: median of "
        f"{OURS_RUNS} jobs, or of {OURS_RUNS} before and {OURS_RUNS} after the stock run where "
        "there is one (range after the row)"
    )
    print(
        f"{'mode':<8}{'nodes':>7}{'stock ORT s':>13}{'ours s':>9}{'speed-up':>10}"
        f"{'stock MB':>10}{'ours MB':>9}"
    )
    for mode in ("qdq", "dynamic"):
        stock_points, our_points = [], []
        for n in OUR_SIZES:
            ours, stock = _side_by_side(models[n], data, tmp, mode, n in STOCK_SIZES)
            our_points.append((n, ours["seconds"]))
            if stock:
                stock_points.append((n, stock["seconds"]))
            cells = (
                f"{stock['seconds']:>13.1f}" if stock else f"{'—':>13}",
                f"{ours['seconds']:>9.1f}",
                f"{stock['seconds'] / ours['seconds']:>9.1f}×" if stock else f"{'—':>10}",
                f"{stock['peak_mb']:>10.0f}" if stock else f"{'—':>10}",
                f"{ours['peak_mb'] or 0:>9.0f}",
            )
            low, high = ours["range"]
            print(
                f"{mode:<8}{n:>7}"
                + "".join(cells)
                + f"  ({low:.1f}–{high:.1f} s)"
                + _phases(ours)
                + ("" if ours["accelerated"] else "  (stock path!)"),
                flush=True,
            )
        print(
            f"{mode}: scaling exponent stock {growth_exponent(stock_points):.2f}, "
            f"ours {growth_exponent(our_points):.2f} (1 = linear, 2 = quadratic)",
            flush=True,
        )
    for count in (8, 64):
        mem = _run(CALIBRATION_MEMORY, str(models[8000]), str(tmp / "cal.onnx"), str(count))
        print(f"calibration at 8k nodes, {count} samples: peak {mem['peak_mb']:.0f} MB", flush=True)
    cnn = tmp / "cnn.onnx"
    build_cnn(cnn)
    print(
        "histogram calibration (Entropy) on a 4.5M-parameter CNN, 3×64×64 inputs, "
        "~4 MB of activations per sample: peak memory and time"
    )
    for count in (8, 128):
        cells = []
        for accelerate in ("stock", "ours"):
            mem = _run(HISTOGRAM_MEMORY, str(cnn), str(tmp / "hist.onnx"), str(count), accelerate)
            cells.append(f"{accelerate} {mem['peak_mb']:.0f} MB / {mem['seconds']:.1f} s")
        print(f"  {count} samples: " + ", ".join(cells), flush=True)


if __name__ == "__main__":
    main()
