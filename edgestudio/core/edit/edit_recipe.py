"""The model-surgery job's recipe (``edgestudio edit``): what to cut, rename, expose, bypass or
simplify, applied in that order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgestudio.core.inputs.inputs_recipe import input_args
from edgestudio.core.job_api.recipe import Recipe, Tolerance, tolerance_args


@dataclass(frozen=True)
class EditRecipe(Recipe):
    """Edit ``model`` into ``output``; the result is checked against the original.

    ``inputs``/``outputs``: the tensors the extracted subgraph starts and ends at (empty: no
    extraction); ``bypass``: nodes removed, their input wired to their readers; ``add_outputs``:
    tensors made graph outputs; ``rename``: ``OLD=NEW`` for graph inputs and outputs (names
    after the other edits); ``simplify``: onnxslim's constant folding and clean-up last.
    """

    kind: ClassVar[str] = "edit"
    model: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    bypass: tuple[str, ...] = ()
    add_outputs: tuple[str, ...] = ()
    rename: tuple[str, ...] = ()
    simplify: bool = False
    shapes: tuple[str, ...] = ()
    ranges: tuple[str, ...] = ()
    tolerance: Tolerance = field(default_factory=Tolerance)

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

    def renames(self) -> dict[str, str]:
        """``rename`` as ``{old: new}`` (raises ValueError on an entry without ``=``)."""
        found = {}
        for entry in self.rename:
            old, sep, new = entry.partition("=")
            if not sep or not old.strip() or not new.strip():
                raise ValueError(f"--rename takes OLD=NEW (got '{entry}')")
            found[old.strip()] = new.strip()
        return found

    def to_command(self) -> list[str]:
        """``edgestudio edit MODEL -o OUT …``."""
        cmd = ["edgestudio", "edit", self.model, "-o", self.output or ""]
        if self.inputs:
            cmd += ["--inputs", ",".join(self.inputs)]
        if self.outputs:
            cmd += ["--outputs", ",".join(self.outputs)]
        for flag, values in (
            ("--bypass", self.bypass),
            ("--add-output", self.add_outputs),
            ("--rename", self.rename),
        ):
            for value in values:
                cmd += [flag, value]
        if self.simplify:
            cmd.append("--simplify")
        if self.overwrite:
            cmd.append("--overwrite")
        return cmd + tolerance_args(self.tolerance) + input_args(self.shapes, self.ranges, None)


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
