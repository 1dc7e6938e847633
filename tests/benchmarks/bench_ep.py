"""Benchmark harness overhead against a bare ``session.run`` loop on the same model and inputs
(targets: ≤ 10 µs per run, ≤ 1 % of the median for models ≥ 1 ms), and profile parsing speed
(target: 10k events ≤ 0.5 s)."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from edgestudio.core.inputs.input_probe import resolve_inputs
from edgestudio.core.perf.bench import time_session
from edgestudio.core.perf.profile_parse import GraphNode, load_events, summarize_profile
from edgestudio.core.remote.device_runner import session_for
from edgestudio.resources import SAMPLE_MODEL
from tests.benchmarks.bench_quant import build_cnn


def overhead(model: str, runs: int) -> tuple[float, float]:
    """(median ms through our harness, median ms of a bare loop), best of 3 rounds each."""
    session = session_for(model, "CPUExecutionProvider", 1)
    feeds = resolve_inputs(Path(model), session=session).feeds()
    ours, bare = [], []
    for _ in range(3):
        wall, _ = time_session(session, feeds, warmup=10, runs=runs, seconds=None)
        ours.append(statistics.median(wall))
        loop = []
        for _ in range(runs):
            t0 = time.perf_counter_ns()
            session.run(None, feeds)
            loop.append((time.perf_counter_ns() - t0) / 1e6)
        bare.append(statistics.median(loop))
    return min(ours), min(bare)


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    big = tmp / "cnn.onnx"
    build_cnn(big)
    for name, path, runs in (("digits CNN", str(SAMPLE_MODEL), 2000), ("4.5M CNN", str(big), 100)):
        ours, bare = overhead(path, runs)
        print(
            f"{name}: harness median {ours:.4f} ms, bare loop {bare:.4f} ms, overhead "
            f"{(ours - bare) * 1000:+.1f} µs ({(ours - bare) / bare:+.2%}) "
            "(targets ≤ 10 µs, ≤ 1 % for models ≥ 1 ms)"
        )
    graph = [GraphNode(f"n{i}", "Conv", (f"t{i - 1}",), (f"t{i}",)) for i in range(500)]
    events = [
        {
            "cat": "Node",
            "name": f"n{i % 500}_kernel_time",
            "dur": int(i % 97),
            "args": {"op_name": "Conv", "provider": "CPUExecutionProvider"},
        }
        for i in range(10_000)
    ]
    trace = tmp / "trace.json"
    trace.write_text(json.dumps(events))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        summarize_profile(load_events(trace), graph, runs=20)
        times.append(time.perf_counter() - start)
    print(f"profile parsing, 10k events: {statistics.median(times):.3f} s median (target ≤ 0.5 s)")
    assert np.isfinite(times).all()


if __name__ == "__main__":
    main()
