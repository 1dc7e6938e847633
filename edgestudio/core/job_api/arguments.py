"""The command line's arguments for fields declared with :func:`~edgestudio.core.job_api.command.
positional` or :func:`~edgestudio.core.job_api.command.spelled` and a ``help`` line.

They are parsed from the same declaration the equivalent command is said from, as
:func:`~edgestudio.core.job_api.options.option` fields are (:func:`~edgestudio.core.job_api.
options.add_options`): a subcommand adds them with :func:`add_spelled` and builds its recipe with
:func:`spelled_values`, so the flag, its help and its reading back cannot disagree with what the
Jobs panel's "Copy equivalent command" says. A field with no ``help`` is read some other way by
its subcommand (several flags make one value: ``--atol``/``--rtol``, ``--data`` and its
preparation).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from edgestudio.core.job_api.command import FIELD_SPELLING, Spelling, field_default
from edgestudio.core.job_api.options import argument_type


def _parsed(cls: type) -> list[tuple[dataclasses.Field[Any], Spelling]]:
    """The fields of ``cls`` whose spelling says how to parse them (a ``help`` line)."""
    found = []
    for f in dataclasses.fields(cls):
        spelling: Spelling | None = f.metadata.get(FIELD_SPELLING)
        if spelling is not None and spelling.help:
            found.append((f, spelling))
    return found


def add_spelled(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type) -> None:
    """Add an argparse argument for every field of recipe class ``cls`` declared with a help
    line, positionals first in declaration order (as the equivalent command says them)."""
    for f, spelling in sorted(_parsed(cls), key=lambda item: not item[1].positional):
        default = None if (found := field_default(f)) is dataclasses.MISSING else found
        flag = spelling.flag or f"--{f.name.replace('_', '-')}"
        read = spelling.parse and argument_type(spelling.parse)
        if spelling.positional:
            parser.add_argument(
                f.name,
                metavar=spelling.metavar,
                nargs=_count(spelling),
                choices=spelling.choices,
                type=read or str,
                help=spelling.help,
            )
        elif isinstance(default, bool):
            parser.add_argument(flag, action="store_true", dest=f.name, help=spelling.help)
        elif spelling.each:
            parser.add_argument(
                flag,
                action="append",
                default=[],
                type=read or str,
                dest=f.name,
                metavar=spelling.metavar,
                help=f"{spelling.help} (repeatable)",
            )
        else:
            parser.add_argument(
                flag,
                default=default,
                type=read or (str if default is None else type(default)),
                choices=spelling.choices,
                dest=f.name,
                metavar=spelling.metavar,
                help=spelling.help,
            )


def _count(spelling: Spelling) -> str | None:
    """argparse's ``nargs`` of a positional: one, one or more (``each``), or either left out."""
    if spelling.each:
        return "*" if spelling.optional else "+"
    return "?" if spelling.optional else None


def spelled_values(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields :func:`add_spelled` added, as parsed: ``{field name: value}``."""
    values: dict[str, Any] = {}
    for f, _ in _parsed(cls):
        given = getattr(args, f.name)
        values[f.name] = tuple(given) if isinstance(given, list) else given
    return values
