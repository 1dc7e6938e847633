"""A tuner over a copy of the digits sample and its evaluation data, for tests that drive the
search's choices by hand (its candidates set, its next recipe asked for)."""

from __future__ import annotations

import shutil
from pathlib import Path

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.tune import TuneSettings
from edgestudio.core.quant.tune_goal import Goal
from edgestudio.jobs.tuner import Tuner
from edgestudio.resources import SAMPLE_EVALUATION, SAMPLE_MODEL


def sample_tuner(folder: Path, goal: str, budget: int) -> Tuner:
    """A tuner of the sample copied into ``folder`` (nothing started), aiming at ``goal``."""
    for f in (SAMPLE_MODEL, SAMPLE_EVALUATION):
        shutil.copy(f, folder / f.name)
    return Tuner(
        TuneSettings(
            model=str(folder / SAMPLE_MODEL.name),
            data=DataSource("npz", str(folder / SAMPLE_EVALUATION.name)),
            goal=Goal.parse(goal),
            budget=budget,
        )
    )
