"""The one place that turns typed recipes, results and workspaces into JSON and back."""

from __future__ import annotations

import dataclasses
import enum
import sys
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


def to_json(value: Any) -> Any:
    """``value`` (a result, or anything inside one) as plain JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def from_json(cls: type[T], data: Any) -> T:
    """Rebuild a ``cls`` from :func:`to_json` output (unknown keys are ignored, so older and
    newer files both read)."""
    return typing.cast(T, _build(cls, data))


def _build(hint: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        for option in options:  # the first that fits (dataclasses before plain values)
            if dataclasses.is_dataclass(option) and not isinstance(data, dict):
                continue
            return _build(option, data)
        return data
    if origin in (list, tuple):
        args = typing.get_args(hint)
        item = args[0] if args else Any
        built = [_build(item, v) for v in data]
        return tuple(built) if origin is tuple else built
    if origin is dict:
        _, value_hint = typing.get_args(hint) or (str, Any)
        return {k: _build(value_hint, v) for k, v in data.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint, vars(sys.modules[hint.__module__]))
        known = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**{k: _build(hints[k], v) for k, v in data.items() if k in known})
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(data)
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return data
