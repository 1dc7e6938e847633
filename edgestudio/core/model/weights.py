"""Reading one weight tensor (inline or external, under our policy) and summarising it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.model.external_data import external_refs, resolve_location


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
    numeric = flat.astype(np.float64) if flat.size else np.zeros(1)
    return WeightStats(
        shape=tuple(int(d) for d in np.shape(array)), dtype=str(np.asarray(array).dtype),
        count=int(flat.size), minimum=float(numeric.min()), maximum=float(numeric.max()),
        mean=float(numeric.mean()), std=float(numeric.std()), zeros=int((flat == 0).sum()),
    )


def weight_histogram(array: np.ndarray, bins: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(counts, edges) of the values of ``array``."""
    values = np.asarray(array, dtype=np.float64).reshape(-1)
    values = values[np.isfinite(values)]
    if not values.size:
        return np.zeros(bins), np.linspace(0, 1, bins + 1)
    return np.histogram(values, bins=bins)
