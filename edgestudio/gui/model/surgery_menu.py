"""The graph's Model surgery menu and its Extract… dialog: edits started from a node or a
closed group, each a checked ``edit`` job writing a new file beside the model."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QWidget,
)

from edgestudio.core.edit.edit_recipe import EditRecipe
from edgestudio.core.model.graph_ir import GraphIR

Edit = Callable[[EditRecipe, str], object]  # a recipe (model and output filled in later), a tag


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


class ExtractDialog(QDialog):
    """The tensors a part starts and ends at, prefilled and editable (comma-separated)."""

    def __init__(self, inputs: list[str], outputs: list[str], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("extract_dialog")
        self.setWindowTitle("Extract a part of the model")
        self.inputs = QLineEdit(", ".join(inputs))
        self.inputs.setPlaceholderText("the graph's inputs")
        self.outputs = QLineEdit(", ".join(outputs))
        self.outputs.setPlaceholderText("the graph's outputs")
        for edit in (self.inputs, self.outputs):
            edit.setMinimumWidth(520)
        form = QFormLayout(self)
        note = QLabel(
            "The part computes the outputs from the inputs (tensor names, comma-"
            "separated; empty: the graph's own). It is written beside the model and "
            "checked against the original's tensors of the same names."
        )
        note.setWordWrap(True)
        form.addRow(note)
        form.addRow("Starts at:", self.inputs)
        form.addRow("Ends at:", self.outputs)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def recipe(self) -> EditRecipe:
        """The extraction the fields describe."""
        return EditRecipe(inputs=_names(self.inputs.text()), outputs=_names(self.outputs.text()))


def add_surgery_actions(menu: QMenu, ir: GraphIR, index: int, edit: Edit, parent: QWidget) -> None:
    """Fill ``menu`` with the edits that start from node (or closed group) ``index``."""
    name = ir.names[index]
    data = [t for t in ir.node_inputs[index] if t and not ir.is_constant(t)]
    outputs = [o for o in ir.node_outputs[index] if o]
    group = ir.is_group(index)
    what = f"group '{ir.group_labels.get(index, name)}'" if group else f"'{name}'"
    if group:
        part = menu.addAction(f"Extract {what} as a model of its own")
        part.setToolTip(
            "Its operators alone: the tensors flowing in become the inputs, those "
            "flowing out the outputs"
        )
        part.setEnabled(bool(data) and bool(outputs))
        part.triggered.connect(
            lambda: edit(EditRecipe(inputs=tuple(data), outputs=tuple(outputs)), "part")
        )
    else:
        for tensor in outputs:
            action = menu.addAction(f"Add '{tensor}' as a graph output")
            action.triggered.connect(
                lambda _=False, t=tensor: edit(EditRecipe(add_outputs=(t,)), "with_output")
            )
    up_to = menu.addAction(f"Extract the part up to {what}")
    up_to.setToolTip(
        "A model of the graph's inputs through it, its outputs the part's outputs "
        "(e.g. to run the rest elsewhere)"
    )
    up_to.triggered.connect(lambda: edit(EditRecipe(outputs=tuple(outputs)), "head"))
    after = menu.addAction(f"Extract the part from {what} on")
    after.setToolTip(
        "A model from its inputs to the graph's outputs (e.g. to strip pre-processing)"
    )
    after.setEnabled(bool(data))
    after.triggered.connect(lambda: edit(EditRecipe(inputs=tuple(data)), "tail"))
    chosen = menu.addAction("Extract…")
    chosen.setToolTip("Choose the tensors the part starts and ends at")

    def ask() -> None:
        dialog = ExtractDialog(data, outputs, parent)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            edit(dialog.recipe(), "part")

    chosen.triggered.connect(ask)
    if not group:
        skip = menu.addAction(f"Bypass {what} (wire its input on)")
        skip.setEnabled(len(data) >= 1 and len(outputs) == 1)
        skip.triggered.connect(lambda: edit(EditRecipe(bypass=(name,)), "bypassed"))
