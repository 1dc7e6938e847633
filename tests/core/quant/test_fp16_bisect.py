"""Finding the operator types an fp16 result must keep in float32, by trying (QuickXplain)."""

from __future__ import annotations

import pytest

from edgestudio.core.quant.fp16_bisect import float32_types_needed

TYPES = tuple(f"Op{i}" for i in range(20))


@pytest.mark.parametrize("needed", [{"Op3"}, {"Op3", "Op17"}, {"Op0", "Op5", "Op9"}, set(TYPES)])
def test_the_set_found_is_exactly_what_the_crash_needs(needed: set[str]) -> None:
    tried: list[tuple[str, ...]] = []

    def runs(kept: tuple[str, ...]) -> bool:
        tried.append(kept)
        return needed <= set(kept)

    found = float32_types_needed(TYPES, runs, budget=200)
    assert set(found.kept or ()) == needed and not found.exhausted
    assert found.tries == len(tried)
    if len(needed) <= 3:  # about k·log2(n/k) tries, not n
        assert found.tries <= 1 + 2 * len(needed) * 5


def test_nothing_runs_even_keeping_everything() -> None:
    found = float32_types_needed(TYPES, lambda kept: False)
    assert found.kept is None and found.tries == 1


def test_a_spent_budget_keeps_everything_and_says_so() -> None:
    found = float32_types_needed(TYPES, lambda kept: {"Op1", "Op2", "Op3"} <= set(kept), budget=4)
    assert found.kept == TYPES and found.exhausted and found.tries == 4
