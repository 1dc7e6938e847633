"""``edgestudio edit``: cut, rename, expose, bypass or simplify — checked against the original."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import add_common_job_args, add_input_args, execute, input_fields
from edgestudio.core.edit.edit_recipe import EditRecipe
from edgestudio.core.job_api.recipe import Tolerance


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


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
    p.add_argument("model", help="the .onnx model (never modified)")
    p.add_argument(
        "--inputs",
        type=_names,
        default=[],
        metavar="T1,T2",
        help="extract: the tensors the part starts at (default: the graph's inputs)",
    )
    p.add_argument(
        "--outputs",
        type=_names,
        default=[],
        metavar="T3,T4",
        help="extract: the tensors the part ends at (default: the graph's outputs)",
    )
    p.add_argument(
        "--bypass",
        action="append",
        default=[],
        metavar="NODE",
        help="remove a one-in one-out node (Identity, Dropout, or one whose input "
        "and output agree in type and shape), wiring its input on (repeatable)",
    )
    p.add_argument(
        "--add-output",
        action="append",
        default=[],
        metavar="T",
        help="make an intermediate tensor a graph output (repeatable)",
    )
    p.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="rename a graph input or output (repeatable)",
    )
    p.add_argument(
        "--simplify",
        action="store_true",
        help="fold constants and remove dead nodes (onnxslim), last",
    )
    add_common_job_args(p)
    add_input_args(p)
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> EditRecipe:
    """The recipe the parsed arguments describe."""
    if not (
        args.inputs
        or args.outputs
        or args.bypass
        or args.add_output
        or args.rename
        or args.simplify
    ):
        raise SystemExit(
            "edgestudio edit: nothing to do: give --inputs/--outputs, --bypass, "
            "--add-output, --rename or --simplify"
        )
    recipe = EditRecipe(
        model=args.model,
        output=args.output,
        overwrite=args.overwrite,
        inputs=tuple(args.inputs),
        outputs=tuple(args.outputs),
        bypass=tuple(args.bypass),
        add_outputs=tuple(args.add_output),
        rename=tuple(args.rename),
        simplify=args.simplify,
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
