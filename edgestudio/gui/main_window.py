"""The main window: menus, the document tabs, drag-and-drop and error dialogs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QIcon,
    QKeySequence,
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

from edgestudio import __version__
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.perf.perf_results import ProviderProbe
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, Quantization
from edgestudio.core.quant.quant_runs import QuantRun, RunState
from edgestudio.core.quant.tune import Candidate, recovery_goal
from edgestudio.core.workspace import workspace
from edgestudio.core.workspace.document import Overlay, OverlayKind
from edgestudio.core.workspace.preferences import Preferences
from edgestudio.core.workspace.report import report_from_document, write_report
from edgestudio.gui.document_view import DocumentView
from edgestudio.gui.forms.convert_form import ConvertDialog
from edgestudio.gui.forms.export_form import ExportDialog
from edgestudio.gui.forms.quantize_form import QuantizeDialog
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
from edgestudio.gui.quant.tune_window import TuneWindow
from edgestudio.gui.recent_files import RecentFiles
from edgestudio.gui.user_guide import UserGuide
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.tuner import Tuner, tuner_summary
from edgestudio.jobs.workflow import Workflow

WORKSPACE_FILTER = f"EdgeStudio workspaces (*{workspace.SUFFIX});;All files (*)"
MODEL_FILTER = f"ONNX models and workspaces (*.onnx *.ort *.pb *{workspace.SUFFIX});;All files (*)"


W = TypeVar("W", bound=QWidget)


def _show_kept(window: W, kept: list[W]) -> W:
    """Show a window of its own, kept in ``kept`` (alive) until it is closed and deleted.

    Such windows are the main window's children (top-level all the same): Qt deletes them on
    the GUI thread. A parentless one was Python's to delete, and the cyclic collector, run by
    whichever thread allocates, once destroyed one on a worker thread while the GUI thread
    waited on the same Qt lock: a deadlock."""

    def forget(_: object = None) -> None:
        if window in kept:
            kept.remove(window)

    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    window.destroyed.connect(forget)
    kept.append(window)
    window.show()
    return window


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
        self.dialogs: list[QMessageBox] = []  # open, non-modal message boxes (kept alive here)

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

        self._restores: dict[str, workspace.Workspace] = {}  # applied once the model is loaded
        self.compare_views: list[CompareView] = []
        self.tune_windows: list[TuneWindow] = []
        self.jobs = JobController(self, max_parallel=self.prefs.parallel_jobs)
        self.jobs.job_finished.connect(self._on_job_finished)
        self.workflow = Workflow(self._run)
        self.workflow.providers_found.connect(self._show_providers)
        self.jobs_panel = JobsPanel(self.jobs)
        self.jobs_panel.open_result_requested.connect(self.open_model)
        self.jobs_dock = QDockWidget("Jobs", self)
        self.jobs_dock.setObjectName("jobs_dock")
        self.jobs_dock.setWidget(self.jobs_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.jobs_dock)
        self.jobs_dock.hide()
        self._jobs_dock_sized = False

        self._build_menus()
        self.statusBar().showMessage("Ready")

    # ----- menus ---------------------------------------------------------------------------
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self._action("&Open…", QKeySequence.StandardKey.Open, self.open_dialog))
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self._fill_recent_menu()
        file_menu.addAction(
            self._action(
                "&Close",
                QKeySequence.StandardKey.Close,
                lambda: self.close_document(self.tabs.currentIndex()),
            )
        )
        file_menu.addSeparator()
        file_menu.addAction(
            self._action(
                "Open &workspace…", QKeySequence("Ctrl+Shift+O"), self.open_workspace_dialog
            )
        )
        file_menu.addAction(
            self._action("&Save workspace…", QKeySequence.StandardKey.Save, self.save_workspace)
        )
        file_menu.addAction(
            self._action("&Export report…", QKeySequence("Ctrl+E"), self.export_report)
        )
        file_menu.addAction(
            self._action("Co&mpare with…", QKeySequence("Ctrl+Shift+D"), self.compare_dialog)
        )
        file_menu.addAction(
            self._action("&Preferences…", QKeySequence("Ctrl+,"), self.show_preferences)
        )
        file_menu.addSeparator()
        file_menu.addAction(self._action("&Quit", QKeySequence.StandardKey.Quit, self.close))

        view_menu = self.menuBar().addMenu("&View")
        view_menu.addAction(self._action("Next model", QKeySequence("Ctrl+Tab"), self._next_tab))
        jobs_toggle = self.jobs_dock.toggleViewAction()
        jobs_toggle.setText("&Jobs panel")
        jobs_toggle.setShortcut(QKeySequence("Ctrl+J"))
        view_menu.addAction(jobs_toggle)

        tools = self.menuBar().addMenu("&Tools")
        self.convert_action = self._action(
            "&Convert opset / axes…", QKeySequence("Ctrl+Shift+C"), self.show_convert_form
        )
        tools.addAction(self.convert_action)
        tools.addAction(
            self._action(
                "&Export from PyTorch…", QKeySequence("Ctrl+Shift+E"), self.show_export_form
            )
        )
        tools.addAction(
            self._action("&Quantize…", QKeySequence("Ctrl+Shift+Q"), self.show_quantize_form)
        )
        tools.addAction(self._action("&Auto-tune…", QKeySequence("Ctrl+Shift+T"), self.show_tune))

        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(
            self._action("&Keyboard shortcuts", QKeySequence("F1"), self.show_shortcuts)
        )
        help_menu.addAction(
            self._action("&User guide", QKeySequence("Shift+F1"), self.show_user_guide)
        )
        help_menu.addAction(self._action("&About EdgeStudio", None, self.show_about))

    def _action(
        self,
        text: str,
        shortcut: QKeySequence | QKeySequence.StandardKey | None,
        slot: Callable[[], object],
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        # Called with no argument: triggered(checked) would otherwise fill a slot's first
        # optional parameter (save_workspace(path=False) saved nothing and asked nothing).
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _next_tab(self) -> None:
        if self.tabs.count():
            self.tabs.setCurrentIndex((self.tabs.currentIndex() + 1) % self.tabs.count())

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        paths = self.recent.paths()
        for i, path in enumerate(paths):
            action = self.recent_menu.addAction(f"&{(i + 1) % 10} {Path(path).name}")
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _=False, p=path: self.open_model(p))
        if not paths:
            self.recent_menu.addAction("(no recent files)").setEnabled(False)
        else:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list").triggered.connect(self.recent.clear)

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
            return self.open_workspace(path)
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
        doc.quant_panel.requantize_form_requested.connect(
            lambda request, d=doc: self._requantize(d, request)
        )
        doc.requantize_requested.connect(lambda nodes, d=doc: self.exclude_and_requantize(d, nodes))
        doc.int16_requested.connect(
            lambda nodes, d=doc: self.exclude_and_requantize(d, nodes, in_16_bit=True)
        )
        doc.quant_panel.compare_requested.connect(lambda run, d=doc: self.compare_run(d, run))
        doc.quant_panel.tune_requested.connect(lambda run: self.show_tune(run.recipe))
        doc.quant_panel.recover_requested.connect(self.recover_accuracy)
        doc.quant_panel.rank_requested.connect(lambda run, n, d=doc: self.rank_layers(d, run, n))
        doc.perf_panel.apply_preferences(self.prefs)
        doc.perf_panel.bench_requested.connect(lambda r, d=doc: self.workflow.submit(r, d.document))
        doc.perf_panel.profile_requested.connect(
            lambda r, d=doc: self.workflow.submit(r, d.document)
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
            self._message(
                QMessageBox.Icon.Warning,
                "Model has problems",
                f"{loaded.path.name} was opened, but:",
                "\n\n".join(s.problems),
            )
        self.model_opened.emit(doc)
        restored = self._restores.pop(str(doc.path), None)
        if restored is not None:
            self._restore(doc, restored)
        else:
            self._offer_last_workspace(doc)
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
        self._message(QMessageBox.Icon.Critical, "Cannot open model", message, path)
        self.model_failed.emit(path, message)
        self._maybe_settled()

    def _maybe_settled(self) -> None:
        if not self._pending:
            self.loads_settled.emit()

    @property
    def loading(self) -> bool:
        """True while any model is still being parsed."""
        return bool(self._pending)

    def _message(
        self,
        icon: QMessageBox.Icon,
        title: str,
        text: str,
        detail: str,
        buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok,
        escape: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok,
    ) -> QMessageBox:
        # Non-modal so that loading other files (and tests) carry on while it is shown.
        # The buttons are final before the box opens: QMessageBox picks its Escape button
        # when shown, and buttons replaced afterwards left it pointing at a deleted one (Escape
        # then crashed the whole app under X11).
        box = QMessageBox(icon, title, text, buttons, self)
        box.setInformativeText(detail)
        box.setEscapeButton(escape)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.dialogs.append(box)
        # The handler holds a number, not the box: it runs while the box is being closed.
        ref = id(box)
        box.finished.connect(lambda _=0: self._forget_dialog(ref))
        box.open()
        return box

    def _forget_dialog(self, ref: int) -> None:
        self.dialogs[:] = [d for d in self.dialogs if id(d) != ref]

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
    def _run(self, recipe: Recipe, background: bool) -> Job:
        """The workflow's way to start a job: the window's queue, the Jobs panel shown."""
        job = self.jobs.submit(recipe, background=background)
        if not background and not isinstance(recipe, InputsRecipe):  # finding inputs is quiet
            self.show_jobs_dock()
            self.statusBar().showMessage(f"Started: {recipe.title()}", 5000)
        return job

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

    def submit(self, recipe: Recipe) -> Job:
        """Run ``recipe`` in the background and show the Jobs panel.

        A job that feeds a model takes the inputs set in that model's Inputs panel, unless the
        recipe already names some; its outcome goes to that model's document.
        """
        return self.workflow.submit(recipe)

    def show_convert_form(self) -> ConvertDialog | None:
        """Open the Convert form for the current model (non-modal); Run submits the job."""
        doc = self.current_document()
        if doc is None or doc.loaded is None:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
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

    def show_quantize_form(
        self, base: QuantRecipe | None = None, extra_exclude: list[str] | None = None
    ) -> QuantizeDialog | None:
        """Open the Quantize form for the current model (non-modal); Quantize submits the job."""
        doc = self.current_document()
        if doc is None or doc.loaded is None:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        excluded = sorted(doc.excluded | set(extra_exclude or []))
        dialog = QuantizeDialog(doc.loaded.model, doc.path, excluded, self, base=base)
        dialog.accepted.connect(
            lambda: self.start_quantization(
                doc, dialog.recipe(), dialog.analyze_data(), dialog.analyze_metric()
            )
        )
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def start_quantization(
        self,
        doc: DocumentView,
        recipe: QuantRecipe,
        analyze_on: DataSource | None,
        metric: str = "auto",
    ) -> QuantRun:
        """Submit a quantization (and, when it succeeds, its analysis) for ``doc``."""
        return self.workflow.quantize(doc.document, recipe, analyze_on, metric)

    def _requantize(self, doc: DocumentView, request: tuple[QuantRun, list[str]]) -> None:
        run, worst = request
        doc.set_excluded(doc.excluded | set(worst))
        self.show_quantize_form(base=run.recipe, extra_exclude=worst)

    def exclude_and_requantize(
        self, doc: DocumentView, nodes: frozenset[str], in_16_bit: bool = False
    ) -> QuantRun | None:
        """Keep ``nodes`` in float (or, ``in_16_bit``, in 16-bit: still integer), quantize as
        the last run did (its calibration comes from the cache) and, once the new run is done,
        compare the two runs side by side."""
        base = doc.requantize_base()
        if base is None:
            self.statusBar().showMessage("Quantize the model once first (Tools › Quantize…).", 5000)
            return None
        if in_16_bit:
            run = self.workflow.requantize_int16(doc.document, base, nodes)
            what = f"with {len(nodes)} more node(s) in 16-bit"
        else:
            run = self.workflow.requantize_excluding(doc.document, base, nodes)
            what = f"without {len(nodes)} more node(s)"
        doc.show_panel("quantization")
        self.statusBar().showMessage(
            f"Re-quantizing {what} as run #{base.number} did; the two runs are compared when "
            "it is done.",
            10_000,
        )

        def finished(changed: QuantRun) -> None:
            if changed is not run or not changed.state.is_final:
                return
            doc.document.run_changed.disconnect(finished)
            doc.quant_panel.select_runs([base, run])
            doc.quant_panel.show_comparison()

        doc.document.run_changed.connect(finished)
        return run

    def _show_providers(self, rows: list[ProviderProbe]) -> None:
        for doc in self.documents():
            if doc.is_loaded:
                doc.perf_panel.set_providers(rows)

    def _on_job_finished(self, job: Job) -> None:
        self.workflow.job_finished(job)
        if job.id in self.jobs.background:
            return  # the app's own probe: not news for the status bar
        verdict = job.state.value
        if job.state is JobState.SUCCEEDED and job.report is not None and job.report.check:
            verdict = job.report.check.verdict()
            reason = job.report.check.unchecked_reason()
            if reason:
                verdict += f" ({reason})"
        self.statusBar().showMessage(f"{job.recipe.title()}: {verdict}", 10_000)

    # ----- auto-tune --------------------------------------------------------------------------
    def show_tune(self, base: QuantRecipe | None = None) -> TuneWindow | None:
        """Open the auto-tune window for the current model (starting from ``base``, a run's
        recipe, when given)."""
        doc = self.current_document()
        if doc is None or not doc.is_loaded:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        providers = sorted(
            (p.provider for p in self.workflow.providers or [] if p.works),
            key=lambda p: p != "CPUExecutionProvider",
        )  # CPU first
        guesses = sorted(doc.path.parent.glob("*eval*.npz")) + sorted(
            doc.path.parent.glob("*calib*.npz")
        )
        window = TuneWindow(
            doc.path,
            providers,
            str(guesses[0]) if guesses else "",
            self,
            ray_address=self.prefs.ray_address,
            base=base,
            earlier=doc.document.tunes[-1] if doc.document.tunes else None,
            jobs=self.jobs,
        )
        window.candidate_chosen.connect(
            lambda c, d=doc: d.graph_panel.view.show_sqnr(
                c.analysis.sqnr_by_node(),
                c.analysis.representative,
                f"SQNR (dB), candidate #{c.number}",
                c.analysis.data_note(),
            )
        )
        window.keep_requested.connect(
            lambda candidate, tuner, d=doc: self._keep_tuned(d, candidate, tuner)
        )
        return _show_kept(window, self.tune_windows)

    def rank_layers(self, doc: DocumentView, run: QuantRun, count: int) -> None:
        """Rank ``run``'s ``count`` worst layers by the task (a background job; the
        Sensitivity tab and the graph show it when done)."""
        self.workflow.rank_layers(doc.document, run, count)
        self.statusBar().showMessage(
            f"Ranking {count} layers of run #{run.number} by the task: one quantization and "
            "analysis each, in the background (Jobs panel).",
            10_000,
        )

    def recover_accuracy(self, run: QuantRun) -> TuneWindow | None:
        """Open the tune window set to recover ``run``'s accuracy: its task's goal, the data
        it was judged on, integer only."""
        window = self.show_tune(run.recipe)
        if window is not None:
            data = (
                run.analyze_on.path
                if run.analyze_on is not None and run.analyze_on.kind != "synthetic"
                else ""
            )
            window.prepare_recovery(recovery_goal(run.analysis), data)
        return window

    def _keep_tuned(self, doc: DocumentView, candidate: Candidate, tuner: Tuner) -> QuantRun:
        """A tuned candidate becomes an ordinary quantization run of ``doc`` (with its
        analysis: the graph is coloured by its SQNR)."""
        target = doc.path.with_name(f"{doc.path.stem}_tuned_{candidate.number}.onnx")
        if not Path(str(candidate.recipe.output)).is_file():
            # measured by an earlier tune: no file to copy; quantized (calibration from the
            # cache) and analysed again as a background run, never on this thread
            run = self.start_quantization(
                doc,
                dataclasses.replace(candidate.recipe, output=str(target), overwrite=True),
                tuner.settings.data,
            )
            doc.document.record_tune(tuner_summary(tuner))
            doc.show_panel("quantization")
            self.statusBar().showMessage(
                f"Quantizing tuned candidate #{candidate.number} "
                f"again (measured by an earlier tune) as run "
                f"#{run.number}: {target}",
                10_000,
            )
            return run
        tuner.keep(candidate, target)
        run = doc.document.new_run(
            QuantRun(
                number=0,
                recipe=dataclasses.replace(candidate.recipe, output=str(target)),
                output=str(target),
                analysis=candidate.analysis,
                state=RunState.ANALYSED,
                quantization=Quantization(
                    float_bytes=doc.path.stat().st_size,
                    quant_bytes=candidate.quant_bytes or 0,
                    command=candidate.recipe.command_line(),
                ),
            )
        )
        doc.document.record_tune(tuner_summary(tuner))
        doc.document.overlay = Overlay(OverlayKind.SQNR, run.number)
        doc.show_panel("quantization")
        self.compare_run(doc, run)  # the kept model beside its float original, at its worst
        self.statusBar().showMessage(
            f"Kept tuned candidate #{candidate.number} as run #{run.number}: {target}", 10_000
        )
        return run

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
        return _show_kept(CompareView(a, b, sqnr, self, analysis=analysis), self.compare_views)

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

    # ----- workspaces ----------------------------------------------------------------------------
    def save_workspace(self, path: str | None = None) -> str | None:
        """Save the current model's document (runs, results, inputs…) to a workspace file."""
        doc = self.current_document()
        if doc is None or doc.loaded is None:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        if path is None:
            suggested = workspace.last_for(doc.path) or workspace.default_path(doc.path)
            path, _ = QFileDialog.getSaveFileName(
                self, "Save workspace", str(suggested), WORKSPACE_FILTER
            )
        if not path:
            return None
        try:
            saved = workspace.save(doc.document, path)
        except OSError as exc:
            self._message(
                QMessageBox.Icon.Critical,
                "Cannot save the workspace",
                f"{Path(path).name} could not be written.",
                str(exc.strerror or exc),
            )
            return None
        self.statusBar().showMessage(f"Workspace saved to {saved}", 10_000)
        return str(saved)

    def open_workspace_dialog(self) -> None:
        """Ask for a workspace file and open it."""
        path, _ = QFileDialog.getOpenFileName(self, "Open workspace", "", WORKSPACE_FILTER)
        if path:
            self.open_workspace(path)

    def open_workspace(self, path: str | Path) -> DocumentView | None:
        """Open a workspace: its model in a tab (or the open tab), with every result restored."""
        try:
            restored = workspace.load(path)
        except workspace.WorkspaceError as exc:
            self._message(
                QMessageBox.Icon.Critical, "Cannot open the workspace", str(exc), str(path)
            )
            return None
        if not restored.model_found:
            self._message(
                QMessageBox.Icon.Critical,
                "Cannot open the workspace",
                restored.warning() or "",
                str(path),
            )
            return None
        doc = self.open_model(restored.document.path)
        if doc.is_loaded:
            self._restore(doc, restored)
        else:
            self._restores[str(doc.path)] = restored
        return doc

    def _restore(self, doc: DocumentView, restored: workspace.Workspace) -> None:
        doc.document.restore(restored.document)
        warning = restored.warning()
        if warning:
            self._message(
                QMessageBox.Icon.Warning, "The model changed", warning, str(restored.path)
            )
        self.statusBar().showMessage(f"Workspace {restored.path.name} restored", 10_000)
        self.workspace_restored.emit(doc)

    def _offer_last_workspace(self, doc: DocumentView) -> None:
        """A model with a saved workspace: offer to bring its results back."""
        last = workspace.last_for(doc.path)
        if last is None:
            return
        yes, no = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No
        box = self._message(
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
        yes_button.clicked.connect(lambda _checked=False: self.open_workspace(last))

    # ----- misc ----------------------------------------------------------------------------
    def shortcut_list(self) -> list[tuple[str, str]]:
        """(keys, what they do) for every menu action with a shortcut, plus the graph's keys."""
        rows = [
            (
                a.shortcut().toString(QKeySequence.SequenceFormat.NativeText),
                a.text().replace("&", "").rstrip("…"),
            )
            for a in self.findChildren(QAction)
            if not a.shortcut().isEmpty()
        ]
        rows += [
            ("Ctrl+F / F3 / Shift+F3", "Graph: find, next, previous"),
            ("+ / − / wheel / pinch", "Graph: zoom"),
            ("F or 0", "Graph: readable overview"),
            ("A", "Graph: whole graph"),
            ("Esc", "Graph: clear the selection"),
            ("Right-click a node", "Graph: exclude it from quantization"),
        ]
        return rows

    def show_shortcuts(self) -> QMessageBox:
        """A table of keyboard shortcuts."""
        rows = "".join(
            f"<tr><td><b>{k}</b></td><td>&nbsp;&nbsp;{v}</td></tr>" for k, v in self.shortcut_list()
        )
        box = self._message(
            QMessageBox.Icon.Information,
            "Keyboard shortcuts",
            f"<table width=460>{rows}</table>",
            "",
        )
        return box

    def show_about(self) -> None:
        """Show the About box with library versions."""
        from importlib import metadata

        def version(dist: str) -> str:
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                return "not installed"

        import PySide6

        rows = [
            ("onnx", version("onnx")),
            ("onnxruntime", version("onnxruntime")),
            ("PySide6", PySide6.__version__),
            ("pyqtgraph", version("pyqtgraph")),
            ("torch", version("torch")),
        ]
        table = "".join(f"<tr><td>{n}</td><td>{v}</td></tr>" for n, v in rows)
        QMessageBox.about(
            self,
            "About EdgeStudio",
            f"<h3>EdgeStudio {__version__}</h3><p>See, convert, quantize and benchmark ONNX "
            f"models for edge devices.</p><table>{table}</table><p>EdgeStudio works offline and "
            "sends nothing anywhere; onnxruntime's telemetry is switched off in every process.</p>",
        )

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

    def export_report(self, path: str | None = None) -> str | None:
        """Write the current model's report as HTML (and JSON beside it)."""
        doc = self.current_document()
        if doc is None or doc.loaded is None:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self,
                "Export report",
                str(doc.path.with_name(f"{doc.path.stem}_report.html")),
                "HTML report (*.html)",
            )
        if not path:
            return None
        html_path, _ = write_report(path, report_from_document(doc.document))
        self.statusBar().showMessage(f"Report written to {html_path}", 10_000)
        return str(html_path)

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
