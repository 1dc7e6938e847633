"""Fields declared with positional()/spelled() and a help line are parsed from that declaration;
an option given without the value it requires is refused, and the command leaves it out."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.command import positional, spelled
from edgestudio.core.job_api.options import add_options, option, option_argv, values_from_args
from edgestudio.core.job_api.recipe import Recipe


def _pair(text: str) -> tuple[str, ...]:
    if "," not in text:
        raise ValueError("give two names, e.g. a,b")
    return tuple(text.split(","))


@dataclass(frozen=True)
class _Recipe(Recipe):
    models: tuple[str, ...] = positional((), each=True, help="the models")
    level: int = spelled(1, "--level", help="how far")
    names: tuple[str, ...] = spelled((), "--names", parse=_pair, show=",".join, help="two names")
    node: tuple[str, ...] = spelled((), "--node", each=True, help="a node")
    fast: bool = spelled(False, "--fast", help="go fast")
    hidden: str = spelled("", "--hidden")  # no help: its subcommand reads it some other way
    method: str = option("minmax", "--method", "how", ("minmax", "percentile"))
    percentile: float = option(99.0, "--percentile", "which", requires=("method", "percentile"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t", exit_on_error=False)
    add_spelled(parser, _Recipe)
    add_options(parser, _Recipe)
    return parser


def test_spelled_fields_parse_back_from_their_equivalent_command() -> None:
    recipe = _Recipe(
        models=("a.onnx", "b.onnx"), level=3, names=("x", "y"), node=("n1", "n2"), fast=True
    )
    words = recipe.to_command()[2:]  # after "edgestudio" and the kind
    assert "--hidden" not in _parser().format_help()
    args = _parser().parse_args(words)
    assert _Recipe(**spelled_values(args, _Recipe), **values_from_args(args, _Recipe)) == recipe
    assert spelled_values(_parser().parse_args(["m.onnx"]), _Recipe) == {
        "models": ("m.onnx",),
        "level": 1,
        "names": (),
        "node": (),
        "fast": False,
    }


def test_a_value_in_its_own_grammar_is_refused_with_the_flag_named() -> None:
    with pytest.raises(argparse.ArgumentError, match="--names: give two names"):
        _parser().parse_args(["m.onnx", "--names", "x"])


def test_an_option_without_the_value_it_requires_is_refused_and_never_said() -> None:
    args = _parser().parse_args(["m.onnx", "--percentile", "99.9"])
    with pytest.raises(SystemExit, match="--percentile applies only with --method percentile"):
        values_from_args(args, _Recipe)
    given = _parser().parse_args(["m.onnx", "--method", "percentile", "--percentile", "99.9"])
    assert values_from_args(given, _Recipe)["percentile"] == 99.9
    # a recipe holding one (from a form) says only what applies, so its command parses back
    assert "--percentile" not in option_argv(_Recipe(percentile=99.9))
    assert "--percentile" in option_argv(_Recipe(method="percentile", percentile=99.9))
