"""Latency statistics of one benchmark configuration, from raw per-run timings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONTENTION_THRESHOLD = 0.10
MAX_SAMPLES_KEPT = 2000  # raw timings kept per configuration, for the distribution plots


@dataclass(frozen=True)
class LatencyStats:
    """Median, tails and spread of per-run latencies (milliseconds)."""

    runs: int
    median_ms: float
    p90_ms: float
    p99_ms: float
    min_ms: float
    mean_ms: float
    std_ms: float
    throughput_per_s: float  # samples per second at the median (batch / median)
    cpu_median_ms: float | None
    contended: bool


def latency_stats(
    wall_ms: list[float] | np.ndarray,
    batch: int = 1,
    cpu_ms: list[float] | np.ndarray | None = None,
    threads: int = 1,
) -> LatencyStats:
    """Summarise per-run wall times (and the process CPU time of each run, when measured).

    Percentiles use linear interpolation (numpy's default). The "contended" flag is raised when
    CPU and wall medians disagree by more than 10 % for a single-threaded session (another
    process took the core), or when a multi-threaded run did not keep even one core busy.
    """
    wall = np.asarray(wall_ms, dtype=np.float64)
    if wall.size == 0:
        raise ValueError("no timed runs")
    median = float(np.median(wall))
    cpu_median = (
        float(np.median(np.asarray(cpu_ms, dtype=np.float64)))
        if cpu_ms is not None and len(cpu_ms)
        else None
    )
    contended = False
    if cpu_median is not None and median > 0:
        if threads <= 1:
            contended = abs(median - cpu_median) / median > CONTENTION_THRESHOLD
        else:
            contended = cpu_median / median < 1 - CONTENTION_THRESHOLD
    return LatencyStats(
        runs=int(wall.size),
        median_ms=median,
        p90_ms=float(np.percentile(wall, 90)),
        p99_ms=float(np.percentile(wall, 99)),
        min_ms=float(wall.min()),
        mean_ms=float(wall.mean()),
        std_ms=float(wall.std(ddof=1)) if wall.size > 1 else 0.0,
        throughput_per_s=batch * 1000.0 / median if median > 0 else 0.0,
        cpu_median_ms=cpu_median,
        contended=contended,
    )


# A difference smaller than this is not worth a word even when it is measurable.
PRACTICAL_RATIO = 0.03
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class RatioInterval:
    """The ratio of two median latencies with a bootstrap confidence interval."""

    ratio: float
    low: float
    high: float
    confidence: float = 0.99

    @property
    def slower(self) -> bool:
        """The test is slower than the base beyond the noise (and by a practical margin)."""
        return self.low > 1.0 and self.ratio > 1.0 + PRACTICAL_RATIO

    @property
    def faster(self) -> bool:
        """The test is faster than the base beyond the noise (and by a practical margin)."""
        return self.high < 1.0 and self.ratio < 1.0 - PRACTICAL_RATIO

    def text(self) -> str:
        """``1.15× (99 % interval 0.97–1.31×)``."""
        return (
            f"{self.ratio:.2f}× ({100 * self.confidence:.0f} % interval "
            f"{self.low:.2f}–{self.high:.2f}×)"
        )


def median_ratio_interval(
    test_ms: list[float] | np.ndarray,
    base_ms: list[float] | np.ndarray,
    confidence: float = 0.99,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> RatioInterval:
    """median(test) / median(base) with a percentile-bootstrap interval over the runs.

    Each resample draws both sets of runs with replacement, so the interval covers the
    run-to-run spread of both models; seeded, so a report reads the same every time.
    """
    test = np.asarray(test_ms, dtype=np.float64)
    base = np.asarray(base_ms, dtype=np.float64)
    if test.size == 0 or base.size == 0:
        raise ValueError("no timed runs")
    ratio = float(np.median(test) / np.median(base))
    rng = np.random.default_rng(seed)
    ratios = np.empty(resamples)
    for start in range(0, resamples, 250):  # chunks bound the memory of the index arrays
        n = min(250, resamples - start)
        t = np.median(test[rng.integers(0, test.size, (n, test.size))], axis=1)
        b = np.median(base[rng.integers(0, base.size, (n, base.size))], axis=1)
        ratios[start : start + n] = t / b
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return RatioInterval(ratio, float(low), float(high), confidence)
