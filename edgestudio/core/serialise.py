"""The one place that turns typed recipes, results and workspaces into JSON and back.

Every dataclass we save or send — recipes, job results, analyses, workspaces, preferences — goes
through one :mod:`cattrs` converter, driven by the classes' type hints: a new field needs no code
here, and no class writes its own ``to_dict``/``from_dict``. A class whose file format differs
from its fields (a recipe's ``kind`` tag, a specification's sizes as a mapping) registers its
hooks with :func:`register_format` beside its definition.

Unknown keys are ignored, so a file written by a newer EdgeStudio still opens; with
``EDGESTUDIO_STRICT_JSON=1`` (set by the test suite) they are an error, so a key written under
one name and read under another cannot pass a test silently.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import cattrs
from cattrs.strategies import configure_union_passthrough

T = TypeVar("T")

STRICT = os.environ.get("EDGESTUDIO_STRICT_JSON") == "1"

converter = cattrs.Converter(forbid_extra_keys=STRICT, prefer_attrib_converters=False)
# Unions of plain JSON values (``int | str | None`` dims, ``float | None`` figures) pass through.
configure_union_passthrough(int | float | str | bool | None, converter)
converter.register_unstructure_hook(Path, str)
converter.register_structure_hook(Path, lambda value, _: Path(value))
# JSON has no int/float distinction for whole numbers: 3 read into a float field is 3.0.
converter.register_structure_hook(float, lambda value, _: float(value))
# ``Any`` and untyped dicts carry JSON as it is.
converter.register_structure_hook_func(
    lambda hint: hint is Any or hint is object, lambda value, _: value
)


def to_json(value: Any) -> Any:
    """``value`` (a recipe, a result, or anything inside one) as plain JSON data."""
    return converter.unstructure(value)


def from_json(cls: type[T], data: Any) -> T:
    """Rebuild a ``cls`` from :func:`to_json` output; ``None`` stays ``None``."""
    if data is None:
        return typing.cast(T, None)
    try:
        return converter.structure(data, cls)
    except (cattrs.BaseValidationError, cattrs.StructureHandlerNotFoundError) as exc:
        # cattrs groups its errors; say which field of what was wrong, in one line
        where = (
            "; ".join(cattrs.transform_error(exc))
            if isinstance(exc, cattrs.BaseValidationError)
            else str(exc)
        )
        raise ValueError(f"{getattr(cls, '__name__', cls)} could not be read: {where}") from exc


def register_format(
    cls: type[T],
    written: Callable[[T, dict[str, Any]], dict[str, Any]] | None = None,
    read: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    *,
    subclasses: bool = False,
) -> None:
    """Give ``cls`` (and with ``subclasses`` every class derived from it) a file format of its
    own: ``written(value, fields)`` turns the JSON of its fields into what is saved,
    ``read(data)`` turns saved data back into the JSON of its fields. Nested values keep every
    other class's format."""
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

    def applies(hint: Any) -> bool:
        hint = typing.get_origin(hint) or hint  # a generic class given its argument
        return hint is cls or (subclasses and isinstance(hint, type) and issubclass(hint, cls))

    if written is not None:
        write = written

        def writer(hint: Any) -> Callable[[Any], Any]:
            fields_out = make_dict_unstructure_fn(hint, converter)
            return lambda value: write(value, fields_out(value))

        converter.register_unstructure_hook_factory(applies, writer)
    if read is not None:
        read_fields = read

        def reader(hint: Any) -> Callable[[Any, Any], Any]:
            fields_in = make_dict_structure_fn(hint, converter, _cattrs_forbid_extra_keys=STRICT)
            return lambda data, _: fields_in(read_fields(dict(data)), hint)

        converter.register_structure_hook_factory(applies, reader)


def without(*keys: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A ``read`` for :func:`register_format` that drops keys written only for readers (a
    derived figure, a type tag)."""
    return lambda data: {k: v for k, v in data.items() if k not in keys}
