"""The winner re-judged before it is crowned: on the data split the other way round, and
calibrated on ¼ and ½ of its samples, with the advice on calibration size that follows."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from edgestudio.core.quant.tune import Candidate, TuneSettings
from edgestudio.core.quant.tune_goal import Goal, show_value


@dataclass
class WinnerCheck:
    """One re-judgement of a winner: on the data split the other way round (calibration and
    evaluation swapped), or calibrated on fewer of its samples (the calibration curve)."""

    candidate: int  # the candidate's number
    kind: str  # "swapped" | "calibration"
    label: str  # for a person: "calibration and evaluation swapped", "¼ of the calibration"
    calibration_samples: int = 0  # how many samples calibrated it (0: not calibrated)
    goal_value: float | None = None
    met: bool = False
    state: str = "pending"  # pending, running, done, failed
    error: str = ""


CURVE_FRACTIONS = ((4, "¼"), (2, "½"))  # the calibration curve's points below "all"


def swapped_split(settings: TuneSettings) -> tuple[Any, Any, str] | None:
    """The data split the other way round: what judged now calibrates and what calibrated now
    judges (None on synthetic data, where both are the same draw)."""
    data = settings.data
    if getattr(data, "kind", "") == "synthetic":
        return None
    if settings.calib is not None:
        return data, settings.calib, "calibration and evaluation data swapped"
    return (
        dataclasses.replace(data, part="odd"),
        dataclasses.replace(data, part="even"),
        "odd-numbered samples calibrate, even-numbered ones judge (the split swapped)",
    )


def calibration_subset(source: Any, count: int) -> Any:
    """``source`` cut to its first ``count`` samples, as the tune calibrates on it: every other
    sample of the first ``2·count`` when it is one half of a split."""
    part = getattr(source, "part", "")
    cap = 2 * count - 1 if part == "even" else 2 * count if part == "odd" else count
    return dataclasses.replace(source, samples=cap)


def curve_points(samples: int) -> list[tuple[int, str]]:
    """The calibration curve's smaller sizes for a winner calibrated on ``samples``: ¼ and ½
    of them (each at least 1 and below the whole)."""
    points: list[tuple[int, str]] = []
    for divisor, word in CURVE_FRACTIONS:
        count = max(1, samples // divisor)
        if count < samples and count not in (c for c, _ in points):
            points.append((count, word))
    return points


def calibration_advice(
    points: list[tuple[int, float | None]], goal: Goal, unit: str = "samples"
) -> str:
    """What the calibration curve says, in words: ``16 lines: 71 %; 8 lines: 54 % — more
    calibration data should help`` (``points``: calibration size → the goal's figure)."""
    known = sorted((n, v) for n, v in points if v is not None)
    if len(known) < 2:
        return ""
    said = "; ".join(f"{n} {unit}: {show_value(goal, v)}" for n, v in reversed(known))
    (n_small, v_small), (n_last, v_last), (n_all, v_all) = known[0], known[-2], known[-1]

    def gain(a: float, b: float) -> float:
        return (b - a) if goal.higher_is_better else (a - b)

    # a figure's resolution: one sample of the evaluation, or a decibel, or a point
    step = 1.0 if goal.metric in ("sqnr", "top1_drop") else 0.01
    if gain(v_last, v_all) > step:
        verdict = "more calibration data should help"
    elif gain(v_small, v_all) > step:
        verdict = (
            f"it gained from {n_small} to {n_last} and levels off by {n_all}: more data of "
            "the same kind is likely to help little; other kinds of sample may"
        )
    elif gain(v_small, v_all) < -step:
        verdict = "fewer samples did better: the calibration data may not match what judges"
    else:
        verdict = (
            f"flat from {n_small} to {n_all}: more calibration data of the same kind is "
            "unlikely to help"
        )
    return f"{said} — {verdict}"


def fold_text(candidate: Candidate, check: WinnerCheck, goal: Goal) -> str:
    """The winner on the other split, and whether it holds there."""
    if check.state == "failed":
        return f"#{candidate.number} with the split swapped could not be checked: {check.error}"
    spread = (
        abs(candidate.goal_value - check.goal_value)
        if candidate.goal_value is not None and check.goal_value is not None
        else None
    )
    shown = (
        f"{show_value(goal, candidate.goal_value)} as judged, "
        f"{show_value(goal, check.goal_value)} with the split swapped"
    )
    if spread is not None:
        spread_text = (
            f"{spread:.1f} dB"
            if goal.metric == "sqnr"
            else f"{spread:.2f} points"
            if goal.metric == "top1_drop"
            else f"{100 * spread:.1f} points"
            if goal.metric not in ("cosine", "max_abs", "next_token_kl")
            else f"{spread:.3g}"
        )
        shown += f" (spread {spread_text})"
    if candidate.met and not check.met:
        return f"#{candidate.number}: {shown} — it meets the goal on one split only: not crowned."
    if candidate.met:
        return f"#{candidate.number}: {shown} — it holds on both splits."
    return f"#{candidate.number}: {shown}."
