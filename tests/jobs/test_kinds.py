"""The table of job kinds: each operation takes its own recipe and returns a report, and the
subcommands the table names are the command line's and the entry point's."""

from __future__ import annotations

import typing

import pytest

from edgestudio.core.job_api.report import JobReport
from edgestudio.jobs.kinds import KINDS, JobKind


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_operation_takes_its_recipe_and_returns_a_report(kind: str) -> None:
    entry: JobKind = KINDS[kind]
    assert entry.recipe.kind == kind
    operation = entry.resolve()
    hints = typing.get_type_hints(operation)
    first = next(iter(operation.__code__.co_varnames[: operation.__code__.co_argcount]))
    assert hints[first] is entry.recipe, f"{entry.operation} takes {hints[first]}"
    assert hints["return"] is JobReport


def test_the_commands_named_are_the_command_lines() -> None:
    from edgestudio.__main__ import JOB_COMMANDS
    from edgestudio.cli.main import SUBCOMMANDS

    commands = {k.command for k in KINDS.values() if k.command}
    assert commands <= set(SUBCOMMANDS)
    # the entry point starts a worker server for these; tune runs its candidates as jobs
    assert commands - {"device"} | {"tune"} == JOB_COMMANDS
