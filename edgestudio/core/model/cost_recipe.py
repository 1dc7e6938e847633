"""The cost-counting job's recipe and result (kept apart from the counting, which needs onnx:
the CLI, the job registry and the document import these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgestudio.core.job_api.command import given_ranges, given_shapes, positional
from edgestudio.core.job_api.recipe import Recipe


@dataclass(frozen=True)
class CostRecipe(Recipe["ModelCost"]):
    """Count every node's cost at the model's input specification (``edgestudio inspect
    MODEL --cost``): sizes from the graph, tried until the model runs, or ``shapes``."""

    kind: ClassVar[str] = "cost"
    command: ClassVar[tuple[str, ...]] = ("inspect",)
    command_flags: ClassVar[tuple[str, ...]] = ("--cost", "--json")
    model: str = positional()
    shapes: tuple[str, ...] = given_shapes()
    ranges: tuple[str, ...] = given_ranges()

    def title(self) -> str:
        """Name the job."""
        return "Count MACs and memory"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    @classmethod
    def result_type(cls) -> type[ModelCost]:
        """The counted cost."""
        return ModelCost


@dataclass(frozen=True)
class NodeCost:
    """One node's cost (``known``: False when its shapes could not be inferred)."""

    node: str
    op: str
    macs: int = 0
    flops: int = 0
    params: int = 0
    param_bytes: int = 0
    output_bytes: int = 0
    known: bool = True
    # a Loop/Scan/If: how its body's work was counted ("body × 24 iterations", "the larger
    # branch", "body per iteration: the trip count is not fixed", "body not counted: …")
    body: str = ""


@dataclass(frozen=True)
class CostTotal:
    """The whole model's cost."""

    macs: int
    flops: int
    params: int
    param_bytes: int
    peak_activation_bytes: int


@dataclass
class ModelCost:
    """Per-node costs in graph order, the totals, and the inputs they were computed at."""

    nodes: list[NodeCost] = field(default_factory=list)
    total: CostTotal = field(default_factory=lambda: CostTotal(0, 0, 0, 0, 0))
    inputs: dict[str, list[int]] = field(default_factory=dict)

    @property
    def bodies(self) -> list[NodeCost]:
        """The nodes whose work lies in a body (Loop, Scan, If), each saying how it counted."""
        return [n for n in self.nodes if n.body]

    @property
    def unknown(self) -> list[str]:
        """Nodes whose shapes (so their cost) onnx's inference could not tell."""
        return [n.node for n in self.nodes if not n.known]

    def by_node(self) -> dict[str, NodeCost]:
        """The costs by node name."""
        return {n.node: n for n in self.nodes}

    def inputs_text(self) -> str:
        """``image 1x3x224x224; mask 1x16``: the sizes it was counted at."""
        return (
            "; ".join(f"{k} {'x'.join(map(str, v))}" for k, v in self.inputs.items()) or "no inputs"
        )
