"""The recipes a tune tries, rung by rung: the first sensible recipes, then exclusions or
16-bit layers guided by per-layer SQNR, what helped combined, adaptive rounding, and the
near-lossless 16-bit recipes before a goal is called out of reach. Pure logic: the tuner runs
the candidates as jobs."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from typing import Any

from edgestudio.core.quant.quant_recipes import QUANT_MODES, QuantRecipe
from edgestudio.core.quant.quant_rules import check_rules
from edgestudio.core.quant.tune import Candidate, SearchSpace
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.core.serialise import to_json


def recipe_key(recipe: QuantRecipe) -> str:
    """A recipe's identity in a tune: every choice except where its model is written."""
    data = to_json(recipe)
    for name in ("output", "overwrite"):
        data.pop(name, None)
    return json.dumps(data, sort_keys=True, default=str)


def first_recipes(
    base: QuantRecipe, space: SearchSpace, has_matmul: bool, opset: int | None
) -> list[tuple[QuantRecipe, str]]:
    """The sensible recipes to try first, most likely good and fast first; ones that break
    onnxruntime's rules are left out."""
    tries: list[tuple[dict[str, Any], str]] = []
    if "qdq" in space.modes:
        tries.append(({"mode": "qdq"}, "static QDQ defaults"))
        if True in space.per_channel:
            # by the gain measured on real models (README: keeping integer)
            tries.append(({"mode": "qdq", "per_channel": True}, "per-channel weights"))
            if "uint16" in space.activation_types:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "activation_type": "uint16"},
                        "16-bit activations (A16W8): accuracy first",
                    )
                )
            for placement in space.placements:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "placement": placement},
                        f"per-channel, quantizers on {placement.replace('-', ' ')} only",
                    )
                )
            tries.append(
                (
                    {"mode": "qdq", "per_channel": True, "adaptive_rounding": True},
                    "per-channel, Conv/MatMul/Gemm weights rounded adaptively (GPTQ)",
                )
            )
            if has_matmul and "compute-inputs" in space.placements:
                tries.append(
                    (
                        {
                            "mode": "qdq",
                            "per_channel": True,
                            "placement": "compute-inputs",
                            "smooth_quant": 0.5,
                        },
                        "per-channel, compute inputs, SmoothQuant α=0.5 (activation "
                        "outliers moved into the MatMul weights)",
                    )
                )
            if True in space.reduce_range:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "reduce_range": True},
                        "per-channel, reduce-range (no saturation without VNNI)",
                    )
                )
            if "percentile" in space.calib_methods:
                tries.append(
                    (
                        {"mode": "qdq", "per_channel": True, "calib_method": "percentile"},
                        "per-channel, percentile calibration (outliers clipped)",
                    )
                )
    if "dynamic" in space.modes:
        # First on MatMul-heavy models, where it is the likeliest; on the others it still
        # comes before any escalation: when static quantization fails on an onnxruntime
        # error, dynamic is the family that may still run (an audio transcriber's did).
        dynamic: list[tuple[dict[str, Any], str]] = [
            ({"mode": "dynamic"}, "dynamic (activations quantized per run)")
        ]
        if True in space.per_channel:
            dynamic.append(({"mode": "dynamic", "per_channel": True}, "dynamic, per-channel"))
        tries = dynamic + tries if has_matmul else tries + dynamic
    out = []
    for changes, why in tries:
        recipe = dataclasses.replace(base, **changes)
        if not QUANT_MODES[recipe.mode].calibrated:
            recipe = dataclasses.replace(recipe, calib=None)
        if check_rules(recipe, opset).ok:
            out.append((recipe, why))
    return out


def exclusion_step(
    best: Candidate, goal: Goal, tried: set[tuple[str, ...]], step: int
) -> tuple[QuantRecipe, str] | None:
    """The next exclusion to try from the closest candidate: its worst layers, doubling in
    number at each step (1, 2, 4, …) until one meets the goal."""
    if best.analysis is None:
        return None
    count = 2**step
    worst = best.analysis.worst_excludable(count, best.recipe.exclude)
    if not worst:
        return None
    exclude = tuple(sorted({*best.recipe.exclude, *worst}))
    if exclude in tried:
        return None
    tried.add(exclude)
    return (
        dataclasses.replace(best.recipe, exclude=exclude),
        f"#{best.number} without its {len(worst)} worst layer(s): {', '.join(worst[:3])}"
        + ("…" if len(worst) > 3 else ""),
    )


# One change from the per-channel recipe that may help, and how to spell it in a combination.
_COMBINABLE = ("placement", "calib_method", "smooth_quant", "reduce_range")


