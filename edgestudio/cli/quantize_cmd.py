"""``edgestudio quantize``: every onnxruntime quantization mode from the command line."""

from __future__ import annotations

import argparse

from edgestudio.cli.job_ui import add_data_args, add_input_args, data_source, execute, input_fields
from edgestudio.core.quant_recipes import CALIB_METHODS, MODES, QUANT_TYPES, QuantRecipe


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
                  "a folder of images, or synthetic[:N[:SEED]] (drawn from the input "
                  "specification)")
    add_input_args(p)
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
        shapes=input_fields(args)["shapes"], ranges=input_fields(args)["ranges"],
    )
    return execute(recipe, args)
