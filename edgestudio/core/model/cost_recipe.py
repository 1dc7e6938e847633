"""The cost-counting job's recipe (kept apart from the counting, which needs onnx: the CLI
and the job registry import recipes to parse and rebuild them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from edgestudio.core.job_api.recipe import Recipe


@dataclass(frozen=True)
class CostRecipe(Recipe):
    """Count every node's cost at the model's input specification (``edgestudio inspect
    MODEL --cost``): sizes from the graph, tried until the model runs, or ``shapes``."""

    kind: ClassVar[str] = "cost"
    model: str = ""
    shapes: tuple[str, ...] = ()
    ranges: tuple[str, ...] = ()

    def title(self) -> str:
        """Name the job."""
        return "Count MACs and memory"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    def to_command(self) -> list[str]:
        """``edgestudio inspect MODEL --cost --json``."""
        from edgestudio.core.inputs.inputs_recipe import input_args

        return ["edgestudio", "inspect", self.model, "--cost", "--json",
                *input_args(self.shapes, self.ranges, None)]
