"""Every tensor's type and shape for display: the shape-inference job's recipe and result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from edgestudio.core.job_api.recipe import Recipe

if TYPE_CHECKING:
    from edgestudio.core.job_api.report import JobReport


@dataclass(frozen=True)
class ShapesRecipe(Recipe):
    """Infer every tensor's type and shape for display (``edgestudio inspect --shapes``)."""

    kind: ClassVar[str] = "shapes"
    model: str = ""

    def title(self) -> str:
        """Name the job."""
        return "Infer shapes"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    def to_command(self) -> list[str]:
        """``edgestudio inspect MODEL --shapes --json``."""
        return ["edgestudio", "inspect", self.model, "--shapes", "--json"]

    def read_result(self, report: JobReport) -> TensorShapes:
        """Every tensor's ``(dtype, shape)``."""
        shapes = report.details.get("shapes", {})
        return {name: (str(dtype), shape) for name, (dtype, shape) in shapes.items()}


TensorShapes = dict[str, tuple[str, list[int | str | None] | None]]
