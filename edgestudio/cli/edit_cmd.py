"""``edgestudio edit``: cut, rename, expose, bypass or simplify — checked against the original."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import add_common_job_args, add_input_args, execute, input_fields
from edgestudio.core.edit.edit_recipe import EditRecipe
from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.recipe import Tolerance


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``edit`` subcommand."""
    p = subparsers.add_parser(
        "edit",
        help="extract a subgraph, rename inputs/outputs, add outputs, bypass nodes, "
        "simplify — checked against the original",
        description="Edit a copy of a model, in this order: extract the subgraph between "
        "tensors, bypass nodes, add intermediate tensors as outputs, rename graph inputs and "
        "outputs, simplify (onnxslim). The result is checked: onnx checker, an onnxruntime "
        "session, and each of its outputs against the original's tensor of the same name on "
        "the original's inputs (an extracted part fed with the original's own values). Exit 0: "
        "equivalent; 1: not.",
    )
    add_spelled(p, EditRecipe)
    add_common_job_args(p)
    add_input_args(p)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> EditRecipe:
    """The recipe the parsed arguments describe."""
    given = spelled_values(args, EditRecipe)
    if not any(value for name, value in given.items() if name != "model"):
        raise SystemExit(
            "edgestudio edit: nothing to do: give --inputs/--outputs, --bypass, "
            "--add-output, --rename or --simplify"
        )
    recipe = EditRecipe(
        output=args.output,
        overwrite=args.overwrite,
        **given,
        tolerance=Tolerance(args.atol, args.rtol),
        **input_fields(args, with_data=False),
    )
    try:
        recipe.renames()
    except ValueError as exc:
        raise SystemExit(f"edgestudio edit: {exc}") from exc
    return recipe


def run(args: argparse.Namespace) -> int:
    """Build the recipe from the arguments and run it."""
    return execute(recipe_from_args(args), args)
