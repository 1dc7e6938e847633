"""The table of job kinds: each operation takes its own recipe and returns a report of the
result its recipe declares (``Recipe[R]``, ``result_type``, ``JobReport[R]``: three spellings
of one type, held together here), and the subcommands the table names are the command line's
and the entry point's."""

from __future__ import annotations

import typing

import pytest

from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.jobs.kinds import KINDS, JobKind


def _declared_result(recipe: type) -> str:
    """The name of ``R`` in the recipe's ``Recipe[R]`` base (a quoted name, or None)."""
    (base,) = (b for b in recipe.__orig_bases__ if typing.get_origin(b) is Recipe)
    (argument,) = typing.get_args(base)
    if isinstance(argument, typing.ForwardRef):
        return argument.__forward_arg__
    return "None" if argument is type(None) else argument.__name__


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_operation_takes_its_recipe_and_returns_its_result(kind: str) -> None:
    entry: JobKind = KINDS[kind]
    assert entry.recipe.kind == kind
    operation = entry.resolve()
    hints = typing.get_type_hints(operation)
    first = next(iter(operation.__code__.co_varnames[: operation.__code__.co_argcount]))
    assert hints[first] is entry.recipe, f"{entry.operation} takes {hints[first]}"
    result = entry.recipe.result_type()
    assert hints["return"] == JobReport[result], f"{entry.operation} returns {hints['return']}"
    declared = "None" if result is type(None) else result.__name__
    assert _declared_result(entry.recipe) == declared, entry.recipe


def test_a_result_of_another_type_fails_the_job_where_it_is_read() -> None:
    """The runner reads a result by its recipe's type: what does not fit is an error there,
    not a surprise for the reader."""
    from edgestudio.core.model.tensor_shapes import ShapesRecipe

    recipe = ShapesRecipe(model="m.onnx")
    assert recipe.read_result({"tensors": {"x": ["float32", [1, 2]]}}).tensors["x"][1] == [1, 2]
    with pytest.raises(ValueError, match="Shapes could not be read"):
        recipe.read_result({"rows": []})
    with pytest.raises(ValueError, match="returned no Shapes"):
        recipe.read_result(None)


def test_the_commands_named_are_the_command_lines() -> None:
    from edgestudio.__main__ import JOB_COMMANDS
    from edgestudio.cli.main import SUBCOMMANDS

    commands = {k.command for k in KINDS.values() if k.command}
    assert commands <= set(SUBCOMMANDS)
    # the entry point starts a worker server for these; tune runs its candidates as jobs
    assert commands - {"device"} | {"tune"} == JOB_COMMANDS
