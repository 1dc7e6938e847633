"""One grammar for what users type (shapes, ranges, image sizes, counts), checked where it is
entered and worded for every surface: no command-line flag in a core message."""

from __future__ import annotations

import pytest

from edgestudio.core.inputs.grammar import (
    GrammarError,
    InputOverrides,
    parse_counts,
    parse_image_size,
    parse_named_range,
    parse_named_shape,
    parse_shape,
)
from edgestudio.core.inputs.input_spec import Domain, InputSpecError


def test_shapes_ranges_sizes_and_counts_parse() -> None:
    assert parse_named_shape("image=1x3x224x224") == ("image", (1, 3, 224, 224))
    assert parse_named_shape("sr=scalar") == ("sr", ())
    assert parse_named_shape("past_key=1x4x0x64") == ("past_key", (1, 4, 0, 64))  # empty cache
    assert parse_named_shape("a=b=2x3") == ("a=b", (2, 3))  # the last '=' separates
    assert parse_named_range("ids=0:30522") == ("ids", Domain("range", 0, 30522))
    assert parse_named_range("sr=16000,8000") == ("sr", Domain("values", values=(16000, 8000)))
    assert parse_named_range("mask=ones") == ("mask", Domain("ones"))
    assert parse_image_size("224x160") == (224, 160)
    assert parse_counts("1, 2,4") == (1, 2, 4)
    assert parse_shape("2x8") == (2, 8)
    overrides = InputOverrides(("image=1x3x8x8",), ("ids=0:9",))
    assert overrides.parsed_shapes() == {"image": (1, 3, 8, 8)}
    assert overrides.parsed_ranges() == {"ids": Domain("range", 0, 9)}


@pytest.mark.parametrize(
    ("parse", "text", "says"),
    [
        (parse_named_shape, "1x3x224x224", "NAME=DIMxDIM"),
        (parse_named_shape, "image=1xQ", "image: a shape is written DIMxDIM"),
        (parse_named_shape, "image=1x-2", "≥ 0"),
        (parse_named_range, "ids=9:3", "ids: HIGH must be above LOW"),
        (parse_named_range, "ids=lots", "ids: expected LOW:HIGH"),
        (parse_named_range, "0:9", "NAME=LOW:HIGH"),
        (parse_image_size, "224", "HxW"),
        (parse_image_size, "0x224", "≥ 1"),
        (parse_counts, "1,two", "whole numbers"),
        (parse_counts, "0", "≥ 1"),
        (parse_shape, "1x0", "≥ 1"),
    ],
)
def test_mistakes_say_the_form_without_naming_a_flag(parse, text: str, says: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(GrammarError) as caught:
        parse(text)
    message = str(caught.value)
    assert says in message and "--" not in message
    # the command line catches ValueError, jobs catch InputSpecError: a grammar error is both
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, InputSpecError)


def test_overrides_fail_with_the_entry_that_is_wrong() -> None:
    with pytest.raises(InputSpecError, match="image: a shape is written"):
        InputOverrides(("image=1x?",)).parsed_shapes()
