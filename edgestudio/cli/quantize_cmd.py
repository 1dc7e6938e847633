"""``edgestudio quantize``: every onnxruntime quantization mode from the command line."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import argument_type, execute
from edgestudio.core.parsing import parse_data_source, parse_floats, parse_shape
from edgestudio.core.quant_recipes import CALIB_METHODS, MODES, QUANT_TYPES, QuantRecipe


def add_data_args(p: argparse.ArgumentParser, option: str, help_text: str,
                  required: bool = False) -> None:
    """``--calib``/``--data`` with sample count and image preprocessing options."""
    p.add_argument(option, metavar="PATH", required=required, help=help_text)
    p.add_argument("--samples", type=int, default=0, help="use only the first N samples")
    g = p.add_argument_group("image folders")
    g.add_argument("--image-size", type=argument_type(parse_shape, "--image-size"),
                   metavar="HxW", help="resize images to H×W")
    g.add_argument("--image-layout", choices=("NCHW", "NHWC"), default="NCHW")
    g.add_argument("--image-scale", type=float, default=1 / 255,
                   help="multiply pixels by this first (default 1/255)")
    g.add_argument("--image-mean", type=argument_type(parse_floats, "--image-mean"),
                   default=(0.0,), metavar="M[,M,M]")
    g.add_argument("--image-std", type=argument_type(parse_floats, "--image-std"),
                   default=(1.0,), metavar="S[,S,S]")
    g.add_argument("--image-colour", choices=("RGB", "BGR", "L"), default="RGB")


def data_source(args: argparse.Namespace, text: str) -> object:
    """Build the DataSource from the data options."""
    try:
        return parse_data_source(
            text, args.samples, size=args.image_size, layout=args.image_layout,
            scale=args.image_scale, mean=args.image_mean, std=args.image_std,
            colour=args.image_colour)
    except ValueError as exc:
        raise SystemExit(f"edgestudio: error: {exc}") from exc


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``quantize`` subcommand."""
    p = subparsers.add_parser(
        "quantize", help="quantize a model (dynamic, QDQ, QOperator, fp16, int4)",
        description="Quantize with onnxruntime.quantization. ORT's rules are checked first; "
        "calibration data is validated before anything is written.",
    )
    p.add_argument("model", help="the float .onnx model (never modified)")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--mode", choices=MODES, default="qdq")
    p.add_argument("--activation-type", choices=QUANT_TYPES, default="uint8")
    p.add_argument("--weight-type", choices=QUANT_TYPES, default="int8")
    p.add_argument("--per-channel", action="store_true")
    p.add_argument("--reduce-range", action="store_true")
    p.add_argument("--activation-symmetric", action="store_true")
    p.add_argument("--weight-asymmetric", action="store_true")
    p.add_argument("--calib-method", choices=CALIB_METHODS, default="minmax")
    p.add_argument("--percentile", type=float, default=99.999)
    p.add_argument("--op-type", action="append", default=[], metavar="OP",
                   help="quantize only these op types (repeatable)")
    p.add_argument("--exclude", action="append", default=[], metavar="NODE",
                   help="leave this node in float (repeatable)")
    p.add_argument("--no-preprocess", action="store_true", help="skip ORT's quant_pre_process")
    p.add_argument("--fp16-io", action="store_true", help="fp16: make inputs/outputs float16 too")
    p.add_argument("--block-op", action="append", default=[], metavar="OP",
                   help="fp16: keep this op type in float32 (repeatable)")
    p.add_argument("--block-size", type=int, default=128, help="int4: block size")
    p.add_argument("--int4-asymmetric", action="store_true")
    add_data_args(p, "--calib", "calibration data: .npz, a folder of .npy/.npz/test_data_set_*, "
                  "a folder of images, or synthetic[:N[:SEED]]")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--json", metavar="REPORT")
    p.add_argument("--timeout", type=float)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the recipe and run it."""
    recipe = QuantRecipe(
        model=args.model, output=args.output, overwrite=args.overwrite, mode=args.mode,
        activation_type=args.activation_type, weight_type=args.weight_type,
        per_channel=args.per_channel, reduce_range=args.reduce_range,
        activation_symmetric=args.activation_symmetric,
        weight_symmetric=not args.weight_asymmetric, calib_method=args.calib_method,
        percentile=args.percentile, op_types=tuple(args.op_type), exclude=tuple(args.exclude),
        preprocess=not args.no_preprocess,
        calib=data_source(args, args.calib) if args.calib else None,  # type: ignore[arg-type]
        keep_io_types=not args.fp16_io, op_block_list=tuple(args.block_op),
        block_size=args.block_size, int4_symmetric=not args.int4_asymmetric,
    )
    return execute(recipe, args)
