"""Parsing the short text forms users type, shared by the CLI and the GUI's forms."""

from __future__ import annotations

from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.convert.export_recipes import TorchInput
from edgestudio.core.inputs.data_source import IMAGE_SUFFIXES, DataSource

TORCH_DTYPES = ("float32", "float16", "float64", "int64", "int32", "bool")


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``1x3x224x224`` into ``(1, 3, 224, 224)``. Raises ValueError with a message."""
    try:
        dims = tuple(int(d) for d in text.strip().lower().split("x"))
    except ValueError as exc:
        raise ValueError(f"a shape is written DIMxDIM…, e.g. 1x3x224x224 (got '{text}')") from exc
    if any(d < 1 for d in dims):
        raise ValueError(f"every dim must be ≥ 1 (got '{text}')")
    return dims


def parse_axis_change(text: str, symbolic: bool) -> DimChange:
    """Parse ``NAME:AXIS=VALUE`` (VALUE a dim name when ``symbolic``, else a size)."""
    try:
        target, value = text.strip().rsplit("=", 1)
        name, axis = target.rsplit(":", 1)
        dim: int | str = value.strip() if symbolic else int(value)
        return DimChange(name.strip(), int(axis), dim)
    except ValueError as exc:
        example = "image:0=batch" if symbolic else "image:0=1"
        kind = "SYMBOL" if symbolic else "SIZE"
        raise ValueError(f"expected NAME:AXIS={kind}, e.g. {example} (got '{text}')") from exc


def parse_static(text: str) -> list[DimChange]:
    """``NAME=DIMxDIM…`` (a whole shape) or ``NAME:AXIS=SIZE`` (one axis)."""
    name, _, value = text.partition("=")
    if ":" in name:
        return [parse_axis_change(text, symbolic=False)]
    if not value:
        raise ValueError(f"expected NAME=DIMxDIM… (got '{text}')")
    return [DimChange(name.strip(), axis, d) for axis, d in enumerate(parse_shape(value))]


def parse_torch_input(text: str) -> TorchInput:
    """``NAME=DIMxDIM[:DTYPE]``."""
    name, sep, rest = text.partition("=")
    if not sep or not name:
        raise ValueError(f"expected NAME=DIMxDIM[:DTYPE] (got '{text}')")
    shape, _, dtype = rest.partition(":")
    dtype = dtype or "float32"
    if dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(TORCH_DTYPES)} (got '{dtype}')")
    return TorchInput(name.strip(), parse_shape(shape), dtype)


def parse_dim_value(text: str) -> int | str | None:
    """A dims-table cell: blank keeps the dim, a number fixes it, a name makes it symbolic."""
    text = text.strip()
    if not text:
        return None
    return int(text) if text.isdigit() else text


def parse_data_source(text: str, samples: int = 0, sample_rate: int = 16000,
                      tokenizer: str = "", **image: object) -> DataSource:
    """``synthetic[:N[:SEED]]``, an ``.npz`` file, a folder of images, audio files (a ``.wav``
    or a folder of them), a ``.txt`` of sentences, or a folder of samples."""
    from pathlib import Path

    from edgestudio.core.inputs.media_data import AUDIO_SUFFIXES

    if text.startswith("synthetic"):
        parts = text.split(":")
        try:
            count = int(parts[1]) if len(parts) > 1 and parts[1] else (samples or 32)
            seed = int(parts[2]) if len(parts) > 2 else 0
        except ValueError as exc:
            raise ValueError(f"expected synthetic[:SAMPLES[:SEED]] (got '{text}')") from exc
        return DataSource("synthetic", "", samples=count, seed=seed)
    path = Path(text)
    if path.suffix.lower() in AUDIO_SUFFIXES:
        return DataSource("audio", str(path), samples=samples, sample_rate=sample_rate)
    if path.suffix.lower() == ".txt":
        return DataSource("text", str(path), samples=samples, tokenizer=tokenizer)
    if path.is_dir():
        suffixes = {p.suffix.lower() for p in path.iterdir()}
        if suffixes & AUDIO_SUFFIXES and not suffixes & IMAGE_SUFFIXES:
            return DataSource("audio", str(path), samples=samples, sample_rate=sample_rate)
        if suffixes & IMAGE_SUFFIXES:
            extra = {k: v for k, v in image.items() if v is not None}
            return DataSource("images", str(path), samples=samples, **extra)  # type: ignore[arg-type]
        return DataSource("folder", str(path), samples=samples)
    return DataSource("npz", str(path), samples=samples)


def parse_floats(text: str) -> tuple[float, ...]:
    """``0.485,0.456,0.406`` -> a tuple of floats."""
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise ValueError(f"expected comma-separated numbers (got '{text}')") from exc
