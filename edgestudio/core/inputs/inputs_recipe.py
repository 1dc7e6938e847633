"""The inputs job's recipe and result, and the ``--shape``/``--range``/``--data`` arguments that
every job feeding a model shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.serialise import from_json


def input_args(
    shapes: tuple[str, ...], ranges: tuple[str, ...], data: DataSource | None
) -> list[str]:
    """The ``--shape``/``--range``/``--data`` arguments of a job that feeds a model."""
    args: list[str] = []
    for s in shapes:
        args += ["--shape", s]
    for r in ranges:
        args += ["--range", r]
    if data is not None:
        args += ["--data", *data.to_cli()]
    return args


@dataclass(frozen=True)
class InputsRecipe(Recipe):
    """Find the model's input specification: derived from the graph, tried until it runs."""

    kind: ClassVar[str] = "inputs"
    model: str = ""
    shapes: tuple[str, ...] = ()
    ranges: tuple[str, ...] = ()
    data: DataSource | None = None

    def title(self) -> str:
        """Name the job."""
        return f"Find inputs: {self.model.rsplit('/', 1)[-1]}"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    def to_command(self) -> list[str]:
        """``edgestudio inputs MODEL [--shape …] [--range …] [--data …]``."""
        return [
            "edgestudio",
            "inputs",
            self.model,
            *input_args(self.shapes, self.ranges, self.data),
        ]

    def read_result(self, report: JobReport) -> InputSpecification:
        """The specification the model runs on."""
        return from_json(InputSpecification, report.details["spec"])
