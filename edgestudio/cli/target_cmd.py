"""``edgestudio target check MODEL --target qnn-htp``: which nodes the target's accelerator
takes, in its provider's own words, before and after the app's fixes."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import (
    add_common_job_args,
    add_input_args,
    add_timeout_arg,
    execute_job,
    input_fields,
)
from edgestudio.cli.json_option import add_json_option
from edgestudio.cli.output import print_table
from edgestudio.core.job_api.arguments import add_spelled
from edgestudio.core.job_api.options import add_options, values_from_args
from edgestudio.core.targets.target_recipe import (
    TARGET_LABELS,
    Placement,
    TargetCheck,
    TargetCheckRecipe,
    TargetCompileRecipe,
)

SHOWN_NODES = 20  # nodes left to the CPU listed by name; the JSON has every one


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``target``."""
    p = subparsers.add_parser(
        "target",
        help="will it run on the device's accelerator? (Qualcomm HTP, emulated here)",
        description="Ask the target's own execution provider which nodes it takes, offline: "
        "onnxruntime-qnn's HTP backend emulates the Hexagon NPU on this machine and says, per "
        "node, why it leaves one to the CPU.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, help="check")
    c = actions.add_parser("check", help="every node placed on the target or the CPU, with why")
    add_spelled(c, TargetCheckRecipe)
    add_options(c, TargetCheckRecipe)
    add_input_args(c)
    add_json_option(c, "the placement of every node, before and after the fixes")
    add_timeout_arg(c, "the check")
    c.set_defaults(func=run_check, make_recipe=recipe_from_args)
    k = actions.add_parser(
        "compile", help="the EPContext model and the context binary a device loads, proven here"
    )
    add_spelled(k, TargetCompileRecipe)
    add_common_job_args(k, tolerance=False)
    add_options(k, TargetCompileRecipe)
    add_input_args(k)
    k.set_defaults(func=run_compile, make_recipe=compile_recipe_from_args)


def recipe_from_args(args: argparse.Namespace) -> TargetCheckRecipe:
    """The recipe the parsed arguments describe."""
    return TargetCheckRecipe(
        model=args.model,
        **values_from_args(args, TargetCheckRecipe),
        **input_fields(args, with_data=False),
    )


def compile_recipe_from_args(args: argparse.Namespace) -> TargetCompileRecipe:
    """The compile recipe the parsed arguments describe."""
    return TargetCompileRecipe(
        model=args.model,
        output=args.output,
        overwrite=args.overwrite,
        **values_from_args(args, TargetCompileRecipe),
        **input_fields(args, with_data=False),
    )


def run_compile(args: argparse.Namespace) -> int:
    """Compile, reload, compare; print what was written."""
    code, job = execute_job(compile_recipe_from_args(args), args, show_report=False)
    if job is None or job.report is None:
        return code
    compiled = job.report.result
    print(compiled.text())
    print(f"written: {job.report.output} and {compiled.binary} beside it")
    return code


def print_placement(title: str, placement: Placement) -> None:
    """One placement: the count, then the provider's reasons with how many nodes each."""
    print(f"{title}: {placement.text()}")
    if placement.session_error:
        return
    reasons = placement.reasons()
    if reasons:
        print_table(
            ["nodes", "the provider's reason"],
            [[count, reason] for reason, count in reasons.items()],
            numeric=(0,),
        )
    shown = placement.on_cpu[:SHOWN_NODES]
    if shown:
        print_table(
            ["node left to the CPU", "op"],
            [[n.node, n.op_type] for n in shown],
            title=f"{len(placement.on_cpu)} node(s) on the CPU"
            + (
                f" (the first {SHOWN_NODES}; --json has all)"
                if len(placement.on_cpu) > SHOWN_NODES
                else ""
            ),
        )


def run_check(args: argparse.Namespace) -> int:
    """Check, print the placements; exit 0 when every node runs on the target once fixed."""
    recipe = recipe_from_args(args)
    code, job = execute_job(recipe, args, show_report=False)
    if job is None or job.report is None:
        return code
    check: TargetCheck = job.report.result
    print(f"{TARGET_LABELS.get(check.target, check.target)}, v{check.htp_arch}: {check.provider}")
    print_placement("as it is", check.before)
    if check.after is not None:
        print_placement(f"with {', '.join(check.fixes)}", check.after)
    final = check.final
    whole = final.whole
    design = len(final.by_design)
    print(
        "every node runs on the target"
        + (
            f" (but the {design} graph-edge Q/DQ the provider leaves to the CPU by design)"
            if design
            else ""
        )
        if whole
        else "not every node runs on the target: the reasons above are the provider's own"
    )
    return code if code else (0 if whole else 1)
