"""The inputs job's recipe and result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.job_api.command import given_data, given_ranges, given_shapes, positional
from edgestudio.core.job_api.recipe import Recipe


@dataclass(frozen=True)
class InputsRecipe(Recipe["InputSpecification"]):
    """Find the model's input specification: derived from the graph, tried until it runs."""

    kind: ClassVar[str] = "inputs"
    model: str = positional(help="the .onnx model")
    shapes: tuple[str, ...] = given_shapes()
    ranges: tuple[str, ...] = given_ranges()
    data: DataSource | None = given_data()

    def title(self) -> str:
        """Name the job."""
        return f"Find inputs: {self.model.rsplit('/', 1)[-1]}"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    @classmethod
    def result_type(cls) -> type[InputSpecification]:
        """The specification the model runs on."""
        return InputSpecification
