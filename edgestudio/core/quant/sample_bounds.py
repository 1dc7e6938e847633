"""What a share of agreeing decisions measured on a few samples can show: the exact one-sided
(Clopper–Pearson) lower bound on the share of samples *like these* that agree, and how many
samples would be needed to show a goal.

Why: a recogniser that reads all 24 judged lines like float meets "≥ 99 % of lines" on those 24,
yet only ≥ 88 % of lines like them is shown with 95 % confidence — and a fresh split of the same
data read 97.5 %. The tune and the verdict say so, with the number of samples that would show
the goal. Pure math (no numpy, no scipy).
"""

from __future__ import annotations

import math

CONFIDENCE = 0.95


def _at_least(agree: int, n: int, p: float) -> float:
    """P(X ≥ agree) for X ~ Binomial(n, p), summed in log space (n up to many thousands)."""
    if agree <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    lg = math.lgamma
    total = 0.0
    for k in range(agree, n + 1):
        total += math.exp(lg(n + 1) - lg(k + 1) - lg(n - k + 1) + k * log_p + (n - k) * log_q)
    return min(1.0, total)


def lower_bound(agree: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The share ``p`` of agreeing samples that ``agree`` of ``n`` shows with ``confidence``:
    the smallest ``p`` under which seeing at least ``agree`` is still as likely as
    ``1 - confidence`` (all agree: ``(1 - confidence) ** (1 / n)``)."""
    if n <= 0 or agree <= 0:
        return 0.0
    alpha = 1.0 - confidence
    if agree >= n:
        return float(alpha ** (1.0 / n))
    low, high = 0.0, agree / n
    for _ in range(60):  # bisection: P(X ≥ agree) grows with p
        mid = (low + high) / 2
        if _at_least(agree, n, mid) < alpha:
            low = mid
        else:
            high = mid
    return low


def samples_to_show(share: float, confidence: float = CONFIDENCE) -> int:
    """How many samples, every one agreeing, show ``share`` with ``confidence``."""
    if share <= 0.0:
        return 1
    if share >= 1.0:
        raise ValueError("no finite number of samples shows a share of 100 %")
    return math.ceil(math.log(1.0 - confidence) / math.log(share))


def evidence_text(value: float, count: int, goal: float, unit: str = "samples") -> str:
    """``value`` of ``count`` samples agreeing, against ``goal``, in a sentence ("" when there
    is nothing to say: no count, a share already short of the goal — its figure says so —, or
    samples that already show the goal). Kept to shares that meet the goal, the bound sums at
    most the few disagreeing terms: cheap enough for the window's thread."""
    if count <= 0 or value < goal:
        return ""
    agree = round(value * count)
    bound = lower_bound(agree, count)
    if bound >= goal:
        return ""
    seen = f"all {count} {unit}" if agree == count else f"{agree} of {count} {unit}"
    each = "all agreeing" if agree == count else "all agreeing (more where some differ)"
    need = (
        f" — showing {100 * goal:g} % takes {samples_to_show(goal):,} {unit}, {each}"
        if goal < 1.0
        else ""
    )
    return (
        f"{seen} agree with float: that shows at least {100 * bound:.1f} % of {unit} like "
        f"them would ({100 * CONFIDENCE:.0f} % confidence){need}"
    )
