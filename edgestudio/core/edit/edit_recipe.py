"""The model-surgery job's recipe (``edgestudio edit``): what to cut, rename, expose, bypass or
simplify, applied in that order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from edgestudio.core.job_api.command import given_ranges, given_shapes, positional, spelled
from edgestudio.core.job_api.recipe import Recipe, Tolerance, tolerance_field


def tensor_names(text: str) -> tuple[str, ...]:
    """``a, b,c`` → ``("a", "b", "c")``: the tensors an extraction starts or ends at."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def extraction_end(flag: str, metavar: str, where: str, graphs: str) -> Any:
    """The field of the tensors an extracted part starts or ends at: ``--inputs a,b``."""
    return spelled(
        (),
        flag,
        show=",".join,
        parse=tensor_names,
        metavar=metavar,
        help=f"extract: the tensors the part {where} (default: the graph's {graphs})",
    )


@dataclass(frozen=True)
class Edit:
    """What an edit did, in words, and the graph it left: its node count, inputs and outputs;
    ``streamed``: the model was too large to check whole, so parts were checked alone."""

    edits: list[str] = field(default_factory=list)
    nodes: int = 0
    streamed: bool = False
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EditRecipe(Recipe["Edit"]):
    """Edit ``model`` into ``output``; the result is checked against the original.

    ``inputs``/``outputs``: the tensors the extracted subgraph starts and ends at (empty: no
    extraction); ``bypass``: nodes removed, their input wired to their readers; ``add_outputs``:
    tensors made graph outputs; ``rename``: ``OLD=NEW`` for graph inputs and outputs (names
    after the other edits); ``simplify``: onnxslim's constant folding and clean-up last.
    """

    kind: ClassVar[str] = "edit"
    model: str = positional(help="the .onnx model (never modified)")
    inputs: tuple[str, ...] = extraction_end("--inputs", "T1,T2", "starts at", "inputs")
    outputs: tuple[str, ...] = extraction_end("--outputs", "T3,T4", "ends at", "outputs")
    bypass: tuple[str, ...] = spelled(
        (),
        "--bypass",
        each=True,
        metavar="NODE",
        help="remove a one-in one-out node (Identity, Dropout, or one whose input and output "
        "agree in type and shape), wiring its input on",
    )
    add_outputs: tuple[str, ...] = spelled(
        (),
        "--add-output",
        each=True,
        metavar="T",
        help="make an intermediate tensor a graph output",
    )
    rename: tuple[str, ...] = spelled(
        (), "--rename", each=True, metavar="OLD=NEW", help="rename a graph input or output"
    )
    simplify: bool = spelled(
        False, "--simplify", help="fold constants and remove dead nodes (onnxslim), last"
    )
    shapes: tuple[str, ...] = given_shapes()
    ranges: tuple[str, ...] = given_ranges()
    tolerance: Tolerance = tolerance_field()

    def title(self) -> str:
        """What the edit does, in a few words."""
        parts = []
        if self.outputs or self.inputs:
            parts.append("extract")
        if self.bypass:
            parts.append(f"bypass {len(self.bypass)}")
        if self.add_outputs:
            parts.append(f"{len(self.add_outputs)} output(s) added")
        if self.rename:
            parts.append(f"rename {len(self.rename)}")
        if self.simplify:
            parts.append("simplify")
        return f"Edit: {', '.join(parts) or 'copy'}"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    @classmethod
    def result_type(cls) -> type[Edit]:
        """What the edit did."""
        return Edit

    def renames(self) -> dict[str, str]:
        """``rename`` as ``{old: new}`` (raises ValueError on an entry without ``=``)."""
        found = {}
        for entry in self.rename:
            old, sep, new = entry.partition("=")
            if not sep or not old.strip() or not new.strip():
                raise ValueError(f"--rename takes OLD=NEW (got '{entry}')")
            found[old.strip()] = new.strip()
        return found


def edited_path(model: str, what: str = "edited") -> str:
    """A new file beside ``model`` for an edit made from the window: ``m_edited.onnx``, or
    ``m_edited2.onnx`` … when that exists (an edit never replaces a file unasked)."""
    from pathlib import Path

    source = Path(model)
    for k in range(1, 1000):
        path = source.with_name(f"{source.stem}_{what}{k if k > 1 else ''}.onnx")
        if not path.exists():
            return str(path)
    raise ValueError(f"no free file name beside {source.name}")
