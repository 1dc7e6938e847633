"""Quantization on a ~5M-parameter CNN with 32 calibration samples, side by side:

- our quantize job as the window runs it (a worker started ahead while the user looks at the
  model; checks included) vs a direct ``quantize_static`` script in a fresh process (target
  ≤ 1.1×); also the CLI, ``edgestudio quantize``, as a fresh process (it starts its worker
  while it parses its arguments), and the job in a worker started cold;
- our streaming per-layer analysis vs onnxruntime's ``qdq_loss_debug`` on the same data: time
  (target: no slower) and peak memory above the process baseline (target ≤ 50 %).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SAMPLES = 32
SIZE = 64


def build_cnn(path: Path) -> int:
    """Five 3×3 conv blocks and a classifier; returns the parameter count."""
    rng = np.random.default_rng(0)
    channels = [3, 64, 128, 256, 512, 640]
    nodes, inits, x = [], [], "image"
    params = 0
    for i in range(5):
        w = rng.standard_normal((channels[i + 1], channels[i], 3, 3)).astype(np.float32)
        w *= np.sqrt(2.0 / (channels[i] * 9))
        b = np.zeros(channels[i + 1], np.float32)
        inits += [
            numpy_helper.from_array(w, f"conv{i}.w"),
            numpy_helper.from_array(b, f"conv{i}.b"),
        ]
        params += w.size + b.size
        nodes += [
            helper.make_node(
                "Conv",
                [x, f"conv{i}.w", f"conv{i}.b"],
                [f"c{i}"],
                name=f"conv{i}",
                pads=[1, 1, 1, 1],
            ),
            helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
            helper.make_node(
                "MaxPool",
                [f"r{i}"],
                [f"p{i}"],
                name=f"pool{i}",
                kernel_shape=[2, 2],
                strides=[2, 2],
            ),
        ]
        x = f"p{i}"
    nodes.append(helper.make_node("Flatten", [x], ["flat"], name="flatten"))
    features = channels[-1] * (SIZE // 32) ** 2
    fw = (rng.standard_normal((10, features)) / np.sqrt(features)).astype(np.float32)
    inits += [
        numpy_helper.from_array(fw, "fc.w"),
        numpy_helper.from_array(np.zeros(10, np.float32), "fc.b"),
    ]
    params += fw.size + 10
    nodes.append(
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1)
    )
    graph = helper.make_graph(
        nodes,
        "cnn5m",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return params


DIRECT_QUANT = """
import os, sys, time, numpy as np
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
from onnxruntime.quantization import quantize_static, QuantFormat, QuantType, CalibrationDataReader
class R(CalibrationDataReader):
    def __init__(s): s.d = np.load(sys.argv[2])["image"]; s.i = 0
    def get_next(s):
        if s.i >= len(s.d): return None
        s.i += 1; return {"image": s.d[s.i - 1:s.i]}
    def rewind(s): s.i = 0
quantize_static(sys.argv[1], sys.argv[3], R(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
"""

DIRECT_DEBUG = """
import os, sys, json, time, resource, numpy as np
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
from onnxruntime.quantization import qdq_loss_debug as dbg
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
data = np.load(sys.argv[3])["image"]
class R:
    def __init__(s): s.it = iter([{"image": data[i:i+1]} for i in range(len(data))])
    def get_next(s): return next(s.it, None)
    def __iter__(s): return s.it
dbg.modify_model_output_intermediate_tensors(sys.argv[1], sys.argv[4] + "/f_aug.onnx")
dbg.modify_model_output_intermediate_tensors(sys.argv[2], sys.argv[4] + "/q_aug.onnx")
f = dbg.collect_activations(sys.argv[4] + "/f_aug.onnx", R())
q = dbg.collect_activations(sys.argv[4] + "/q_aug.onnx", R())
err = dbg.compute_activation_error(dbg.create_activation_matching(q, f))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak / 1024,
                  "delta_mb": (peak - base) / 1024, "tensors": len(err)}))
"""

OURS_ANALYZE = """
import os, sys, json, time, resource
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
import onnxruntime  # same imports as the other side before the baseline
from pathlib import Path
from edgestudio.core.quant.analyze import run_analyze
from edgestudio.core.progress import RecordingReporter
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
report = run_analyze(AnalyzeRecipe(float_model=sys.argv[1], quant_model=sys.argv[2],
                                   data=DataSource("npz", sys.argv[3])), RecordingReporter(),
                     Path(sys.argv[4]))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak / 1024,
                  "delta_mb": (peak - base) / 1024, "tensors": len(report.result.layers)}))
