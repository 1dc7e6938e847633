"""Float activations kept from one model's run until the other model has run on the same sample.

The analysis runs one onnxruntime session at a time (the float model over every sample, then
the quantized one), so two models' weights are never in memory together. What the float run
produced waits here: in memory up to a budget, beyond it on disk (one ``.npy`` per tensor,
read back memory-mapped, a tensor at a time), each sample dropped once compared.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

MEMORY_BUDGET = 64 * 2**20  # bytes of activations kept in memory before spilling to disk


class ActivationStore:
    """Arrays by sample index and tensor name (``folder``: where spilled samples go)."""

    def __init__(self, folder: Path, budget: int = MEMORY_BUDGET) -> None:
        self.folder = folder
        self.budget = budget
        self._held: dict[int, dict[str, np.ndarray]] = {}
        self._spilled: dict[int, dict[str, Path]] = {}
        self._bytes = 0
        self.spilled_bytes = 0  # for the log: how much went to disk

    def put(self, sample: int, values: dict[str, np.ndarray]) -> None:
        """Keep ``values`` for ``sample``."""
        size = sum(np.asarray(v).nbytes for v in values.values())
        if self._bytes + size <= self.budget:
            self._held[sample] = values
            self._bytes += size
            return
        paths = {}
        for k, (name, value) in enumerate(values.items()):
            path = self.folder / f"{sample}_{k}_{_safe(name)}.npy"
            np.save(path, np.asarray(value), allow_pickle=False)
            paths[name] = path
        self._spilled[sample] = paths
        self.spilled_bytes += size

    def get(self, sample: int) -> dict[str, np.ndarray]:
        """The arrays kept for ``sample`` (memory-mapped when spilled)."""
        if sample in self._held:
            return self._held[sample]
        return {name: np.load(path, mmap_mode="r")
                for name, path in self._spilled[sample].items()}

    def drop(self, sample: int) -> None:
        """Forget ``sample`` (its files deleted)."""
        held = self._held.pop(sample, None)
        if held is not None:
            self._bytes -= sum(np.asarray(v).nbytes for v in held.values())
        for path in self._spilled.pop(sample, {}).values():
            path.unlink(missing_ok=True)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80]
