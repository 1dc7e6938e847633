"""The main window: menus, the document tabs, drag-and-drop and error dialogs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import (
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QIcon,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QTabWidget,
    QWidget,
)

from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.perf.perf_results import ProviderProbe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.quant_runs import QuantRun
from edgestudio.core.targets.target_recipe import TargetCheckRecipe, TargetCompileRecipe
from edgestudio.core.workspace import workspace
from edgestudio.core.workspace.preferences import Preferences
from edgestudio.gui.document_view import DocumentView
from edgestudio.gui.forms.convert_form import ConvertDialog
from edgestudio.gui.forms.export_form import ExportDialog
from edgestudio.gui.job_controller import JobController
from edgestudio.gui.jobs_panel import JobsPanel
from edgestudio.gui.model.compare_view import CompareView
from edgestudio.gui.model.model_loader import LoadedModel, ModelLoader
from edgestudio.gui.preferences_dialog import (
    PreferencesDialog,
    apply_theme,
    load_preferences,
    save_preferences,
)
from edgestudio.gui.quant.quant_actions import QuantActions
from edgestudio.gui.quant.tune_window import TuneWindow
from edgestudio.gui.recent_files import RecentFiles
from edgestudio.gui.user_guide import UserGuide
from edgestudio.gui.widgets.kept_windows import show_kept
from edgestudio.gui.widgets.message_boxes import MessageBoxes
from edgestudio.gui.window_menus import WindowMenus
from edgestudio.gui.window_workspaces import WorkspaceActions
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.workflow import Workflow

MODEL_FILTER = f"ONNX models and workspaces (*.onnx *.ort *.pb *{workspace.SUFFIX});;All files (*)"


class MainWindow(QMainWindow):
    """EdgeStudio's top-level window. Several models can be open at once, one tab each."""

    model_opened = Signal(object)  # DocumentView
    model_failed = Signal(str, str)  # path, message
    loads_settled = Signal()  # no load is pending any more
    workspace_restored = Signal(object)  # DocumentView

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.setWindowTitle("EdgeStudio")
        self.setAcceptDrops(True)
        self.resize(1280, 820)
        self.settings = settings or QSettings()
        self.recent = RecentFiles(self.settings)
        self.prefs = load_preferences(self.settings)
        self.loader = ModelLoader(self)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(self._on_failed)
        self._pending: dict[str, DocumentView] = {}
        self.messages = MessageBoxes(self)  # non-modal, kept alive while open

        self.tabs = QTabWidget()
        self.tabs.setObjectName("documents")
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.tabCloseRequested.connect(self.close_document)
        self.welcome = QLabel(
            "<h2>EdgeStudio</h2><p>Drop an <b>.onnx</b> file here, or press "
            "<b>Ctrl+O</b> to open one.</p>"
        )
        self.welcome.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.welcome.setObjectName("welcome")
        self._show_central()

        # workspaces applied once their model is loaded
        self.pending_restores: dict[str, workspace.Workspace] = {}
        self.compare_views: list[CompareView] = []
        self.tune_windows: list[TuneWindow] = []
        self.jobs = JobController(self, max_parallel=self.prefs.parallel_jobs)
        self.jobs.job_finished.connect(self._on_job_finished)
        self.workflow = Workflow(self.jobs)
        self.workflow.started.connect(self._job_started)
        self.workflow.providers_found.connect(self._show_providers)
        self.jobs_panel = JobsPanel(self.jobs)
        self.jobs_panel.open_result_requested.connect(self.open_model)
        self.jobs_dock = QDockWidget("Jobs", self)
        self.jobs_dock.setObjectName("jobs_dock")
        self.jobs_dock.setWidget(self.jobs_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.jobs_dock)
        self.jobs_dock.hide()
        self._jobs_dock_sized = False

        self.quant = QuantActions(self, self)
        self.workspaces = WorkspaceActions(self, self)
        self.menus = WindowMenus(self, self)
        self.menus.build()
        self.statusBar().showMessage("Ready")

    # ----- opening ---------------------------------------------------------------------------
    def open_dialog(self) -> None:
        """Ask for model files and open them."""
        paths, _ = QFileDialog.getOpenFileNames(self, "Open model", "", MODEL_FILTER)
        for path in paths:
            self.open_file(path)

    def receive_files(self, paths: list[str]) -> None:
        """Open files handed over by another launch or the OS, and come to the front."""
        for path in paths:
            self.open_file(path)
        if self.isMinimized():
            self.showNormal()
        self.raise_()
        self.activateWindow()

    def open_file(self, path: str | Path) -> DocumentView | None:
        """Open a model, or a workspace (``*.edgestudio.json``) with its model."""
        if str(path).endswith(workspace.SUFFIX):
            return self.workspaces.open(path)
        return self.open_model(path)

    def open_model(self, path: str | Path) -> DocumentView:
        """Open ``path`` in a new tab (or focus its tab if it is already open)."""
        path = Path(path).absolute()
        for i in range(self.tabs.count()):
            doc = self.document(i)
            if doc.path == path:
                self.tabs.setCurrentIndex(i)
                return doc
        doc = DocumentView(path)
        index = self.tabs.addTab(doc, path.name)
        self.tabs.setTabToolTip(index, str(path))
        self.tabs.setCurrentIndex(index)
        self._show_central()
        self._pending[str(path)] = doc
        self.statusBar().showMessage(f"Opening {path}…")
        self.loader.load(path)
        return doc

    def _on_loaded(self, loaded: LoadedModel) -> None:
        doc = self._pending.pop(str(loaded.path), None)
        if doc is None or self.tabs.indexOf(doc) < 0:  # closed while loading
            self._maybe_settled()
            return
        doc.set_loaded(loaded)
        self.workflow.add_document(doc.document)
        self.quant.attach(doc)
        doc.perf_panel.apply_preferences(self.prefs)
        doc.perf_panel.bench_requested.connect(lambda r, d=doc: self.workflow.submit(r, d.document))
        doc.perf_panel.profile_requested.connect(
            lambda r, d=doc: self.workflow.submit(r, d.document)
        )
        doc.perf_panel.target_check_requested.connect(self.check_on_target)
        doc.perf_panel.target_compile_requested.connect(
            lambda device: self.compile_for_target(device=device)
        )
        doc.inputs_panel.find_requested.connect(
            lambda r, d=doc: self.workflow.find_inputs(d.document, r)
        )
        doc.graph_panel.shapes_requested.connect(  # through the queue: never beside a benchmark
            lambda r, d=doc: self.workflow.submit(r, d.document, background=True)
        )
        doc.cost_requested.connect(lambda r, d=doc: self.workflow.submit(r, d.document))
        doc.edit_requested.connect(lambda r, d=doc: self.workflow.submit(r, d.document))
        if self.workflow.providers is not None:
            doc.perf_panel.set_providers(self.workflow.providers)
        else:
            self.workflow.probe_providers()
        self.recent.add(loaded.path)
        s = loaded.summary
        self.statusBar().showMessage(
            f"{loaded.path.name}: {s.nodes:,} nodes, {s.parameters:,} parameters", 10_000
        )
        if s.problems:
            self.messages.show(
                QMessageBox.Icon.Warning,
                "Model has problems",
                f"{loaded.path.name} was opened, but:",
                "\n\n".join(s.problems),
            )
        self.model_opened.emit(doc)
        restored = self.pending_restores.pop(str(doc.path), None)
        if restored is not None:
            self.workspaces.restore(doc, restored)
        else:
            self.workspaces.offer_last(doc)
        self._maybe_settled()

    def _on_failed(self, path: str, message: str, kind: str) -> None:
        doc = self._pending.pop(path, None)
        if doc is not None:
            index = self.tabs.indexOf(doc)
            if index >= 0:
                self.tabs.removeTab(index)
            doc.deleteLater()
        if kind in ("missing", "not_a_file"):
            self.recent.remove(path)
        self._show_central()
        self.statusBar().showMessage(f"Could not open {Path(path).name}", 10_000)
        self.messages.show(QMessageBox.Icon.Critical, "Cannot open model", message, path)
        self.model_failed.emit(path, message)
        self._maybe_settled()

    def _maybe_settled(self) -> None:
        if not self._pending:
            self.loads_settled.emit()

    @property
    def loading(self) -> bool:
        """True while any model is still being parsed."""
        return bool(self._pending)

    # ----- documents ---------------------------------------------------------------------------
    def document(self, index: int) -> DocumentView:
        """Return the document shown in tab ``index``."""
        widget = self.tabs.widget(index)
        assert isinstance(widget, DocumentView)
        return widget

    def documents(self) -> list[DocumentView]:
        """Return every open document, in tab order."""
        return [self.document(i) for i in range(self.tabs.count())]

    def current_document(self) -> DocumentView | None:
        """Return the document in the front tab, if any."""
        widget = self.tabs.currentWidget()
        return widget if isinstance(widget, DocumentView) else None

    def loaded_document(self) -> DocumentView | None:
        """The current document once its model is loaded; else None, and the status bar says
        to open one."""
        doc = self.current_document()
        if doc is None or not doc.is_loaded:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        return doc

    def close_document(self, index: int) -> None:
        """Close the document in tab ``index``."""
        if index < 0:
            return
        widget = self.tabs.widget(index)
        self.tabs.removeTab(index)
        if isinstance(widget, DocumentView):
            self.workflow.remove_document(widget.document)
            widget.shutdown()
        if widget is not None:
            self._pending = {k: v for k, v in self._pending.items() if v is not widget}
            widget.deleteLater()
        self._show_central()

    def _show_central(self) -> None:
        # The welcome text and the tabs swap places; takeCentralWidget keeps both alive.
        want: QWidget = self.tabs if self.tabs.count() else self.welcome
        if self.centralWidget() is not want:
            if self.centralWidget() is not None:
                self.takeCentralWidget()
            self.setCentralWidget(want)

    # ----- drag and drop ----------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        """Qt: accept drags that carry local files."""
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        """Qt: open the dropped files."""
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        for path in files:
            self.open_file(path)
        if files:
            event.acceptProposedAction()

    # ----- jobs ------------------------------------------------------------------------------
    def _job_started(self, job: Job[Any]) -> None:
        """A job a person started: the Jobs panel shown, a line in the status bar."""
        self.show_jobs_dock()
        self.statusBar().showMessage(f"Started: {job.recipe.title()}", 5000)

    def show_jobs_dock(self) -> None:
        """Show the Jobs panel; the first time, a fifth of the window high (Qt's default
        gave it a third, leaving the panels above two table rows)."""
        first = self.jobs_dock.isHidden() and not self._jobs_dock_sized
        self.jobs_dock.show()
        if first:
            self._jobs_dock_sized = True
            self.resizeDocks(
                [self.jobs_dock], [max(150, self.height() // 5)], Qt.Orientation.Vertical
            )

    def submit(self, recipe: Recipe[Any]) -> Job[Any]:
        """Run ``recipe`` in the background and show the Jobs panel.

        A job that feeds a model takes the inputs set in that model's Inputs panel, unless the
        recipe already names some; its outcome goes to that model's document.
        """
        return self.workflow.submit(recipe)

    def check_on_target(self) -> Job[Any] | None:
        """Ask the target's provider which nodes of the current model it takes: the graph is
        coloured by placement when it answers (Tools › Check on target)."""
        doc = self.loaded_document()
        if doc is None:
            return None
        return self.submit(TargetCheckRecipe(model=str(doc.path)))

    def compile_for_target(self, output: Path | None = None, device: str = "") -> Job[Any] | None:
        """Compile the current model for the NPU (Tools › Compile for target…): the EPContext
        model and context binary a device loads, written where the user says (``output``
        given: there, without asking), proven before the job succeeds — here, or on
        ``device`` (a board with the QNN package), which reloads and runs it itself."""
        doc = self.loaded_document()
        if doc is None:
            return None
        if output is None:
            suggested = doc.path.with_name(f"{doc.path.stem}_qnn_ctx.onnx")
            chosen, _ = QFileDialog.getSaveFileName(
                self, "Compile for the NPU", str(suggested), "ONNX models (*.onnx)"
            )
            if not chosen:
                return None
            output = Path(chosen)  # the file dialog asked before replacing it
        recipe = TargetCompileRecipe(
            model=str(doc.path), output=str(output), overwrite=True, device=device
        )
        doc.perf_panel.show_target()
        return self.submit(recipe)

    def show_convert_form(self) -> ConvertDialog | None:
        """Open the Convert form for the current model (non-modal); Run submits the job."""
        doc = self.loaded_document()
        if doc is None or doc.loaded is None:
            return None
        dialog = ConvertDialog(doc.loaded.model, doc.loaded.summary, self)
        dialog.output.edit.setText(self.prefs.output_for(doc.path, "converted"))
        dialog.tolerance.atol.setText(f"{self.prefs.atol:g}")
        dialog.tolerance.rtol.setText(f"{self.prefs.rtol:g}")
        dialog.accepted.connect(lambda: self.submit(dialog.recipe()))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def show_export_form(self) -> ExportDialog:
        """Open the PyTorch export form (non-modal); Export submits the job."""
        dialog = ExportDialog(self)
        dialog.accepted.connect(lambda: self.submit(dialog.recipe()))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _show_providers(self, rows: list[ProviderProbe]) -> None:
        for doc in self.documents():
            if doc.is_loaded:
                doc.perf_panel.set_providers(rows)

    def _on_job_finished(self, job: Job[Any]) -> None:
        if job.id in self.jobs.background:
            return  # the app's own probe: not news for the status bar
        verdict = job.state.value
        if job.state is JobState.SUCCEEDED and job.report is not None and job.report.check:
            verdict = job.report.check.verdict()
            reason = job.report.check.unchecked_reason()
            if reason:
                verdict += f" ({reason})"
        self.statusBar().showMessage(f"{job.recipe.title()}: {verdict}", 10_000)

    # ----- comparing two models ---------------------------------------------------------------
    def compare_dialog(self) -> CompareView | None:
        """Ask for a second model and compare the current one with it."""
        doc = self.current_document()
        if doc is None:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        other, _ = QFileDialog.getOpenFileName(
            self, f"Compare {doc.path.name} with", str(doc.path.parent), MODEL_FILTER
        )
        return self.compare(doc.path, Path(other)) if other else None

    def compare(
        self,
        a: Path,
        b: Path,
        sqnr: dict[str, float] | None = None,
        analysis: Analysis | None = None,
    ) -> CompareView:
        """Open a window with models ``a`` and ``b`` side by side and their differences."""
        return show_kept(CompareView(a, b, sqnr, self, analysis=analysis), self.compare_views)

    def show_user_guide(self) -> UserGuide:
        """Help › User guide: the guide's pages, offline, in a window of their own."""
        guide = getattr(self, "_guide", None)
        if guide is None:
            guide = self._guide = UserGuide(self)
        guide.show()
        guide.raise_()
        guide.activateWindow()  # keys go to it (no window manager gives it the focus itself)
        guide.browser.setFocus()
        return guide

    def compare_run(self, doc: DocumentView, run: QuantRun) -> CompareView | None:
        """A quantization run's model beside its float original, coloured by its SQNR."""
        if not run.output:
            return None
        sqnr = run.analysis.sqnr_by_node() if run.analysis else None
        return self.compare(doc.path, Path(run.output), sqnr, run.analysis)

    # ----- misc ----------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """Qt: ask before cancelling running jobs, then stop everything."""
        running = self.jobs.user_jobs_running()
        if running and self.isVisible() and not self._confirm_quit(len(running)):
            event.ignore()
            return
        self.jobs.shutdown()
        self.loader.wait()
        for doc in self.documents():
            doc.shutdown()
        for window in [*self.tune_windows, *self.compare_views]:  # a running tune is cancelled
            window.close()
        super().closeEvent(event)

    def show_preferences(self) -> PreferencesDialog:
        """Open Preferences (non-modal); OK stores and applies them."""
        dialog = PreferencesDialog(self.prefs, self)
        dialog.accepted.connect(lambda: self.set_preferences(dialog.preferences()))
        dialog.devices.changed.connect(self.refresh_devices)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def refresh_devices(self) -> None:
        """Offer the current device list in every open model's Performance tab."""
        for doc in self.documents():
            if doc.is_loaded:
                doc.perf_panel.refresh_devices()

    def set_preferences(self, prefs: Preferences) -> None:
        """Store ``prefs`` and apply them to the theme and every open model's forms."""
        self.prefs = prefs
        save_preferences(self.settings, prefs)
        apply_theme(prefs.theme)
        self.jobs.max_parallel = prefs.parallel_jobs
        for doc in self.documents():
            if doc.is_loaded:
                doc.perf_panel.apply_preferences(prefs)

    def _confirm_quit(self, count: int) -> bool:
        answer = QMessageBox.question(
            self,
            "Jobs are running",
            f"{count} job{'s are' if count > 1 else ' is'} still running. Cancel and quit?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def set_window_icon(self, icon: QIcon) -> None:
        """Use ``icon`` for the window (and the taskbar)."""
        self.setWindowIcon(icon)