"""


WINDOW_JOB = """
import sys, time
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.fork_server import ForkLauncher
from edgestudio.jobs.launch import SpawnLauncher
from edgestudio.jobs.scheduler import run_job
for _ in range(int(sys.argv[5])):
    launcher = ForkLauncher() if sys.argv[4] == "warm" else SpawnLauncher()
    launcher.prepare()
    time.sleep(3)  # the window has been open for a few seconds
    start = time.perf_counter()
    job = run_job(QuantRecipe(model=sys.argv[1], output=sys.argv[3], mode="qdq", overwrite=True,
                              per_channel=True, preprocess=False,
                              calib=DataSource("npz", sys.argv[2])), launcher=launcher)
    assert job.state.value == "succeeded", job.error
    print(time.perf_counter() - start, flush=True)
    launcher.close()
"""


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    model = tmp / "cnn.onnx"
    params = build_cnn(model)
    data = tmp / "calib.npz"
    rng = np.random.default_rng(1)
    np.savez(data, image=rng.random((SAMPLES, 3, SIZE, SIZE), dtype=np.float32))
    print(f"model: {params / 1e6:.2f} M parameters, {SAMPLES} samples of 3×{SIZE}×{SIZE}")

    runs = 5
    direct, cli = [], []
    for _ in range(runs):
        direct.append(
            timed(
                [
                    sys.executable,
                    "-c",
                    DIRECT_QUANT,
                    str(model),
                    str(data),
                    str(tmp / "direct.onnx"),
                ]
            )
        )
        cli.append(
            timed(
                [
                    sys.executable,
                    "-m",
                    "edgestudio",
                    "quantize",
                    str(model),
                    "-o",
                    str(tmp / "ours.onnx"),
                    "--mode",
                    "qdq",
                    "--per-channel",
                    "--calib",
                    str(data),
                    "--no-preprocess",
                    "--overwrite",
                ]
            )
        )
    jobs = {
        how: [
            float(line)
            for line in subprocess.run(
                [
                    sys.executable,
                    "-c",
                    WINDOW_JOB,
                    str(model),
                    str(data),
                    str(tmp / "job.onnx"),
                    how,
                    str(runs),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
        ]
        for how in ("warm", "cold")
    }
    d = statistics.median(direct)
    print(f"quantize, median of {runs}: direct ORT script (fresh process) {d:.2f} s")
    for label, times in (
        ("job in the window (forked from the loaded server)", jobs["warm"]),
        ("job in a worker started cold", jobs["cold"]),
        ("edgestudio quantize CLI (fresh process)", cli),
    ):
        o = statistics.median(times)
        target = " (target ≤ 1.1×)" if "window" in label else ""
        print(f"  {label}: {o:.2f} s, ratio {o / d:.2f}×{target}")

    quant = str(tmp / "ours.onnx")
    rows = {}
    for name, code in (("ours", OURS_ANALYZE), ("qdq_loss_debug", DIRECT_DEBUG)):
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", code, str(model), quant, str(data), str(tmp)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.splitlines()[-1]
            )
            for _ in range(2)
        ]
        rows[name] = {
            k: statistics.median(r[k] for r in runs)
            for k in ("seconds", "peak_mb", "delta_mb", "tensors")
        }
    a, b = rows["ours"], rows["qdq_loss_debug"]
    print(
        f"analysis: ours {a['seconds']:.2f} s, qdq_loss_debug {b['seconds']:.2f} s "
        f"(ratio {a['seconds'] / b['seconds']:.2f}×, target ≤ 1.0×)"
    )
    print(
        f"analysis memory above baseline: ours {a['delta_mb']:.0f} MB, qdq_loss_debug "
        f"{b['delta_mb']:.0f} MB ({a['delta_mb'] / max(b['delta_mb'], 1):.0%}, target ≤ 50 %); "
        f"peak RSS {a['peak_mb']:.0f} vs {b['peak_mb']:.0f} MB; tensors compared "
        f"{a['tensors']:.0f} vs {b['tensors']:.0f}"
    )


if __name__ == "__main__":
    main()
