"""The main window: menus, the document tabs, drag-and-drop and error dialogs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from edgestudio.core.bench_recipes import BenchRecipe, ProbeRecipe, ProfileRecipe
from edgestudio.core.data_source import DataSource
from edgestudio.core.input_spec import InputSpecification
from edgestudio.core.preferences import Preferences
from edgestudio.core.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant_runs import QuantRun
from edgestudio.core.recipes import Recipe
from edgestudio.core.report import ReportData, write_report
from edgestudio.gui.document_view import DocumentView
from edgestudio.gui.forms.convert_form import ConvertDialog
from edgestudio.gui.forms.export_form import ExportDialog
from edgestudio.gui.forms.quantize_form import QuantizeDialog
from edgestudio.gui.job_controller import JobController
from edgestudio.gui.jobs_panel import JobsPanel
from edgestudio.gui.model_loader import LoadedModel, ModelLoader
from edgestudio.gui.preferences_dialog import (
    PreferencesDialog,
    apply_theme,
    load_preferences,
    save_preferences,
)
from edgestudio.gui.quant_panel import sqnr_by_node
from edgestudio.gui.recent_files import RecentFiles
from edgestudio.jobs.runner import Job, JobState

MODEL_FILTER = "ONNX models (*.onnx *.ort *.pb);;All files (*)"


def _png(widget: QWidget) -> bytes:
    """A widget's current look as PNG bytes (for reports)."""
    from PySide6.QtCore import QBuffer, QIODevice

    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    widget.grab().save(buffer, "PNG")
    return bytes(buffer.data().data())


