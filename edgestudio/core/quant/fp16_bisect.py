"""Finding which operator types must stay float32 for an fp16 result onnxruntime crashes on.

A crash names nothing (a BiGRU tagger, an unrolled segmenter: onnxruntime dies opening their
float16 forms), so the types kept in float32 are found by trying, each try in a child process:
first all of them (if even that crashes, nothing will run), then halves (QuickXplain). The set
found is minimal: keeping any one type of it fewer crashes again (unless the try budget ran out
first, which the result says).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_TRIES = 24


@dataclass(frozen=True)
class Bisection:
    """The types to keep in float32 (None: even keeping every one crashes), and the tries."""

    kept: tuple[str, ...] | None
    tries: int
    exhausted: bool = False  # the budget ran out before the set was minimal


class _OutOfTriesError(Exception):
    """The try budget is spent."""


def float32_types_needed(
    types: Sequence[str], runs: Callable[[tuple[str, ...]], bool], budget: int = MAX_TRIES
) -> Bisection:
    """A minimal subset of ``types`` whose keeping in float32 makes the result run
    (``runs(kept)`` converts, keeping ``kept`` in float32, and tries it). Keeping more in
    float32 is taken to never make things worse, so Junker's QuickXplain finds the set in about
    k·log(n/k) tries for k needed types of n."""
    tries = 0

    def ok(kept: tuple[str, ...]) -> bool:
        nonlocal tries
        if tries >= budget:
            raise _OutOfTriesError
        tries += 1
        return runs(kept)

    def needed(
        base: tuple[str, ...], base_changed: bool, candidates: tuple[str, ...]
    ) -> tuple[str, ...]:
        if base_changed and ok(base):
            return ()
        if len(candidates) == 1:
            return candidates
        first, second = candidates[: len(candidates) // 2], candidates[len(candidates) // 2 :]
        from_second = needed(base + first, True, second)
        from_first = needed(base + from_second, bool(from_second), first)
        return from_first + from_second

    everything = tuple(types)
    try:
        if not everything or not ok(everything):
            return Bisection(None, tries)
        kept = set(needed((), False, everything))
        return Bisection(tuple(t for t in everything if t in kept), tries)
    except _OutOfTriesError:
        return Bisection(everything, tries, exhausted=True)
