"""Typed, serialisable job recipes: what the GUI's forms edit and the CLI parses.

A recipe is plain data; :func:`~edgestudio.core.recipe_registry.recipe_from_dict` rebuilds it in
the worker. Each recipe knows the
``edgestudio`` command line that runs the same job (``to_command``), which the Jobs panel offers
as "Copy equivalent command".
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.recipe_options import option, option_argv


@dataclass(frozen=True)
class Tolerance:
    """Numeric agreement required between a result and its original (``np.allclose``)."""

    atol: float = 1e-4
    rtol: float = 1e-3


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
class Recipe:
    """Base of every job recipe. ``output`` is where the result goes (None: no file)."""

    kind: ClassVar[str] = ""
    output: str | None = None
    overwrite: bool = False

    def title(self) -> str:
        """A short label for the Jobs panel."""
        return self.kind

    def input_paths(self) -> list[str]:
        """Files the job reads (they are never written)."""
        return []

    def to_command(self) -> list[str]:
        """Return the ``edgestudio …`` argv that runs the same job."""
        return ["edgestudio", self.kind]

    def command_line(self) -> str:
        """Return :meth:`to_command` as one shell-quoted line."""
        return shlex.join(self.to_command())

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict including the ``kind``."""
        return {"kind": self.kind, **asdict(self)}


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
    fix_output_shapes: bool = option(False, "--fix-output-shapes", "declare the outputs' "
                                     "shapes as the model really produces them (where the "
                                     "declaration is wrong)",
                                     label="Fix wrong output shape declarations")

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
        cmd += _tolerance_args(self.tolerance)
        if self.overwrite:
            cmd.append("--overwrite")
        return cmd


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
        return ("This packaged EdgeStudio leaves PyTorch out (it is about 1 GB). To export "
                "PyTorch models, install EdgeStudio with pip: pip install 'edgestudio[torch]' "
                "(PyTorch's CPU build avoids a multi-GB download).")
    return ("PyTorch is not installed in this environment: pip install 'edgestudio[torch]' "
            "(PyTorch's CPU build avoids a multi-GB download).")


@dataclass(frozen=True)
class ExportRecipe(Recipe):
    """Export a PyTorch ExportedProgram (.pt2) or TorchScript (.pt) file to ONNX."""

    kind: ClassVar[str] = "export"
    model: str = ""
    inputs: tuple[TorchInput, ...] = ()
    output_names: tuple[str, ...] = ()
    opset: int = 18
    dynamic: tuple[DimChange, ...] = ()
    exporter: str = "dynamo"  # or "legacy" (TorchScript-based)
    tolerance: Tolerance = field(default_factory=Tolerance)

    def title(self) -> str:
        """Describe the export."""
        return f"Export from PyTorch ({self.exporter}, opset {self.opset})"

    def input_paths(self) -> list[str]:
        """The PyTorch file."""
        return [self.model]

    def to_command(self) -> list[str]:
        """``edgestudio export MODEL -o OUT --input … [--output …] [--dynamic …]``."""
        cmd = ["edgestudio", "export", self.model, "-o", str(self.output)]
        for i in self.inputs:
            cmd += ["--input", i.to_cli()]
        for name in self.output_names:
            cmd += ["--output-name", name]
        cmd += ["--opset", str(self.opset)]
        for d in self.dynamic:
            cmd += ["--dynamic", d.to_cli()]
        if self.exporter != "dynamo":
            cmd += ["--exporter", self.exporter]
        cmd += _tolerance_args(self.tolerance)
        if self.overwrite:
            cmd.append("--overwrite")
        return cmd


@dataclass(frozen=True)
class DiagnosticRecipe(Recipe):
    """A purpose-made job that exercises the job system (``edgestudio selftest``).

    ``action``: ``succeed`` (writes ``output``), ``fail`` (raises), ``crash`` (segfaults),
    ``hang`` (sleeps forever), ``spawn`` (starts a sleeping child process, then hangs),
    ``noise`` (writes garbage to fd 1, then succeeds), ``spin`` (burns CPU for ``seconds``),
    ``partial`` (writes half an output, then crashes), ``hog`` (allocates memory until it runs
    out: within a ``megabytes`` address-space limit when given, else up to 1 GiB, then waits to
    be killed).
    """

    kind: ClassVar[str] = "selftest"
    action: str = "succeed"
    seconds: float = 1.0
    megabytes: int = 0

    def title(self) -> str:
        """Name the action."""
        return f"Self-test: {self.action}"

    def to_command(self) -> list[str]:
        """``edgestudio selftest ACTION [--seconds S] [-o OUT]``."""
        cmd = ["edgestudio", "selftest", self.action, "--seconds", str(self.seconds)]
        if self.megabytes:
            cmd += ["--megabytes", str(self.megabytes)]
        if self.output:
            cmd += ["-o", self.output]
        if self.overwrite:
            cmd.append("--overwrite")
        return cmd


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


def input_args(shapes: tuple[str, ...], ranges: tuple[str, ...],
               data: DataSource | None) -> list[str]:
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
        return ["edgestudio", "inputs", self.model,
                *input_args(self.shapes, self.ranges, self.data)]


def _tolerance_args(tol: Tolerance) -> list[str]:
    default = Tolerance()
    args = []
    if tol.atol != default.atol:
        args += ["--atol", repr(tol.atol)]
    if tol.rtol != default.rtol:
        args += ["--rtol", repr(tol.rtol)]
    return args
