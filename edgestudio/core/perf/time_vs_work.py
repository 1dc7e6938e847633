"""Measured time beside counted work: which kernels are slow for the work they do.

Each profiled kernel (a node, or the nodes onnxruntime fused into it) gets the MACs of the
nodes it covers; ops without multiply-accumulates (elementwise chains, layout changes) count
half their FLOPs as MAC-equivalents, so that every kernel has a work figure. A kernel whose
time per unit of work is many times the run's median is slow for its work: memory-bound
elementwise chains, unfused layouts, a provider's fallback.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from edgestudio.core.model.cost_recipe import ModelCost
from edgestudio.core.perf.perf_results import Profile

SLOW_FACTOR = 5.0  # time per unit of work above this many times the median: slow for its work


@dataclass(frozen=True)
class KernelWork:
    """One profiled kernel's time and the work of the nodes it covers."""

    node: str
    op_type: str
    time_us: float
    macs: int
    work: float  # MACs, or FLOPs / 2 for a kernel without MACs
    slow: bool = False

    @property
    def ns_per_work(self) -> float:
        """Nanoseconds per MAC (or MAC-equivalent)."""
        return 1000 * self.time_us / self.work if self.work else float("inf")


def kernel_work(profile: Profile, cost: ModelCost) -> list[KernelWork]:
    """Every profiled kernel with its covered nodes' work, the slow ones marked."""
    by_node = cost.by_node()
    rows = []
    for kernel in profile.nodes:
        covered = [by_node[n] for n in (kernel.covers or [kernel.node]) if n in by_node]
        if not covered:
            continue
        macs = sum(c.macs for c in covered)
        work = float(macs) if macs else sum(c.flops for c in covered) / 2
        if work > 0:
            rows.append(KernelWork(kernel.node, kernel.op_type, kernel.time_us, macs, work))
    if not rows:
        return []
    median = statistics.median(r.ns_per_work for r in rows)
    return [
        KernelWork(
            r.node, r.op_type, r.time_us, r.macs, r.work, slow=r.ns_per_work > SLOW_FACTOR * median
        )
        for r in rows
    ]
