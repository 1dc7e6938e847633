"""Run every benchmark: ``python -m tests.benchmarks [NAME ...]``."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = [
    "bench_graph",
    "bench_jobs",
    "bench_quant",
    "bench_quant_scale",
    "bench_ep",
    "bench_tune",
    "bench_requantize",
    "bench_remote",
    "bench_openvino",
    "bench_startup",
    "bench_int4",
    "bench_recovery",
    "bench_edit",
    "bench_sensitivity",
    "bench_vs_nncf",  # skipped, said, unless NNCF is importable
]


def main(argv: list[str]) -> int:
    from tests.benchmarks import run_from_bytecode

    run_from_bytecode()
    names = argv or BENCHMARKS
    for name in names:
        print(f"\n=== {name} ===", flush=True)
        importlib.import_module(f"tests.benchmarks.{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