class MainWindow(QMainWindow):
    """EdgeStudio's top-level window. Several models can be open at once, one tab each."""

    model_opened = Signal(object)  # DocumentView
    model_failed = Signal(str, str)  # path, message
    loads_settled = Signal()  # no load is pending any more

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

        self._quant_jobs: dict[str, tuple[DocumentView, QuantRun, DataSource | None]] = {}
        self._perf_jobs: dict[str, DocumentView] = {}
        self._inputs_jobs: dict[str, DocumentView] = {}
        self._probe: list[dict[str, object]] | None = None
        self._probe_job: Job | None = None
        self.jobs = JobController(self)
        self.jobs.job_finished.connect(self._on_job_finished)
        self.jobs_panel = JobsPanel(self.jobs)
        self.jobs_panel.open_result_requested.connect(self.open_model)
        self.jobs_dock = QDockWidget("Jobs", self)
        self.jobs_dock.setObjectName("jobs_dock")
        self.jobs_dock.setWidget(self.jobs_panel)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.jobs_dock)
        self.jobs_dock.hide()

        self._build_menus()
        self.statusBar().showMessage("Ready")

    # ----- menus ---------------------------------------------------------------------------
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(self._action("&Open…", QKeySequence.StandardKey.Open, self.open_dialog))
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self._fill_recent_menu()
        file_menu.addAction(self._action(
            "&Close", QKeySequence.StandardKey.Close,
            lambda: self.close_document(self.tabs.currentIndex())))
        file_menu.addAction(self._action("&Export report…", QKeySequence("Ctrl+E"),
                                         self.export_report))
        file_menu.addAction(self._action("&Preferences…", QKeySequence("Ctrl+,"),
                                         self.show_preferences))
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
            "&Convert opset / axes…", QKeySequence("Ctrl+Shift+C"), self.show_convert_form)
        tools.addAction(self.convert_action)
        tools.addAction(self._action(
            "&Export from PyTorch…", QKeySequence("Ctrl+Shift+E"), self.show_export_form))
        tools.addAction(self._action(
            "&Quantize…", QKeySequence("Ctrl+Shift+Q"), self.show_quantize_form))

        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(self._action("&Keyboard shortcuts", QKeySequence("F1"),
                                         self.show_shortcuts))
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
        action.triggered.connect(slot)
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
            self.open_model(path)

    def receive_files(self, paths: list[str]) -> None:
        """Open files handed over by another launch or the OS, and come to the front."""
        for path in paths:
            self.open_model(path)
        if self.isMinimized():
            self.showNormal()
        self.raise_()
        self.activateWindow()

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
        doc.quant_panel.requantize_requested.connect(
            lambda request, d=doc: self._requantize(d, request))
        doc.perf_panel.apply_preferences(self.prefs)
        doc.perf_panel.bench_requested.connect(lambda r, d=doc: self._submit_for(d, r))
        doc.perf_panel.profile_requested.connect(lambda r, d=doc: self._submit_for(d, r))
        doc.inputs_panel.find_requested.connect(lambda r, d=doc: self._find_inputs(d, r))
        if self._probe is not None:
            doc.perf_panel.set_providers(self._probe)
        elif self._probe_job is None:
            self._probe_job = self.jobs.submit(ProbeRecipe(), background=True)
        self.recent.add(loaded.path)
        s = loaded.summary
        self.statusBar().showMessage(
            f"{loaded.path.name}: {s.nodes:,} nodes, {s.parameters:,} parameters", 10_000
        )
        if s.problems:
            self._message(
                QMessageBox.Icon.Warning, "Model has problems",
                f"{loaded.path.name} was opened, but:", "\n\n".join(s.problems),
            )
        self.model_opened.emit(doc)
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

    def _message(self, icon: QMessageBox.Icon, title: str, text: str, detail: str) -> QMessageBox:
        # Non-modal so that loading other files (and tests) carry on while it is shown.
        box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, self)
        box.setInformativeText(detail)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(lambda _=0: self._forget_dialog(box))
        self.dialogs.append(box)
        box.open()
        return box

    def _forget_dialog(self, box: QMessageBox) -> None:
        if box in self.dialogs:
            self.dialogs.remove(box)

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
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        for path in files:
            self.open_model(path)
        if files:
            event.acceptProposedAction()

    # ----- jobs ------------------------------------------------------------------------------
    def submit(self, recipe: Recipe) -> Job:
        """Run ``recipe`` in the background and show the Jobs panel.

        A job that feeds a model takes the inputs set in that model's Inputs panel, unless the
        recipe already names some.
        """
        recipe = self._with_inputs(recipe)
        job = self.jobs.submit(recipe)
        self.jobs_dock.show()
        self.statusBar().showMessage(f"Started: {recipe.title()}", 5000)
        return job

    def _with_inputs(self, recipe: Recipe) -> Recipe:
        shapes, ranges = getattr(recipe, "shapes", None), getattr(recipe, "ranges", None)
        if shapes is None or ranges is None or (shapes and ranges):
            return recipe  # feeds no model, or names its inputs itself
        model = (getattr(recipe, "models", None) or (getattr(recipe, "model", ""),))[0]
        doc = next((d for d in self.documents()
                    if d.is_loaded and str(d.path) == str(Path(model).absolute())), None)
        if doc is None or not doc.inputs_panel.overrides:
            return recipe
        given = doc.inputs_panel.overrides
        changes: dict[str, Any] = {"shapes": shapes or given.shapes,
                                   "ranges": ranges or given.ranges}
        return dataclasses.replace(recipe, **changes)

    def _find_inputs(self, doc: DocumentView, recipe: Recipe) -> Job:
        job = self.jobs.submit(recipe)
        self._inputs_jobs[job.id] = doc
        return job

    def _on_inputs_job_finished(self, job: Job) -> None:
        doc = self._inputs_jobs.pop(job.id, None)
        if doc is None or not doc.is_loaded:
            return
        if job.state is JobState.SUCCEEDED and job.report is not None:
            doc.inputs_panel.show_spec(InputSpecification.from_dict(job.report.details["spec"]))
        else:
            doc.inputs_panel.show_error(job.error or job.state.value)

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

    def show_quantize_form(self, base: QuantRecipe | None = None,
                           extra_exclude: list[str] | None = None) -> QuantizeDialog | None:
        """Open the Quantize form for the current model (non-modal); Quantize submits the job."""
        doc = self.current_document()
        if doc is None or doc.loaded is None:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        excluded = sorted(doc.excluded | set(extra_exclude or []))
        dialog = QuantizeDialog(doc.loaded.model, doc.path, excluded, self, base=base)
        dialog.accepted.connect(lambda: self.start_quantization(doc, dialog.recipe(),
                                                                dialog.analyze_data()))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def start_quantization(self, doc: DocumentView, recipe: QuantRecipe,
                           analyze_on: DataSource | None) -> QuantRun:
        """Submit a quantization (and, when it succeeds, its analysis) for ``doc``."""
        run = QuantRun(number=len(doc.quant_panel.runs) + 1, recipe=recipe)
        doc.quant_panel.add_run(run)
        job = self.submit(recipe)
        self._quant_jobs[job.id] = (doc, run, analyze_on)
        return run

    def _requantize(self, doc: DocumentView, request: tuple[QuantRun, list[str]]) -> None:
        run, worst = request
        doc.set_excluded(doc.excluded | set(worst))
        self.show_quantize_form(base=run.recipe, extra_exclude=worst)

    def _on_quant_job_finished(self, job: Job) -> bool:
        """Book-keeping for quantize/analyze jobs; True when ``job`` was one of them."""
        entry = self._quant_jobs.pop(job.id, None)
        if entry is None:
            return False
        doc, run, analyze_on = entry
        if isinstance(job.recipe, AnalyzeRecipe):
            if job.state is JobState.SUCCEEDED and job.report is not None:
                run.analysis = job.report.details
                run.state = "analysed"
                doc.quant_panel.refresh_run(run)
                doc.show_sqnr_overlay(sqnr_by_node(run))
            else:
                run.state = f"analysis {job.state.value}"
                run.error = job.error
                doc.quant_panel.refresh_run(run)
            return True
        if job.state is not JobState.SUCCEEDED or job.report is None:
            run.state = job.state.value
            run.error = job.error
            doc.quant_panel.refresh_run(run)
            return True
        run.output = job.report.output
        run.quant_details = job.report.details
        if run.output:
            doc.perf_panel.add_model(run.output)
        run.state = "quantized"
        doc.quant_panel.refresh_run(run)
        if analyze_on is not None and run.output:
            analysis = self.submit(AnalyzeRecipe(float_model=str(doc.path),
                                                 quant_model=run.output, data=analyze_on))
            run.state = "analysing"
            doc.quant_panel.refresh_run(run)
            self._quant_jobs[analysis.id] = (doc, run, None)
        return True

    def _submit_for(self, doc: DocumentView, recipe: Recipe) -> Job:
        """Submit a benchmark or profile whose results go to ``doc``'s Performance tab."""
        job = self.submit(recipe)
        self._perf_jobs[job.id] = doc
        return job

    def _on_perf_job_finished(self, job: Job) -> None:
        if job is self._probe_job:
            if job.state is JobState.SUCCEEDED and job.report is not None:
                self._probe = job.report.details["providers"]
                for open_doc in self.documents():
                    if open_doc.is_loaded:
                        open_doc.perf_panel.set_providers(self._probe or [])
            return
        doc = self._perf_jobs.pop(job.id) if job.id in self._perf_jobs else None
        if doc is None or job.report is None or job.state is not JobState.SUCCEEDED:
            return
        if isinstance(job.recipe, BenchRecipe):
            doc.perf_panel.show_results(job.report.details["results"],
                                        job.report.details.get("verdicts"))
        elif isinstance(job.recipe, ProfileRecipe):
            doc.perf_panel.show_profile(job.report.details, job.report.warnings)

    def _on_job_finished(self, job: Job) -> None:
        self._on_inputs_job_finished(job)
        self._on_quant_job_finished(job)
        self._on_perf_job_finished(job)
        if job.id in self.jobs.background:
            return  # the app's own probe: not news for the status bar
        verdict = job.state.value
        if job.state is JobState.SUCCEEDED and job.report is not None and job.report.check:
            verdict = job.report.check.verdict()
            reason = job.report.check.unchecked_reason()
            if reason:
                verdict += f" ({reason})"
        self.statusBar().showMessage(f"{job.recipe.title()}: {verdict}", 10_000)

    # ----- misc ----------------------------------------------------------------------------
    def shortcut_list(self) -> list[tuple[str, str]]:
        """(keys, what they do) for every menu action with a shortcut, plus the graph's keys."""
        rows = [(a.shortcut().toString(QKeySequence.SequenceFormat.NativeText),
                 a.text().replace("&", "").rstrip("…"))
                for a in self.findChildren(QAction) if not a.shortcut().isEmpty()]
        rows += [("Ctrl+F / F3 / Shift+F3", "Graph: find, next, previous"),
                 ("+ / − / wheel / pinch", "Graph: zoom"), ("F or 0", "Graph: readable overview"),
                 ("A", "Graph: whole graph"), ("Esc", "Graph: clear the selection"),
                 ("Right-click a node", "Graph: exclude it from quantization")]
        return rows

    def show_shortcuts(self) -> QMessageBox:
        """A table of keyboard shortcuts."""
        rows = "".join(f"<tr><td><b>{k}</b></td><td>&nbsp;&nbsp;{v}</td></tr>"
                       for k, v in self.shortcut_list())
        box = self._message(QMessageBox.Icon.Information, "Keyboard shortcuts",
                            f"<table width=460>{rows}</table>", "")
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

        rows = [("onnx", version("onnx")), ("onnxruntime", version("onnxruntime")),
                ("PySide6", PySide6.__version__), ("pyqtgraph", version("pyqtgraph")),
                ("torch", version("torch"))]
        table = "".join(f"<tr><td>{n}</td><td>{v}</td></tr>" for n, v in rows)
        QMessageBox.about(
            self, "About EdgeStudio",
            f"<h3>EdgeStudio {__version__}</h3><p>See, convert, quantize and benchmark ONNX "
            f"models for edge devices.</p><table>{table}</table><p>EdgeStudio works offline and "
            "sends nothing anywhere; onnxruntime's telemetry is switched off in every process.</p>",
        )

    def closeEvent(self, event: QCloseEvent) -> None:
        running = self.jobs.user_jobs_running()
        if running and self.isVisible() and not self._confirm_quit(len(running)):
            event.ignore()
            return
        self.jobs.shutdown()
        self.loader.wait()
        for doc in self.documents():
            doc.shutdown()
        super().closeEvent(event)

    def show_preferences(self) -> PreferencesDialog:
        """Open Preferences (non-modal); OK stores and applies them."""
        dialog = PreferencesDialog(self.prefs, self)
        dialog.accepted.connect(lambda: self.set_preferences(dialog.preferences()))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def set_preferences(self, prefs: Preferences) -> None:
        """Store ``prefs`` and apply them to the theme and every open model's forms."""
        self.prefs = prefs
        save_preferences(self.settings, prefs)
        apply_theme(prefs.theme)
        for doc in self.documents():
            if doc.is_loaded:
                doc.perf_panel.apply_preferences(prefs)

    def report_data(self, doc: DocumentView) -> ReportData:
        """Everything done to ``doc``'s model this session, as plain data and PNGs."""
        assert doc.loaded is not None
        path = str(doc.path)
        jobs = []
        for job in self.jobs.jobs:
            if job.id in self.jobs.background or path not in job.recipe.input_paths():
                continue
            report = job.report.to_dict() if job.report else {}
            jobs.append({"title": job.recipe.title(), "state": job.state.value,
                         "command": job.recipe.command_line(), "output": report.get("output"),
                         "error": job.error, "check": report.get("check")})
        runs = [{"summary": run.summary(), "layers": run.layers_worst_first(),
                 "command": run.recipe.command_line(),
                 "verdict": (run.analysis or {}).get("verdict")} for run in doc.quant_panel.runs]
        images = {}
        if doc.quant_panel.current is not None:
            images["sqnr"] = _png(doc.quant_panel.plot)
        if doc.perf_panel.results:
            images["latency"] = _png(doc.perf_panel.dist_plot)
            images["medians"] = _png(doc.perf_panel.median_plot)
        return ReportData(title=f"EdgeStudio report: {doc.path.name}",
                          summary=doc.loaded.summary.to_json(), jobs=jobs, quant_runs=runs,
                          latency=doc.perf_panel.results,
                          latency_verdicts=doc.perf_panel.latency_verdicts,
                          profile=doc.perf_panel.profile,
                          images=images)

    def export_report(self, path: str | None = None) -> str | None:
        """Write the current model's report as HTML (and JSON beside it)."""
        doc = self.current_document()
        if doc is None or doc.loaded is None:
            self.statusBar().showMessage("Open a model first (Ctrl+O).", 5000)
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self, "Export report", str(doc.path.with_name(f"{doc.path.stem}_report.html")),
                "HTML report (*.html)")
        if not path:
            return None
        html_path, _ = write_report(path, self.report_data(doc))
        self.statusBar().showMessage(f"Report written to {html_path}", 10_000)
        return str(html_path)

    def _confirm_quit(self, count: int) -> bool:
        answer = QMessageBox.question(
            self, "Jobs are running",
            f"{count} job{'s are' if count > 1 else ' is'} still running. Cancel and quit?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def set_window_icon(self, icon: QIcon) -> None:
        """Use ``icon`` for the window (and the taskbar)."""
        self.setWindowIcon(icon)
