"""``edgestudio diagnostic ACTION``: exercise the job system (succeed, fail, crash, hang, …)."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import add_output_args, add_timeout_arg, execute
from edgestudio.cli.json_option import add_json_option
from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.core.job_api.arguments import add_spelled, spelled_values


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``diagnostic`` subcommand."""
    p = subparsers.add_parser(
        "diagnostic",
        help="run a purpose-made job to check the job system",
        description="Run a purpose-made worker job: 'succeed' writes OUTPUT, 'fail' raises, "
        "'crash' segfaults, 'hang' never ends (use --timeout), 'spawn' starts a child process "
        "and hangs, 'noise' prints garbage on stdout and succeeds, 'spin' burns CPU for --seconds, "
        "'partial' writes half a file then crashes, 'hog' allocates memory until it runs out "
        "(within --megabytes when given, else up to 1 GiB and then waits to be killed). "
        "Useful to see how each outcome is reported.",
    )
    add_spelled(p, DiagnosticRecipe)
    add_output_args(p, "the file 'succeed' writes", required=False)
    add_timeout_arg(p)
    add_json_option(p, "the report")
    p.set_defaults(func=run, make_recipe=recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> DiagnosticRecipe:
    """The recipe the parsed arguments describe."""
    return DiagnosticRecipe(
        **spelled_values(args, DiagnosticRecipe),
        output=args.output,
        overwrite=args.overwrite,
    )


def run(args: argparse.Namespace) -> int:
    """Run the self-test job."""
    return execute(recipe_from_args(args), args)