def combined_step(
    candidates: list[Candidate], goal: Goal, tried: set[tuple[str, ...]], wide: bool
) -> tuple[QuantRecipe, str] | None:
    """What helped, together: the single changes that brought an 8-bit per-channel QDQ recipe
    closer to the goal than plain per-channel (a placement, a calibration, SmoothQuant), taken
    all at once, with 16-bit activations when 16 bits are allowed and they helped too (or
    nothing else did). None when there is nothing to combine."""
    done = [c for c in candidates if c.state == "done" and c.goal_value is not None]
    plain = next(
        (
            c
            for c in done
            if c.recipe.mode == "qdq"
            and c.recipe.per_channel
            and not any(_changed(c.recipe, k) for k in _COMBINABLE)
            and c.recipe.activation_type in ("uint8", "int8")
            and not (c.recipe.int16 or c.recipe.adaptive_rounding)
        ),
        None,
    )
    if plain is None:
        return None
    changes: dict[str, Any] = {}
    helped: list[str] = []
    for c in done:
        r = c.recipe
        if (
            r.mode != "qdq"
            or not r.per_channel
            or r.int16
            or not goal.better(c.goal_value, plain.goal_value)
        ):
            continue
        for key in _COMBINABLE:
            if _changed(r, key) and key not in changes:
                changes[key] = getattr(r, key)
                helped.append(f"#{c.number}")
        if r.activation_type in ("uint16", "int16") and "activation_type" not in changes:
            changes["activation_type"] = r.activation_type
            helped.append(f"#{c.number}")
    if wide:
        changes.setdefault("activation_type", "uint16")
    if len(changes) < 2:  # one change alone was tried already
        return None
    recipe = dataclasses.replace(plain.recipe, **changes)
    identity = ("combined", recipe_key(recipe))
    if identity in tried:
        return None
    tried.add(identity)
    said = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in changes.items())
    return recipe, f"what helped, together ({said}; from {', '.join(helped) or 'A16'})"


def near_lossless_step(
    best: Candidate | None,
    base: QuantRecipe,
    tried: set[tuple[str, ...]],
    opset: int | None,
    per_channel: bool = True,
) -> tuple[QuantRecipe, str] | None:
    """The last integer rung before "out of reach": 16-bit activations and 16-bit weights per
    channel (A16W16). On hidden text lines it read 100 % where every 8-bit-weight recipe, and
    16-bit layers added one by one, stopped at 71 % (DESIGN.md part 7)."""
    start = best.recipe if best is not None and best.recipe.mode == "qdq" else base
    recipe = dataclasses.replace(
        start,
        mode="qdq",
        per_channel=per_channel,
        activation_type="uint16",
        weight_type="int16",
        int16=(),
        adaptive_rounding=False,
    )
    key = ("a16w16", recipe_key(recipe))
    if key in tried or not check_rules(recipe, opset).ok:
        return None
    tried.add(key)
    how = " per channel" if per_channel else ""
    return recipe, f"16-bit activations and weights{how} (A16W16): near-lossless integer"


def _changed(recipe: QuantRecipe, key: str) -> bool:
    """True when ``recipe`` sets ``key`` away from QuantRecipe's default."""
    declared = next(f for f in dataclasses.fields(QuantRecipe) if f.name == key)
    # every combinable field has a plain default (a value, not a factory)
    return bool(getattr(recipe, key) != declared.default)


def int16_step_applies(recipe: QuantRecipe) -> bool:
    """Whether :func:`int16_step` can widen ``recipe``: an 8-bit QDQ one."""
    return recipe.mode == "qdq" and recipe.activation_type in ("uint8", "int8")


ROUNDED_CLOSEST = 2  # how many of the closest 8-bit recipes are tried again, rounded adaptively


def rounding_step(
    candidates: list[Candidate], goal: Goal, tried: set[tuple[str, ...]]
) -> tuple[QuantRecipe, str] | None:
    """One of the closest 8-bit QDQ recipes again, its Conv/MatMul/Gemm weights rounded
    adaptively (GPTQ) where it rounded them to nearest: the slower pass, tried last, on the
    placements and calibrations that came closest. PP-OCRv5 rec on 40 held-out lines:
    per-channel with quantizers on compute inputs read 97.5 % of the lines like float, rounded
    adaptively 100 % (with SmoothQuant, 97.5 % either way: so the closest two are tried)."""
    # rounded to nearest, 8-bit everywhere: a rounded candidate is a try, not a base
    eight_bit = [
        c
        for c in candidates
        if c.state == "done"
        and c.goal_value is not None
        and int16_step_applies(c.recipe)
        and not c.recipe.adaptive_rounding
        and not c.recipe.int16
    ]

    def closer(a: Candidate, b: Candidate) -> int:
        return (
            -1
            if goal.better(a.goal_value, b.goal_value)
            else int(goal.better(b.goal_value, a.goal_value))
        )

    for best in sorted(eight_bit, key=functools.cmp_to_key(closer))[:ROUNDED_CLOSEST]:
        recipe = best.recipe
        key = ("adaptive-rounding", recipe_key(recipe))
        if key in tried:
            continue
        tried.add(key)
        return (
            dataclasses.replace(recipe, adaptive_rounding=True),
            f"#{best.number} with its weights rounded adaptively (GPTQ)",
        )
    return None


def int16_step(
    best: Candidate, tried: set[tuple[str, ...]], step: int
) -> tuple[QuantRecipe, str] | None:
    """The next mixed-precision try from the closest 8-bit QDQ candidate: its worst layers in
    16-bit (the rest 8-bit, nothing in float), doubling in number at each step."""
    recipe = best.recipe
    if best.analysis is None or not int16_step_applies(recipe):
        return None
    worst = best.analysis.worst_excludable(2**step, (*recipe.exclude, *recipe.int16))
    if not worst:
        return None
    wide = tuple(sorted({*recipe.int16, *worst}))
    if ("int16", *wide) in tried:
        return None
    tried.add(("int16", *wide))
    return (
        dataclasses.replace(recipe, int16=wide),
        f"#{best.number} with its {len(worst)} worst layer(s) in 16-bit: "
        f"{', '.join(worst[:3])}" + ("…" if len(worst) > 3 else ""),
    )


def failure_cause(error: str) -> str:
    """What a failure says with its numbers, paths and quoted names taken out: two candidates
    with the same cause fail for the same reason."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|/\S+|\d+(\.\d+)?", "_", error)
    return re.sub(r"\s+", " ", text).strip()[:300]
