"""Remote bench over loopback SSH vs local bench of the same model, side by side (target: the
remote median within 10 % of the local one on the same machine), and what the link costs: the
first job (connect, runner check, model copy), a job with the model cached, per timed run.

The "device" is this machine reached over a real SSH server on 127.0.0.1, running the app's own
Python, so both sides have the same onnxruntime and only the path differs; a second row uses the
device environment of ``make device-env`` (another onnxruntime) for reference.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.core.remote.devices import add_device, make_device
from edgestudio.core.remote.runner_calls import run_async
from edgestudio.core.remote.ssh_link import host_key_state, trust_host_key
from edgestudio.jobs.scheduler import run_job
from edgestudio.resources import SAMPLE_MODEL
from tests.benchmarks.bench_quant import build_cnn
from tests.remote.ssh_server import LoopbackSSHServer, client_key

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 3


def _job_s(recipe: BenchRecipe) -> tuple[float, list[float | None]]:
    t0 = time.perf_counter()
    job = run_job(recipe)
    elapsed = time.perf_counter() - t0
    assert job.report is not None, job.error
    latency = job.report.result
    assert not latency.failures, latency.failures
    return elapsed, [r.median_ms for r in latency.rows]


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    home = tmp / "device-home"
    home.mkdir()
    key, key_file = client_key(tmp)
    server = LoopbackSSHServer(home, key).start()
    try:
        address = f"ssh://bench@127.0.0.1:{server.port}"
        devices = [make_device("same", address, sys.executable, str(key_file))]
        other = REPO / ".device-venv" / "bin" / "python"
        if other.exists():
            devices.append(make_device("older", address, str(other), str(key_file)))
        for device in devices:
            add_device(device)
        trust_host_key(devices[0], run_async(host_key_state(devices[0]))[1])
        cnn = tmp / "cnn.onnx"
        build_cnn(cnn)
        for name, model, runs in (
            ("digits CNN", str(SAMPLE_MODEL), 2000),
            ("4.5M CNN", str(cnn), 100),
        ):
            base = {"models": (model,), "warmup": 20, "runs": runs}
            first, _ = _job_s(BenchRecipe(**base, devices=("same",)))  # type: ignore[arg-type]
            here, there, here_s, there_s = [], [], [], []
            for _ in range(ROUNDS):  # alternated, so a machine that slows down hits both
                s, (m,) = _job_s(BenchRecipe(**base))  # type: ignore[arg-type]
                here.append(m)
                here_s.append(s)
                s, (m,) = _job_s(BenchRecipe(**base, devices=("same",)))  # type: ignore[arg-type]
                there.append(m)
                there_s.append(s)
            local, remote = statistics.median(here), statistics.median(there)  # type: ignore[type-var]
            link = statistics.median(there_s) - statistics.median(here_s)
            print(
                f"{name}: local median {local:.4f} ms, over SSH {remote:.4f} ms, ratio "
                f"{remote / local:.3f} (target 0.90–1.10); job {statistics.median(here_s):.2f} s "
                f"here vs {statistics.median(there_s):.2f} s over SSH: the link costs "
                f"{link:+.2f} s per job (first job, copying the model: {first:.2f} s), "
                f"{link / runs * 1000:+.2f} ms per timed run amortised, 0 inside the timed "
                "loop (it runs on the device)"
            )
            if len(devices) > 1:
                _, (older,) = _job_s(BenchRecipe(**base, devices=("older",)))  # type: ignore[arg-type]
                print(f"  for reference, onnxruntime of `make device-env` over SSH: {older:.4f} ms")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
