"""The main window's quantization actions: the Quantize form, re-quantizing with nodes kept in
float or 16-bit, ranking layers, auto-tune and recovering accuracy, keeping a tuned candidate.
The runs themselves are built by the Qt-free workflow; these open the windows and say what
happens."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QMainWindow

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_runs import QuantRun, RunState
from edgestudio.core.quant.tune import Candidate
from edgestudio.core.quant.tune_goal import recovery_goal
from edgestudio.core.workspace.preferences import Preferences
from edgestudio.gui.document_view import DocumentView
from edgestudio.gui.forms.data_memory import DataMemory
from edgestudio.gui.forms.quantize_form import QuantizeDialog
from edgestudio.gui.job_controller import JobController
from edgestudio.gui.model.compare_view import CompareView
from edgestudio.gui.quant.tune_window import TuneWindow
from edgestudio.gui.widgets.kept_windows import show_kept
from edgestudio.jobs.tuner import Tuner
from edgestudio.jobs.workflow import Workflow


class QuantHost(Protocol):
    """What the quantization actions need of the main window."""

    workflow: Workflow
    jobs: JobController
    settings: QSettings
    prefs: Preferences
    tune_windows: list[TuneWindow]

    def loaded_document(self) -> DocumentView | None:
        """The current tab's model, once loaded."""

    def compare_run(self, doc: DocumentView, run: QuantRun) -> CompareView | None:
        """Compare a run's model with its original."""


class QuantActions:
    """Quantize, re-quantize, rank, tune, recover, keep: for the window's open models."""

    def __init__(self, window: QMainWindow, host: QuantHost) -> None:
        self.window = window  # the forms' parent and its status bar
        self.host = host  # the window itself: a protocol, so that this part imports no window

    def attach(self, doc: DocumentView) -> None:
        """Answer ``doc``'s requests (its panels' buttons, the graph's menu) from now on."""
        doc.quant_panel.requantize_form_requested.connect(
            lambda request, d=doc: self.requantize_form(d, request)
        )
        doc.requantize_requested.connect(lambda nodes, d=doc: self.exclude_and_requantize(d, nodes))
        doc.int16_requested.connect(
            lambda nodes, d=doc: self.exclude_and_requantize(d, nodes, in_16_bit=True)
        )
        doc.quant_panel.compare_requested.connect(lambda run, d=doc: self.host.compare_run(d, run))
        doc.quant_panel.tune_requested.connect(lambda run: self.show_tune(run.recipe))
        doc.quant_panel.recover_requested.connect(self.recover_accuracy)
        doc.quant_panel.rank_requested.connect(lambda run, n, d=doc: self.rank_layers(d, run, n))

    def show_quantize_form(
        self, base: QuantRecipe | None = None, extra_exclude: list[str] | None = None
    ) -> QuantizeDialog | None:
        """Open the Quantize form for the current model (non-modal); Quantize submits the job."""
        doc = self.host.loaded_document()
        if doc is None or doc.loaded is None:
            return None
        excluded = sorted(doc.excluded | set(extra_exclude or []))
        dialog = QuantizeDialog(
            doc.loaded.model,
            doc.path,
            excluded,
            self.window,
            base=base,
            memory=DataMemory(self.host.settings),
        )
        dialog.accepted.connect(
            lambda: self.start_quantization(
                doc,
                dialog.recipe(),
                dialog.analyze_data(),
                dialog.analyze_metric(),
                dialog.analyze_target(),
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
        judge_on: str = "",
    ) -> QuantRun:
        """Submit a quantization (and, when it succeeds, its analysis) for ``doc``; judged
        on ``judge_on`` ("": the target it is quantized for)."""
        return self.host.workflow.quantize(doc.document, recipe, analyze_on, metric, judge_on)

    def requantize_form(self, doc: DocumentView, request: tuple[QuantRun, list[str]]) -> None:
        """The Quantize form prefilled from a run, with its worst layers excluded."""
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
            self._say("Quantize the model once first (Tools › Quantize…).", 5000)
            return None
        if in_16_bit:
            run = self.host.workflow.requantize_int16(doc.document, base, nodes)
            what = f"with {len(nodes)} more node(s) in 16-bit"
        else:
            run = self.host.workflow.requantize_excluding(doc.document, base, nodes)
            what = f"without {len(nodes)} more node(s)"
        doc.show_panel("quantization")
        self._say(
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

    def show_tune(self, base: QuantRecipe | None = None) -> TuneWindow | None:
        """Open the auto-tune window for the current model (starting from ``base``, a run's
        recipe, when given)."""
        doc = self.host.loaded_document()
        if doc is None:
            return None
        providers = sorted(
            (p.provider for p in self.host.workflow.providers or [] if p.works),
            key=lambda p: p != "CPUExecutionProvider",
        )  # CPU first
        guesses = sorted(doc.path.parent.glob("*eval*.npz")) + sorted(
            doc.path.parent.glob("*calib*.npz")
        )
        window = TuneWindow(
            doc.path,
            providers,
            str(guesses[0]) if guesses else "",
            self.window,
            ray_address=self.host.prefs.ray_address,
            base=base,
            earlier=doc.document.tunes[-1] if doc.document.tunes else None,
            jobs=self.host.jobs,
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
            lambda candidate, tuner, d=doc: self.keep_tuned(d, candidate, tuner)
        )
        return show_kept(window, self.host.tune_windows)

    def rank_layers(self, doc: DocumentView, run: QuantRun, count: int) -> None:
        """Rank ``run``'s ``count`` worst layers by the task (a background job; the
        Sensitivity tab and the graph show it when done)."""
        self.host.workflow.rank_layers(doc.document, run, count)
        self._say(
            f"Ranking {count} layers of run #{run.number} by the task: one quantization and "
            "analysis each, in the background (Jobs panel).",
            10_000,
        )

    def recover_accuracy(self, run: QuantRun) -> TuneWindow | None:
        """Open the tune window set to recover ``run``'s accuracy: its task's goal, the data
        it was judged on, integer only."""
        window = self.show_tune(run.recipe)
        if window is not None:
            judged = run.analyze_on
            data = judged.path if judged is not None and judged.kind != "synthetic" else ""
            calib = run.recipe.calib
            window.prepare_recovery(
                recovery_goal(run.analysis),
                data,
                # the run's own calibration data, where it had data of its own
                calib.path
                if calib is not None and calib.kind != "synthetic" and calib.path != data
                else "",
                # as many samples as the run was judged on (0: every one)
                judged.samples if judged is not None and data else 0,
            )
        return window

    def keep_tuned(self, doc: DocumentView, candidate: Candidate, tuner: Tuner) -> QuantRun:
        """A tuned candidate becomes an ordinary quantization run of ``doc``; shown beside its
        float original when its analysis came with it."""
        target = doc.path.with_name(f"{doc.path.stem}_tuned_{candidate.number}.onnx")
        run = self.host.workflow.keep_tuned(doc.document, candidate, tuner, target)
        doc.show_panel("quantization")
        if run.state is RunState.ANALYSED:
            self.host.compare_run(doc, run)  # the kept model beside its float original
            self._say(f"Kept tuned candidate #{candidate.number} as run #{run.number}: {target}")
        else:
            self._say(
                f"Quantizing tuned candidate #{candidate.number} again (measured by an earlier "
                f"tune) as run #{run.number}: {target}"
            )
        return run

    def _say(self, text: str, ms: int = 10_000) -> None:
        self.window.statusBar().showMessage(text, ms)
