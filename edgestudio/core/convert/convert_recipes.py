"""The conversion job's recipe: a new opset and/or dims made symbolic or fixed, checked against
the original."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.inputs_recipe import input_args
from edgestudio.core.job_api.options import option, option_argv
from edgestudio.core.job_api.recipe import Recipe, Tolerance, tolerance_args


@dataclass(frozen=True)
class DimChange:
    """Make axis ``axis`` of graph input/output ``tensor`` symbolic (str) or fixed (int)."""

    tensor: str
    axis: int
    value: int | str

    def to_cli(self) -> str:
        """Return the ``--dynamic``/``--static`` argument form of this change."""
        return f"{self.tensor}:{self.axis}={self.value}"


@dataclass(frozen=True)
class ConvertRecipe(Recipe):
    """Convert a model's opset and/or input/output dims, then check it against the original."""

    kind: ClassVar[str] = "convert"
    model: str = ""
    opset: int | None = None
    dims: tuple[DimChange, ...] = ()
    tolerance: Tolerance = field(default_factory=Tolerance)
    shapes: tuple[str, ...] = ()  # the check's inputs: NAME=DIMxDIM (input specification)
    ranges: tuple[str, ...] = ()  # NAME=LOW:HIGH
    data: DataSource | None = None  # real data for the check instead of derived inputs
    fix_output_shapes: bool = option(
        False,
        "--fix-output-shapes",
        "declare the outputs' "
        "shapes as the model really produces them (where the "
        "declaration is wrong)",
        label="Fix wrong output shape declarations",
    )

    def title(self) -> str:
        """Describe the conversion in a few words."""
        parts = []
        if self.opset is not None:
            parts.append(f"opset {self.opset}")
        if self.fix_output_shapes:
            parts.append("output shapes fixed")
        if self.dims:
            parts.append(f"{len(self.dims)} dim change{'s' if len(self.dims) > 1 else ''}")
        return "Convert: " + (", ".join(parts) or "re-save")

    def input_paths(self) -> list[str]:
        """The source model."""
        return [self.model]

    def to_command(self) -> list[str]:
        """``edgestudio convert MODEL -o OUT [--opset N] [--dynamic …] [--static …]``."""
        cmd = ["edgestudio", "convert", self.model, "-o", str(self.output)]
        if self.opset is not None:
            cmd += ["--opset", str(self.opset)]
        for d in self.dims:
            cmd += ["--dynamic" if isinstance(d.value, str) else "--static", d.to_cli()]
        cmd += option_argv(self)
        cmd += input_args(self.shapes, self.ranges, self.data)
        cmd += tolerance_args(self.tolerance)
        if self.overwrite:
            cmd.append("--overwrite")
        return cmd
