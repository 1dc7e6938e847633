"""Every tensor's type and shape for display: the shape-inference job's recipe and result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgestudio.core.job_api.command import positional
from edgestudio.core.job_api.recipe import Recipe


@dataclass(frozen=True)
class ShapesRecipe(Recipe["Shapes"]):
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

    @classmethod
    def result_type(cls) -> type[Shapes]:
        """Every tensor's ``(dtype, shape)``."""
        return Shapes


TensorShapes = dict[str, tuple[str, list[int | str | None] | None]]


@dataclass(frozen=True)
class Shapes:
    """Every tensor's ``(dtype, shape)``: the shape-inference job's result."""

    tensors: TensorShapes = field(default_factory=dict)
