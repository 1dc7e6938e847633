"""Float activations kept from one model's run until the other model has run on the same sample.

The analysis runs one onnxruntime session at a time (the float model over every sample, then
the quantized one), so two models' weights are never in memory together. What the float run
produced waits here: in memory up to a budget (a fifth of the memory available, between 64 MiB
and 1 GiB), beyond it on disk — one file per sample, its tensors one after another, read back
as views of one memory map — each sample dropped once compared. (One ``.npy`` per tensor cost
PP-OCRv5's analysis 8 of its 19 seconds in 7,272 file opens.)
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

BUDGET_RANGE = (64 * 2**20, 2**30)  # bytes of activations kept in memory before spilling
ALIGN = 64  # each spilled tensor starts at a multiple of this (aligned views)


def memory_budget() -> int:
    """A fifth of the memory available now, within :data:`BUDGET_RANGE`."""
    try:
        import psutil

        available = int(psutil.virtual_memory().available)
    except Exception:  # no psutil figure: the floor
        available = 0
    low, high = BUDGET_RANGE
    return max(low, min(high, available // 5))


# (offset, dtype, shape) of one spilled tensor, or the .npy path of one numpy cannot view raw
Spilled = tuple[int, str, tuple[int, ...]] | Path


class ActivationStore:
    """Arrays by sample index and tensor name (``folder``: where spilled samples go)."""

    def __init__(self, folder: Path, budget: int | None = None) -> None:
        self.folder = folder
        self.budget = memory_budget() if budget is None else budget
        self._held: dict[int, dict[str, np.ndarray]] = {}
        self._spilled: dict[int, dict[str, Spilled]] = {}
        self._bytes = 0
        self.spilled_bytes = 0  # for the log: how much went to disk

    def put(self, sample: int, values: dict[str, np.ndarray]) -> None:
        """Keep ``values`` for ``sample``."""
        size = sum(np.asarray(v).nbytes for v in values.values())
        if self._bytes + size <= self.budget:
            self._held[sample] = values
            self._bytes += size
            return
        index: dict[str, Spilled] = {}
        with self._file(sample).open("wb") as out:
            for k, (name, value) in enumerate(values.items()):
                array = np.asarray(value, order="C")  # (ascontiguousarray makes 0-d 1-d)
                if array.dtype.hasobject:  # strings: numpy's own format, a file of its own
                    path = self.folder / f"{sample}_{k}_{_safe(name)}.npy"
                    np.save(path, array, allow_pickle=True)
                    index[name] = path
                    continue
                out.write(b"\0" * (-out.tell() % ALIGN))
                index[name] = (out.tell(), array.dtype.str, array.shape)
                out.write(array.tobytes())
        self._spilled[sample] = index
        self.spilled_bytes += size

    def _file(self, sample: int) -> Path:
        return self.folder / f"sample_{sample}.bin"

    def get(self, sample: int) -> dict[str, np.ndarray]:
        """The arrays kept for ``sample`` (memory-mapped when spilled)."""
        if sample in self._held:
            return self._held[sample]
        index = self._spilled[sample]
        raw = None
        found: dict[str, np.ndarray] = {}
        for name, where in index.items():
            if isinstance(where, Path):
                found[name] = np.load(where, allow_pickle=True)
                continue
            offset, dtype, shape = where
            count = int(np.prod(shape, dtype=np.int64))
            if raw is None and self._file(sample).stat().st_size:
                raw = np.memmap(self._file(sample), np.uint8, mode="r")
            size = count * np.dtype(dtype).itemsize
            chunk = raw[offset : offset + size] if raw is not None else np.empty(0, np.uint8)
            found[name] = chunk.view(dtype).reshape(shape)
        return found

    def drop(self, sample: int) -> None:
        """Forget ``sample`` (its files deleted)."""
        held = self._held.pop(sample, None)
        if held is not None:
            self._bytes -= sum(np.asarray(v).nbytes for v in held.values())
        for where in self._spilled.pop(sample, {}).values():
            if isinstance(where, Path):
                where.unlink(missing_ok=True)
        self._file(sample).unlink(missing_ok=True)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80]
