"""``edgestudio diff A B``: what differs between two models (the GUI's Compare, as text)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from edgestudio.cli.json_option import add_json_option, write_json
from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.command import positional


@dataclass(frozen=True)
class Comparison:
    """The two models ``diff`` compares (its arguments, declared once)."""

    a: str = positional(help="the first model (e.g. the float original)")
    b: str = positional(help="the second model (e.g. its quantized or converted version)")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``diff``."""
    p = subparsers.add_parser(
        "diff",
        help="list what differs between two models",
        description="Match the nodes of two models (by name, then by op type and tensors) and "
        "list what was inserted (e.g. the Q/DQ pairs of a quantization), fused, removed or "
        "changed (attributes, weights, inputs/outputs, opsets). Exit 0 when they are the same, "
        "1 when they differ.",
    )
    add_spelled(p, Comparison)
    add_json_option(p, "the differences")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compare and print; exit 1 when the models differ."""
    from edgestudio.core.model.diff import diff_models
    from edgestudio.core.serialise import to_json

    try:
        compared = Comparison(**spelled_values(args, Comparison))
        result = diff_models(compared.a, compared.b)
    except (OSError, ValueError) as exc:  # onnx's DecodeError is a ValueError
        raise EdgeStudioError(f"Cannot compare the models: {exc}") from exc
    if args.json:
        write_json(
            args.json,
            {
                "a": result.a,
                "b": result.b,
                "summary": result.summary(),
                "counts": result.counts(),
                "matched": result.matched,
                "differences": to_json(result.differences),
            },
        )
    # the human-readable form (on standard error with --json -)
    from edgestudio.cli.output import print_table

    print(result.summary())
    if result.differences:
        print_table(
            ["change", "what", "details"],
            [[d.change.value, d.kind, d.text] for d in result.differences],
        )
    return 1 if result.differences else 0
