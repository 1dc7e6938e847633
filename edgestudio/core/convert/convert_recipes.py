"""The conversion job's recipe: a new opset and/or dims made symbolic or fixed, checked against
the original."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.job_api.command import (
    given_data,
    given_ranges,
    given_shapes,
    positional,
    spelled,
)
from edgestudio.core.job_api.options import option
from edgestudio.core.job_api.recipe import Recipe, Tolerance, tolerance_field


@dataclass(frozen=True)
class DimChange:
    """Make axis ``axis`` of graph input/output ``tensor`` symbolic (str) or fixed (int)."""

    tensor: str
    axis: int
    value: int | str

    def to_cli(self) -> str:
        """Return the ``--dynamic``/``--static`` argument form of this change."""
        return f"{self.tensor}:{self.axis}={self.value}"

    def words(self) -> list[str]:
        """``--dynamic T:A=NAME`` or ``--static T:A=SIZE``: the change on the command line."""
        return ["--dynamic" if isinstance(self.value, str) else "--static", self.to_cli()]


@dataclass
class Conversion:
    """What a conversion did: the opset and dims the result has, the inputs it was checked on,
    and what was changed beyond what was asked (the batch freed in the graph, float16
    upcast)."""

    source: str
    opset: int | None = None
    dims: dict[str, list[int | str | None]] = field(default_factory=dict)
    inputs: dict[str, Any] | None = None  # the input specification, as JSON
    batch_freed: list[str] = field(default_factory=list)  # each change, in words
    upcast: str = ""  # what upcasting float16 changed, in a sentence


@dataclass(frozen=True)
class ConvertRecipe(Recipe["Conversion"]):
    """Convert a model's opset and/or input/output dims, then check it against the original."""

    kind: ClassVar[str] = "convert"
    model: str = positional(help="the .onnx model (never modified)")
    opset: int | None = spelled(None, "--opset", parse=int, help="target ai.onnx opset")
    dims: tuple[DimChange, ...] = spelled((), show=DimChange.words, each=True)
    tolerance: Tolerance = tolerance_field()
    shapes: tuple[str, ...] = given_shapes()  # the check's inputs (input specification)
    ranges: tuple[str, ...] = given_ranges()
    data: DataSource | None = given_data()  # real data for the check instead of derived inputs
    float32: bool = option(
        False,
        "--float32",
        "upcast a float16 model (weights, constants, computation) to float32, keeping its "
        "interface: what onnxruntime's quantizer needs",
        label="Upcast float16 to float32",
    )
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
        if self.float32:
            parts.append("float16 → float32")
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

    @classmethod
    def result_type(cls) -> type[Conversion]:
        """What the conversion did."""
        return Conversion
