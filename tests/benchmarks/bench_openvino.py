"""OpenVINO beside the CPU EP, in OpenVINO's own environment (``make openvino-env``): medians
through the app's harness (a bench job on the device ``openvino``) and of a bare
``session.run`` loop started in that environment, on the same model and input shapes,
alternated.

Targets: the harness within 1.25× of the bare loop for each provider; the OpenVINO / CPU ratio
is printed, not judged (it depends on the CPU: Intel's plugin on an AMD core here).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.core.remote.devices import OPENVINO, made_environments
from edgestudio.jobs.scheduler import run_job
from edgestudio.resources import SAMPLE_MODEL
from tests.benchmarks.bench_quant import build_cnn

PROVIDERS = ("CPUExecutionProvider", "OpenVINOExecutionProvider")
ROUNDS = 3

# A bare loop in the other environment: one thread, as the harness's default.
BARE_LOOP = """
import json, sys, time
import numpy as np, onnxruntime as ort
model, provider, runs, feeds = sys.argv[1], sys.argv[2], int(sys.argv[3]), np.load(sys.argv[4])
o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=[provider, "CPUExecutionProvider"])
f = {k: feeds[k] for k in feeds.files}
for _ in range(20): s.run(None, f)
t = []
for _ in range(runs):
    a = time.perf_counter(); s.run(None, f); t.append((time.perf_counter() - a) * 1000)
t.sort(); print(json.dumps(t[len(t) // 2]))
"""


def _harness(model: str, runs: int) -> list[float]:
    job = run_job(
        BenchRecipe(models=(model,), devices=(OPENVINO,), providers=PROVIDERS, warmup=20, runs=runs)
    )
    assert job.report is not None, job.error
    rows = job.report.result.rows
    assert all(r.ok for r in rows), [r.error for r in rows]
    return [float(r.median_ms or 0) for r in rows]


def _bare(python: str, model: str, provider: str, runs: int, feeds: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run(
        [python, "-c", BARE_LOOP, model, provider, str(runs), str(feeds)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    environment = made_environments().get(OPENVINO)
    if environment is None:
        print("skipped: no OpenVINO environment (`make openvino-env` makes it)")
        return
    tmp = Path(tempfile.mkdtemp())
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    cnn = tmp / "cnn.onnx"
    build_cnn(cnn)
    for name, model, runs in (("digits CNN", str(SAMPLE_MODEL), 2000), ("4.5M CNN", str(cnn), 100)):
        feeds = tmp / f"{Path(model).stem}.npz"
        _write_feeds(model, feeds)
        ours: list[list[float]] = []
        bare: list[list[float]] = []
        for _ in range(ROUNDS):  # alternated, so a machine that slows down hits both
            ours.append(_harness(model, runs))
            bare.append([_bare(environment.python, model, p, runs, feeds) for p in PROVIDERS])
        harness = [statistics.median(r[k] for r in ours) for k in range(len(PROVIDERS))]
        loop = [statistics.median(r[k] for r in bare) for k in range(len(PROVIDERS))]
        for provider, h, b in zip(PROVIDERS, harness, loop, strict=True):
            print(
                f"{name} · {provider}: harness {h:.4f} ms, bare loop {b:.4f} ms, ratio "
                f"{h / b:.3f} (target ≤ 1.25)"
            )
        print(
            f"{name}: OpenVINO / CPU EP in OpenVINO's onnxruntime: {harness[1] / harness[0]:.3f} "
            f"(harness), {loop[1] / loop[0]:.3f} (bare loop)"
        )


def _write_feeds(model: str, target: Path) -> None:
    """Random inputs of the model's float input shapes (batch 1)."""
    import onnx

    graph = onnx.load(model, load_external_data=False).graph
    initialisers = {i.name for i in graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for value in graph.input:
        if value.name in initialisers:
            continue
        dims = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(dims).astype(np.float32)
    np.savez(target, **feeds)


if __name__ == "__main__":
    main()
