"""The PyTorch export job's recipe: which file, which example inputs, which axes are dynamic."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.job_api.command import positional, spelled
from edgestudio.core.job_api.options import option
from edgestudio.core.job_api.recipe import Recipe, Tolerance, tolerance_field


@dataclass(frozen=True)
class TorchInput:
    """One example input of a PyTorch model: name, shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"

    def to_cli(self) -> str:
        """``NAME=DIMxDIM[:DTYPE]``."""
        text = f"{self.name}={'x'.join(str(d) for d in self.shape)}"
        return text if self.dtype == "float32" else f"{text}:{self.dtype}"


def torch_missing_hint() -> str:
    """What to do when PyTorch cannot be imported, for this kind of installation."""
    if getattr(sys, "frozen", False):
        return (
            "This packaged EdgeStudio leaves PyTorch out (it is about 1 GB). To export "
            "PyTorch models, install EdgeStudio with pip: pip install 'edgestudio[torch]' "
            "(PyTorch's CPU build avoids a multi-GB download)."
        )
    return (
        "PyTorch is not installed in this environment: pip install 'edgestudio[torch]' "
        "(PyTorch's CPU build avoids a multi-GB download)."
    )


@dataclass(frozen=True)
class Export:
    """What an export did: the file it read, the exporter that wrote the model (a
    TorchScript file takes the legacy one) and the opset the model has."""

    source: str
    exporter: str
    opset: int | None


@dataclass(frozen=True)
class ExportRecipe(Recipe["Export"]):
    """Export a PyTorch ExportedProgram (.pt2) or TorchScript (.pt) file to ONNX."""

    kind: ClassVar[str] = "export"
    model: str = positional(help="a .pt2 or .pt file")
    inputs: tuple[TorchInput, ...] = spelled((), "--input", show=TorchInput.to_cli, each=True)
    # Declared once: the CLI flags, the export form's fields and the command follow.
    output_names: tuple[str, ...] = option(
        (),
        "--output-name",
        "ONNX output name, in order",
        metavar="NAME",
        label="Output names:",
        placeholder="comma-separated, e.g. logits",
    )
    opset: int = option(
        18,
        "--opset",
        "the ONNX opset to export to",
        label="Opset:",
        minimum=7,
        maximum=28,
        always=True,
    )
    dynamic: tuple[DimChange, ...] = spelled((), "--dynamic", show=DimChange.to_cli, each=True)
    exporter: str = option(
        "dynamo",
        "--exporter",
        "dynamo (torch.export) or legacy (TorchScript tracing)",
        ("dynamo", "legacy"),
        label="Exporter:",
    )
    tolerance: Tolerance = tolerance_field()

    def title(self) -> str:
        """Describe the export."""
        return f"Export from PyTorch ({self.exporter}, opset {self.opset})"

    def input_paths(self) -> list[str]:
        """The PyTorch file."""
        return [self.model]

    @classmethod
    def result_type(cls) -> type[Export]:
        """What the export did."""
        return Export
