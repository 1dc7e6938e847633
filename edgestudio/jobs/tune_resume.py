"""Resuming a tune: the candidates an earlier tune of the same model measured, on the same
provider and threads, taken as they were when the search reaches the same recipe."""

from __future__ import annotations

from typing import Any

from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.tune import TuneSettings
from edgestudio.core.quant.tune_ladder import recipe_key
from edgestudio.jobs.kinds import recipe_from_dict


def earlier_candidates(
    settings: TuneSettings,
    model_hash: str,
) -> tuple[dict[str, dict[str, Any]], str]:
    """The measured candidates of ``settings.resume`` by recipe (:func:`recipe_key`), and what
    was taken from it, in a line (why nothing, when nothing)."""
    earlier = settings.resume
    if not earlier:
        return {}, ""
    if earlier.get("model_hash") != model_hash:
        return {}, "Nothing resumed: the earlier tune was of another model (or another version)."
    if (earlier.get("provider"), earlier.get("threads")) != (settings.provider, settings.threads):
        return {}, (
            f"Nothing resumed: the earlier tune timed on {earlier.get('provider')} with "
            f"{earlier.get('threads')} thread(s)."
        )
    found = {}
    for summary in earlier.get("candidates", []):
        data = summary.get("recipe")
        if summary.get("state") == "done" and data and summary.get("analysis"):
            recipe = recipe_from_dict(data)
            if isinstance(recipe, QuantRecipe):
                found[recipe_key(recipe)] = summary
    return found, (
        f"Resuming: {len(found)} recipe(s) measured by the earlier tune are taken as "
        "they were when the search reaches the same recipe (not counted in the budget)."
    )
