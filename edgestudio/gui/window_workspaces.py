"""The main window's workspaces and reports: save and open a model's results, offer the last
workspace of a model just opened, export the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from edgestudio.core.workspace import workspace
from edgestudio.core.workspace.report import report_from_document, write_report
from edgestudio.gui.document_view import DocumentView
from edgestudio.gui.widgets.exporting import save_path
from edgestudio.gui.widgets.message_boxes import MessageBoxes

WORKSPACE_FILTER = f"EdgeStudio workspaces (*{workspace.SUFFIX});;All files (*)"


class WorkspaceHost(Protocol):
    """What workspaces need of the main window: its models and its message boxes."""

    messages: MessageBoxes
    pending_restores: dict[str, workspace.Workspace]

    @property
    def workspace_restored(self) -> SignalInstance:
        """Emitted with the document a workspace was restored into."""

    def loaded_document(self) -> DocumentView | None:
        """The current tab's model, once loaded."""

    def open_model(self, path: str | Path) -> DocumentView:
        """Open the model at ``path``."""


class WorkspaceActions:
    """Save, open and restore workspaces; export reports — for ``window``'s current model
    (``host`` is the window itself: a protocol, so that this part imports no window)."""

    def __init__(self, window: QMainWindow, host: WorkspaceHost) -> None:
        self.window = window
        self.host = host

    def save(self, path: str | None = None) -> str | None:
        """Save the current model's document (runs, results, inputs…) to a workspace file."""
        doc = self.host.loaded_document()
        if doc is None:
            return None
        if path is None:  # the last workspace of this model is read only to suggest it
            suggested = workspace.last_for(doc.path) or workspace.default_path(doc.path)
            path = save_path(self.window, None, "Save workspace", str(suggested), WORKSPACE_FILTER)
        if not path:
            return None
        try:
            saved = workspace.save(doc.document, path)
        except OSError as exc:
            self.host.messages.show(
                QMessageBox.Icon.Critical,
                "Cannot save the workspace",
                f"{Path(path).name} could not be written.",
                str(exc.strerror or exc),
            )
            return None
        self.window.statusBar().showMessage(f"Workspace saved to {saved}", 10_000)
        return str(saved)

    def open_dialog(self) -> None:
        """Ask for a workspace file and open it."""
        path, _ = QFileDialog.getOpenFileName(self.window, "Open workspace", "", WORKSPACE_FILTER)
        if path:
            self.open(path)

    def open(self, path: str | Path) -> DocumentView | None:
        """Open a workspace: its model in a tab (or the open tab), with every result restored."""
        try:
            restored = workspace.load(path)
        except workspace.WorkspaceError as exc:
            self.host.messages.show(
                QMessageBox.Icon.Critical, "Cannot open the workspace", str(exc), str(path)
            )
            return None
        if not restored.model_found:
            self.host.messages.show(
                QMessageBox.Icon.Critical,
                "Cannot open the workspace",
                restored.warning() or "",
                str(path),
            )
            return None
        doc = self.host.open_model(restored.document.path)
        if doc.is_loaded:
            self.restore(doc, restored)
        else:
            self.host.pending_restores[str(doc.path)] = restored
        return doc

    def restore(self, doc: DocumentView, restored: workspace.Workspace) -> None:
        """Put ``restored``'s results into ``doc`` (loaded), saying what changed since."""
        doc.document.restore(restored.document)
        warning = restored.warning()
        if warning:
            self.host.messages.show(
                QMessageBox.Icon.Warning, "The model changed", warning, str(restored.path)
            )
        self.window.statusBar().showMessage(f"Workspace {restored.path.name} restored", 10_000)
        self.host.workspace_restored.emit(doc)

    def offer_last(self, doc: DocumentView) -> None:
        """A model with a saved workspace: offer to bring its results back."""
        last = workspace.last_for(doc.path)
        if last is None:
            return
        yes, no = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No
        box = self.host.messages.show(
            QMessageBox.Icon.Question,
            "Restore the workspace?",
            f"{doc.path.name} has a saved workspace ({last.name}) with its "
            "quantization runs, benchmarks and inputs. Restore it?",
            str(last),
            buttons=yes | no,
            escape=no,
        )
        box.setDefaultButton(yes)
        box.setObjectName("restore_workspace")
        # The Yes button's own signal: nothing reaches into the box while it closes, and the
        # connection dies with the button.
        yes_button = box.button(yes)
        yes_button.clicked.connect(lambda _checked=False: self.open(last))

    def export_report(self, path: str | None = None) -> str | None:
        """Write the current model's report as HTML (and JSON beside it)."""
        doc = self.host.loaded_document()
        if doc is None:
            return None
        path = save_path(
            self.window,
            path,
            "Export report",
            str(doc.path.with_name(f"{doc.path.stem}_report.html")),
            "HTML report (*.html)",
        )
        if not path:
            return None
        html_path, _ = write_report(path, report_from_document(doc.document))
        self.window.statusBar().showMessage(f"Report written to {html_path}", 10_000)
        return str(html_path)
