"""The target check's recipe and typed result (onnx- and onnxruntime-free: the CLI, the job
registry and the document import these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgestudio.core.job_api.command import given_ranges, given_shapes, positional
from edgestudio.core.job_api.options import option
from edgestudio.core.job_api.recipe import Recipe

# Targets a check can ask for. "qnn-htp": Qualcomm's Hexagon NPU through onnxruntime-qnn, whose
# HTP backend emulates the NPU on x86 (every answer below is the provider's own).
TARGETS = ("qnn-htp",)
TARGET_LABELS = {"qnn-htp": "Qualcomm Hexagon NPU (HTP, emulated on this machine)"}
# HTP architectures onnxruntime-qnn 2.7 compiles for (v68 … v79), and a Snapdragon SoC each.
HTP_ARCHS = ("68", "69", "73", "75", "79")
ON_TARGET, ON_CPU = "target", "cpu"
# Folded away before placement (a shape computation on fixed sizes becomes a constant): the
# node runs nowhere as itself, on neither side.
FOLDED = "folded"
BY_DESIGN = "is configured to not take"  # the QNN provider's words for its graph-edge Q/DQ


@dataclass(frozen=True)
class TargetCheckRecipe(Recipe["TargetCheck"]):
    """Which nodes the target's provider takes, and its reason for each it leaves to the CPU
    (``edgestudio target check MODEL``); with ``fix_shapes``, a model with dynamic dims is
    checked again with them fixed to its input specification's sizes."""

    kind: ClassVar[str] = "target-check"
    command: ClassVar[tuple[str, ...]] = ("target", "check")
    model: str = positional(help="the .onnx model (never modified); quantize it for the target")
    target: str = option(
        "qnn-htp", "--target", "the accelerator to check the model against", TARGETS
    )
    htp_arch: str = option(
        "73", "--htp-arch", "Hexagon architecture (v68 … v79)", HTP_ARCHS, label="HTP architecture:"
    )
    fix_shapes: bool = option(
        True,
        "--keep-dynamic",
        "check the model as it is: dynamic dims left dynamic (the NPU refuses every node "
        "whose shape it cannot get)",
        label="Fix dynamic dims to the input sizes",
    )
    shapes: tuple[str, ...] = given_shapes()
    ranges: tuple[str, ...] = given_ranges()

    def title(self) -> str:
        """Name the job."""
        return f"Check on {self.target}: {self.model.rsplit('/', 1)[-1]}"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    @classmethod
    def result_type(cls) -> type[TargetCheck]:
        """The placement."""
        return TargetCheck


@dataclass(frozen=True)
class TargetCompileRecipe(Recipe["TargetCompile"]):
    """Compile a model for the target offline (``edgestudio target compile MODEL -o OUT``):
    the EPContext model and the context binary a device loads, reloaded here and proven to
    give the emulated session's outputs."""

    kind: ClassVar[str] = "target-compile"
    command: ClassVar[tuple[str, ...]] = ("target", "compile")
    model: str = positional(help="the quantized .onnx model (never modified)")
    target: str = option("qnn-htp", "--target", "the accelerator to compile for", TARGETS)
    htp_arch: str = option(
        "73", "--htp-arch", "Hexagon architecture (v68 … v79)", HTP_ARCHS, label="HTP architecture:"
    )
    device: str = option(
        "",
        "--device",
        "compile on this device instead of this machine's emulator: a board with the QNN "
        "package reached over SSH, or another environment here (edgestudio device add); it "
        "reloads and runs the binary itself",
        metavar="NAME",
        label="Compile on:",
    )
    shapes: tuple[str, ...] = given_shapes()
    ranges: tuple[str, ...] = given_ranges()

    def title(self) -> str:
        """Name the job."""
        on = f" on {self.device}" if self.device else ""
        return f"Compile for {self.target}{on}: {self.model.rsplit('/', 1)[-1]}"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    @classmethod
    def result_type(cls) -> type[TargetCompile]:
        """What was compiled, and the proof."""
        return TargetCompile


