"""The short text forms users type — shapes, ranges, image sizes, counts, data sources, dims
— parsed by one grammar wherever they are entered: the CLI's arguments (at parse time), the
Inputs tab's cells, the forms' fields. A mistake raises :class:`GrammarError` saying what the
form looks like, in words that fit every surface; each surface names its own field or flag.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.convert.export_recipes import TorchInput
from edgestudio.core.inputs.data_source import IMAGE_SUFFIXES, DataSource
from edgestudio.core.inputs.input_spec import Domain, InputSpecError


class GrammarError(InputSpecError, ValueError):
    """Text that does not follow its form; the message shows the form and an example."""


TORCH_DTYPES = ("float32", "float16", "float64", "int64", "int32", "bool")


def parse_dims(text: str, minimum: int = 1) -> tuple[int, ...]:
    """``1x3x224x224`` -> ``(1, 3, 224, 224)``, every dim at least ``minimum`` (0 where an
    empty axis makes sense: a KV cache with no past yet)."""
    try:
        dims = tuple(int(d) for d in text.strip().lower().split("x"))
    except ValueError as exc:
        raise GrammarError(f"a shape is written DIMxDIM…, e.g. 1x3x224x224 (got '{text}')") \
            from exc
    if any(d < minimum for d in dims):
        raise GrammarError(f"every dim must be ≥ {minimum} (got '{text}')")
    return dims


def parse_shape(text: str) -> tuple[int, ...]:
    """``1x3x224x224`` -> ``(1, 3, 224, 224)``, every dim ≥ 1."""
    return parse_dims(text)


def parse_image_size(text: str) -> tuple[int, int]:
    """``224x224`` (height × width) -> ``(224, 224)``."""
    dims = parse_dims(text)
    if len(dims) != 2:
        raise GrammarError(f"an image size is written HxW, e.g. 224x224 (got '{text}')")
    return dims[0], dims[1]


def parse_counts(text: str) -> tuple[int, ...]:
    """``1,2,4`` -> ``(1, 2, 4)``, each ≥ 1 (thread counts)."""
    try:
        counts = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError as exc:
        raise GrammarError(f"give whole numbers separated by commas, e.g. 1,2 (got '{text}')") \
            from exc
    if not counts or min(counts) < 1:
        raise GrammarError(f"give counts ≥ 1, e.g. 1,2 (got '{text}')")
    return counts


def parse_named_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=DIMxDIM…`` or ``NAME=scalar`` -> ``(name, dims)``; a dim may be 0."""
    name, sep, dims = text.rpartition("=")
    if not sep or not name.strip():
        raise GrammarError(f"a shape is given as NAME=DIMxDIM, e.g. image=1x3x224x224 or "
                           f"sr=scalar (got '{text}')")
    if dims.strip().lower() in ("", "scalar"):
        return name.strip(), ()
    try:
        return name.strip(), parse_dims(dims, minimum=0)
    except GrammarError as exc:
        raise GrammarError(f"{name.strip()}: {exc}, or 'scalar'") from exc


RANGE_WORDS = ("ones", "zeros", "normal", "bool")


def parse_named_range(text: str) -> tuple[str, Domain]:
    """``NAME=LOW:HIGH`` (integers: HIGH excluded), ``NAME=V1,V2,…`` or ``NAME=ones|zeros|
    normal|bool`` -> ``(name, domain)``."""
    name, sep, value = text.rpartition("=")
    if not sep or not name.strip():
        raise GrammarError(f"a range is given as NAME=LOW:HIGH, e.g. input_ids=0:30522 "
                           f"(got '{text}')")
    name, value = name.strip(), value.strip().lower()
    if value in RANGE_WORDS:
        return name, Domain(value)
    try:
        if ":" in value:
            low, high = (float(v) for v in value.split(":", 1))
            if high <= low:
                raise GrammarError(f"{name}: HIGH must be above LOW (got '{value}')")
            return name, Domain("range", low, high)
        return name, Domain("values", values=tuple(float(v) for v in value.split(",")))
    except ValueError as exc:
        if isinstance(exc, GrammarError):
            raise
        raise GrammarError(f"{name}: expected LOW:HIGH, V1,V2,…, {', '.join(RANGE_WORDS[:-1])} "
                           f"or {RANGE_WORDS[-1]} (got '{value}')") from exc


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
        raise GrammarError(f"expected comma-separated numbers (got '{text}')") from exc



def checked_text(parse: Callable[[str], object]) -> Callable[[str], str]:
    """A parser that checks ``text`` with ``parse`` and gives it back unchanged (recipes keep
    the shapes and ranges as typed; they are checked where they are entered)."""

    def check(text: str) -> str:
        parse(text)
        return text.strip()

    return check


@dataclass(frozen=True)
class InputOverrides:
    """What the user fixed: shapes (``NAME=1x3x224x224``) and ranges (``NAME=0:30522``), kept
    as typed (recipes and workspaces carry the text) and read by this grammar."""

    shapes: tuple[str, ...] = ()
    ranges: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.shapes or self.ranges)

    def parsed_shapes(self) -> dict[str, tuple[int, ...]]:
        """``{name: shape}``; raises :class:`GrammarError` on a malformed entry."""
        return dict(parse_named_shape(text) for text in self.shapes)

    def parsed_ranges(self) -> dict[str, Domain]:
        """``{name: Domain}``; raises :class:`GrammarError` on a malformed entry."""
        return dict(parse_named_range(text) for text in self.ranges)

    def to_cli(self) -> list[str]:
        """The ``--shape``/``--range`` arguments that give these overrides."""
        args = []
        for s in self.shapes:
            args += ["--shape", s]
        for r in self.ranges:
            args += ["--range", r]
        return args
