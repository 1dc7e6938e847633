"""Every tensor's type and shape for display: the shape-inference job's recipe and result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from edgestudio.core.job_api.command import positional
from edgestudio.core.job_api.recipe import Recipe

if TYPE_CHECKING:
    from edgestudio.core.job_api.report import JobReport


@dataclass(frozen=True)
class ShapesRecipe(Recipe):
    """Infer every tensor's type and shape for display (``edgestudio inspect --shapes``)."""

    kind: ClassVar[str] = "shapes"
    command: ClassVar[tuple[str, ...]] = ("inspect",)
    command_flags: ClassVar[tuple[str, ...]] = ("--shapes", "--json")
    model: str = positional()

    def title(self) -> str:
        """Name the job."""
        return "Infer shapes"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    def read_result(self, report: JobReport) -> TensorShapes:
        """Every tensor's ``(dtype, shape)``."""
        shapes = report.details.get("shapes", {})
        return {name: (str(dtype), shape) for name, (dtype, shape) in shapes.items()}


TensorShapes = dict[str, tuple[str, list[int | str | None] | None]]
