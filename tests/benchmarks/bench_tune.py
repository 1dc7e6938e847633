"""Auto-tune throughput: candidates per minute with one worker, with the default two, and as
tasks on a local Ray cluster (when Ray is installed), on the same search, side by side.

As in the window, jobs are forked from the loaded worker server (Linux), started
before the tune starts; Ray's workers are warmed by a first run likewise."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.tune import SearchSpace, TuneSettings
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.jobs.scheduler import close_default_launcher, default_launcher
from edgestudio.jobs.tuner import Tuner
from edgestudio.resources import SAMPLE_EVALUATION, SAMPLE_MODEL

SPACE = SearchSpace(modes=("qdq", "dynamic"), exclusions=False)  # the 7 first recipes


def per_minute(folder: Path, workers: int, ray: str | None = None) -> tuple[float, float]:
    """Candidates per minute over a whole tune, and seconds per candidate."""
    settings = TuneSettings(
        model=str(folder / SAMPLE_MODEL.name),
        data=DataSource("npz", str(folder / SAMPLE_EVALUATION.name), samples=64),
        goal=Goal("sqnr", 99),
        budget=7,
        workers=workers,
        bench_runs=20,
        space=SPACE,
        ray_address=ray,
    )
    start = time.perf_counter()
    tuner = Tuner(settings)
    tuner.run(interval=0.02)
    seconds = time.perf_counter() - start
    count = len(tuner.candidates)
    tuner.cleanup()
    return count / seconds * 60, seconds / count


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    for f in (SAMPLE_MODEL, SAMPLE_EVALUATION):
        shutil.copy(f, folder / f.name)
    rows = {}
    default_launcher().prepare()
    time.sleep(3)  # the window has been open a few seconds
    for label, workers in (("1 worker", 1), ("2 workers (default)", 2)):
        runs = [per_minute(folder, workers) for _ in range(3)]
        rows[label] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    close_default_launcher()
    try:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        per_minute(folder, 2, "local")  # Ray's workers start on first use: warm them
        runs = [per_minute(folder, 2, "local") for _ in range(3)]
        rows["Ray, local cluster"] = (
            statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
        )
        ray.shutdown()
    except ImportError:
        print("Ray is not installed (pip install 'edgestudio[cluster]'): its row is skipped")
    print(f"{'how':<22}{'candidates/min':>16}{'s/candidate':>13}{'vs 1 worker':>13}")
    one = rows["1 worker"][0]
    for label, (rate, each) in rows.items():
        print(f"{label:<22}{rate:>16.1f}{each:>13.2f}{rate / one:>12.2f}×")
    if "Ray, local cluster" in rows:
        extra = rows["Ray, local cluster"][1] - rows["2 workers (default)"][1]
        print(f"Ray's overhead per candidate over local workers: {extra:+.2f} s")
    print(
        "targets: 2 workers ≥ 1.6× one worker; Ray ≤ 0.5 s per candidate over local. "
        "Latency is measured one candidate at a time in every row."
    )
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
