"""Reading one weight tensor (inline or external, under our policy) and summarising it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.model.external_data import external_refs, resolve_location

STATS_CHUNK = 1 << 20  # elements summed at a time


@dataclass(frozen=True)
class WeightStats:
    """Summary statistics of a weight tensor."""

    shape: tuple[int, ...]
    dtype: str
    count: int
    minimum: float
    maximum: float
    mean: float
    std: float
    zeros: int

    @property
    def zero_fraction(self) -> float:
        """Share of elements that are exactly zero."""
        return self.zeros / self.count if self.count else 0.0


def read_weight(tensor: onnx.TensorProto, model_dir: Path) -> np.ndarray:
    """Return the tensor's values; external data is read only where the policy allows."""
    ref = external_refs(tensor)
    if ref is None:
        return np.asarray(numpy_helper.to_array(tensor))
    path = resolve_location(model_dir, ref)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
    count = math.prod(tensor.dims) if tensor.dims else 1
    data = np.fromfile(path, dtype=dtype, count=count, offset=ref.offset)
    return data.reshape(tuple(tensor.dims))


def weight_stats(array: np.ndarray) -> WeightStats:
    """Min, max, mean, std and zero count of ``array`` (computed in float64)."""
    flat = np.asarray(array).reshape(-1)
    if not flat.size:
        flat = np.zeros(1)
    # In float64 a chunk at a time: a whole float64 copy of a 1 GB embedding table (and numpy's
    # temporaries for its std) would hold several times the weight.
    chunks = range(0, flat.size, STATS_CHUNK)
    mean = (
        sum(float(flat[i : i + STATS_CHUNK].astype(np.float64).sum()) for i in chunks) / flat.size
    )
    squares = sum(
        float(np.square(flat[i : i + STATS_CHUNK].astype(np.float64) - mean).sum()) for i in chunks
    )
    zeros = sum(int(np.count_nonzero(flat[i : i + STATS_CHUNK] == 0)) for i in chunks)
    return WeightStats(
        shape=tuple(int(d) for d in np.shape(array)),
        dtype=str(np.asarray(array).dtype),
        count=int(np.asarray(array).size),
        minimum=float(flat.min()),
        maximum=float(flat.max()),
        mean=mean,
        std=math.sqrt(squares / flat.size),
        zeros=zeros,
    )


def weight_histogram(array: np.ndarray, bins: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(counts, edges) of the values of ``array``."""
    values = np.asarray(array, dtype=np.float64).reshape(-1)
    values = values[np.isfinite(values)]
    if not values.size:
        return np.zeros(bins), np.linspace(0, 1, bins + 1)
    return np.histogram(values, bins=bins)
