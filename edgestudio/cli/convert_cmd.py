"""``edgestudio convert``: change a model's opset and/or make axes dynamic or static."""

from __future__ import annotations

import argparse
import functools

from edgestudio.cli.job_ui import add_common_job_args, execute, parse_axis_change, parse_shape
from edgestudio.core.recipes import ConvertRecipe, DimChange, Tolerance


def _static(text: str) -> list[DimChange]:
    """``NAME=DIMxDIM…`` (the whole shape) or ``NAME:AXIS=SIZE`` (one axis)."""
    name, _, value = text.partition("=")
    if ":" in name:
        return [parse_axis_change(text, "--static", symbolic=False)]
    if not value:
        raise argparse.ArgumentTypeError(f"--static expects NAME=DIMxDIM… (got '{text}')")
    return [DimChange(name, axis, d) for axis, d in enumerate(parse_shape(value))]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``convert`` subcommand."""
    p = subparsers.add_parser(
        "convert", help="change opset and/or dynamic/static axes, checked against the original",
        description="Convert a model's opset (onnx.version_converter) and/or its input/output "
        "dims, then check the result: onnx checker, an onnxruntime session, and np.allclose "
        "against the original on the same seeded inputs (two sizes of every dynamic dim).",
    )
    p.add_argument("model", help="the .onnx model (never modified)")
    p.add_argument("--opset", type=int, help="target ai.onnx opset")
    p.add_argument("--dynamic", action="append", default=[], metavar="NAME:AXIS=SYMBOL",
                   type=functools.partial(parse_axis_change, option="--dynamic", symbolic=True),
                   help="make an axis symbolic, e.g. image:0=batch (repeatable)")
    p.add_argument("--static", action="append", default=[], metavar="NAME=DIMxDIM",
                   type=_static, help="fix a whole shape (image=1x3x224x224) or one axis "
                   "(image:0=1) (repeatable)")
    add_common_job_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the recipe from the arguments and run it."""
    dims = [*args.dynamic, *(d for group in args.static for d in group)]
    if args.opset is None and not dims:
        raise SystemExit("edgestudio convert: nothing to do: give --opset, --dynamic or --static")
    recipe = ConvertRecipe(
        model=args.model, output=args.output, overwrite=args.overwrite, opset=args.opset,
        dims=tuple(dims), tolerance=Tolerance(args.atol, args.rtol),
    )
    return execute(recipe, args)
