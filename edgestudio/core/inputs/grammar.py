"""The short text forms users type — shapes, ranges, image sizes, counts, numbers — parsed by
one grammar wherever they are entered: the CLI's arguments (at parse time), the
Inputs tab's cells, the forms' fields. A mistake raises :class:`GrammarError` saying what the
form looks like, in words that fit every surface; each surface names its own field or flag.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from edgestudio.core.inputs.input_spec import Domain, InputSpecError


class GrammarError(InputSpecError, ValueError):
    """Text that does not follow its form; the message shows the form and an example."""


def parse_dims(text: str, minimum: int = 1) -> tuple[int, ...]:
    """``1x3x224x224`` -> ``(1, 3, 224, 224)``, every dim at least ``minimum`` (0 where an
    empty axis makes sense: a KV cache with no past yet)."""
    try:
        dims = tuple(int(d) for d in text.strip().lower().split("x"))
    except ValueError as exc:
        raise GrammarError(f"a shape is written DIMxDIM…, e.g. 1x3x224x224 (got '{text}')") from exc
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


def show_image_size(size: tuple[int, int]) -> str:
    """``(224, 160)`` -> ``224x160``."""
    return f"{size[0]}x{size[1]}"


def parse_scale(text: str) -> float:
    """A positive factor: ``0.5``, or a fraction such as ``1/255`` (exact, as typed)."""
    top, slash, bottom = text.strip().partition("/")
    try:
        value = float(top) / float(bottom) if slash else float(top)
    except (ValueError, ZeroDivisionError) as exc:
        raise GrammarError(f"a factor is written 0.5 or 1/255 (got '{text}')") from exc
    if not value > 0:
        raise GrammarError(f"the factor must be above 0 (got '{text}')")
    return value


def show_scale(value: float) -> str:
    """``1/255`` for the reciprocal of a whole number, else the number (both read back
    exactly by :func:`parse_scale`)."""
    whole = round(1 / value) if value else 0
    return f"1/{whole}" if whole > 1 and 1 / whole == value else repr(value)


def show_floats(values: tuple[float, ...]) -> str:
    """``(0.485, 0.456)`` -> ``0.485,0.456`` (read back exactly by :func:`parse_floats`)."""
    return ",".join(repr(v) for v in values)


def parse_counts(text: str) -> tuple[int, ...]:
    """``1,2,4`` -> ``(1, 2, 4)``, each ≥ 1 (thread counts)."""
    try:
        counts = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError as exc:
        raise GrammarError(
            f"give whole numbers separated by commas, e.g. 1,2 (got '{text}')"
        ) from exc
    if not counts or min(counts) < 1:
        raise GrammarError(f"give counts ≥ 1, e.g. 1,2 (got '{text}')")
    return counts


def parse_named_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=DIMxDIM…`` or ``NAME=scalar`` -> ``(name, dims)``; a dim may be 0."""
    name, sep, dims = text.rpartition("=")
    if not sep or not name.strip():
        raise GrammarError(
            f"a shape is given as NAME=DIMxDIM, e.g. image=1x3x224x224 or sr=scalar (got '{text}')"
        )
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
        raise GrammarError(
            f"a range is given as NAME=LOW:HIGH, e.g. input_ids=0:30522 (got '{text}')"
        )
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
        raise GrammarError(
            f"{name}: expected LOW:HIGH, V1,V2,…, {', '.join(RANGE_WORDS[:-1])} "
            f"or {RANGE_WORDS[-1]} (got '{value}')"
        ) from exc


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