@dataclass
class TargetCompile:
    """A compiled model: the EPContext model, its context binary, and its proof."""

    model: str
    target: str
    htp_arch: str
    context_model: str  # the EPContext .onnx (a few hundred bytes: it names the binary)
    binary: str  # the QNN context binary the device loads
    binary_bytes: int
    fixes: list[str] = field(default_factory=list)  # dims fixed before compiling
    max_abs_difference: float = 0.0  # reloaded binary vs the compiling session, same inputs
    provider: str = ""
    device: str = ""  # the device that compiled and ran it ("": this machine's emulator)

    def text(self) -> str:
        """``compiled for v73: 106 KB context binary, outputs identical to the emulated run``
        (or ``… on BOARD: … identical to the run that compiled it there``)."""
        run = f"the run that compiled it on {self.device}" if self.device else "the emulated run"
        same = (
            f"outputs identical to {run}"
            if self.max_abs_difference == 0
            else f"outputs within {self.max_abs_difference:.3g} of {run}"
        )
        on = f" on {self.device}" if self.device else ""
        return (
            f"compiled for v{self.htp_arch}{on}: {self.binary_bytes:,} bytes of context binary, "
            f"{same}"
        )


@dataclass(frozen=True)
class NodePlacement:
    """Where one node runs, and the provider's reason when it is not on the target."""

    node: str
    op_type: str
    placed: str  # ON_TARGET, ON_CPU or FOLDED
    reason: str = ""  # the provider's own words ("" on the target)


@dataclass
class Placement:
    """One session's placement: every node, or why the session could not be built."""

    nodes: list[NodePlacement] = field(default_factory=list)
    session_error: str = ""  # the provider could not build a session: the verdict, no nodes

    @property
    def on_target(self) -> int:
        """Nodes the target takes."""
        return sum(1 for n in self.nodes if n.placed == ON_TARGET)

    @property
    def on_cpu(self) -> list[NodePlacement]:
        """Nodes left to the CPU, with their reasons."""
        return [n for n in self.nodes if n.placed == ON_CPU]

    @property
    def by_design(self) -> list[NodePlacement]:
        """Nodes the provider leaves to the CPU by its own configuration, whatever the model:
        the Q of a graph input and the DQ of a graph output (the app hands it floats)."""
        return [n for n in self.on_cpu if BY_DESIGN in n.reason]

    @property
    def whole(self) -> bool:
        """True when every node but those left by design runs on the target."""
        return not self.session_error and len(self.on_cpu) == len(self.by_design)

    def text(self) -> str:
        """``37 of 37 nodes on the target`` or why there is no session."""
        if self.session_error:
            return f"no session: {self.session_error}"
        folded = sum(1 for n in self.nodes if n.placed == FOLDED)
        return f"{self.on_target} of {len(self.nodes)} nodes on the target" + (
            f", {folded} folded away (constants once the sizes are fixed)" if folded else ""
        )

    def reasons(self) -> dict[str, int]:
        """Each reason the provider gave, with how many nodes it left to the CPU."""
        counts: dict[str, int] = {}
        for n in self.on_cpu:
            counts[n.reason] = counts.get(n.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


@dataclass
class TargetCheck:
    """A model checked against a target: as it is, and after the fixes the app made."""

    model: str
    target: str
    htp_arch: str
    before: Placement
    after: Placement | None = None  # after fixing dynamic dims (None: nothing to fix)
    fixes: list[str] = field(default_factory=list)  # what was changed for ``after``, in words
    emulated: bool = True  # the target's arithmetic emulated on this machine's CPU
    provider: str = ""  # the provider package and version that answered

    @property
    def final(self) -> Placement:
        """The placement the model gets once fixed (as it is when nothing was fixed)."""
        return self.after or self.before

    def placement_map(self) -> dict[str, str]:
        """Node name → "target"/"cpu", of the final placement (the graph's colours)."""
        return {n.node: n.placed for n in self.final.nodes}


# The graph's categories for a placement, and their colours (the provider overlay's palette).
NPU, CPU_BY_DESIGN, CPU_REFUSED = "NPU", "CPU (by design)", "CPU (refused)"
FOLDED_AWAY = "folded away"
PLACEMENT_COLOURS = {
    NPU: "#2e7d32",
    CPU_BY_DESIGN: "#90a4ae",
    CPU_REFUSED: "#c62828",
    FOLDED_AWAY: "#e0e0e0",
}


def placement_categories(placement: Placement) -> dict[str, str]:
    """Node name → NPU, CPU (by design) or CPU (refused): what the graph colours."""
    return {
        n.node: NPU
        if n.placed == ON_TARGET
        else FOLDED_AWAY
        if n.placed == FOLDED
        else CPU_BY_DESIGN
        if BY_DESIGN in n.reason
        else CPU_REFUSED
        for n in placement.nodes
    }
