"""The text forms of conversions and exports — ``NAME:AXIS=SYMBOL``, ``NAME=DIMxDIM``,
``NAME=DIMxDIM:DTYPE``, a dims-table cell — built on the shapes of
:mod:`edgestudio.core.inputs.grammar`."""

from __future__ import annotations

from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.convert.export_recipes import TorchInput
from edgestudio.core.inputs.grammar import parse_shape

TORCH_DTYPES = ("float32", "float16", "float64", "int64", "int32", "bool")


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
