"""The workflow: which document a job works for, what its outcome changes, what follows it.

It submits to the session's job queue (the window's, a test's loop) and is fed the jobs that
finish, by the scheduler it follows or by whoever runs them; it puts each outcome into the
document it belongs to and starts the jobs that follow (a quantization with evaluation data is
analysed next). It holds no Qt and knows no window: the window hears of the jobs a person
started from :attr:`Workflow.started`, the GUI connects the document's signals to its panels,
and the same chain runs in tests without a display.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from psygnal import Signal

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.model.cost_recipe import CostRecipe, ModelCost
from edgestudio.core.model.tensor_shapes import Shapes, ShapesRecipe
from edgestudio.core.perf.bench_recipes import BenchRecipe, ProbeRecipe, ProfileRecipe
from edgestudio.core.perf.perf_results import Latency, Profile, ProviderProbe
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Quantization
from edgestudio.core.quant.quant_runs import QuantRun, RunState
from edgestudio.core.quant.sensitivity import Sensitivity, SensitivityRecipe
from edgestudio.core.quant.tune import Candidate
from edgestudio.core.serialise import to_json
from edgestudio.core.targets.target_recipe import (
    TargetCheck,
    TargetCheckRecipe,
    TargetCompile,
    TargetCompileRecipe,
)
from edgestudio.core.workspace.document import (
    JobRecord,
    ModelDocument,
    Overlay,
    OverlayKind,
)
from edgestudio.jobs.quant_pipeline import Judging, QuantizeThenAnalyse
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import JobQueue
from edgestudio.jobs.tuner import Tuner, tuner_summary

R = TypeVar("R")
AnyRecipe = TypeVar("AnyRecipe", bound=Recipe[Any])


@dataclass
class _Route:
    """What a running job is for: a document, and the quantization run it is a step of."""

    document: ModelDocument | None
    run: QuantRun | None = None
    chain: QuantizeThenAnalyse | None = None


class Workflow:
    """Routes job outcomes into documents and chains quantize → analyse."""

    providers_found = Signal(object)  # list[ProviderProbe]
    started = Signal(object)  # Job: one a person started (not the app's own, not input finding)

    def __init__(self, jobs: JobQueue) -> None:
        """``jobs`` runs what the workflow starts; the workflow hears of each finished job
        from it (:meth:`job_finished`)."""
        self.jobs = jobs
        self.documents: list[ModelDocument] = []
        self.providers: list[ProviderProbe] | None = None
        self._routes: dict[str, _Route] = {}
        self._probe: Job[Any] | None = None
        jobs.follow(self.job_finished)

    # ----- documents -----------------------------------------------------------------------
    def add_document(self, document: ModelDocument) -> None:
        """Follow jobs on ``document``'s model from now on."""
        if document not in self.documents:
            self.documents.append(document)

    def remove_document(self, document: ModelDocument) -> None:
        """Stop following ``document`` (closed); its running jobs go on, their outcome is lost."""
        if document in self.documents:
            self.documents.remove(document)
        for route in self._routes.values():
            if route.document is document:
                route.document = None

    def document_for(self, path: str | Path) -> ModelDocument | None:
        """The open document of the model at ``path``."""
        absolute = Path(path).absolute()
        return next((d for d in self.documents if d.path == absolute), None)

    # ----- starting jobs -------------------------------------------------------------------
    def submit(
        self, recipe: Recipe[Any], document: ModelDocument | None = None, background: bool = False
    ) -> Job[Any]:
        """Start ``recipe`` with the inputs the user set for the model it feeds.

        Its outcome goes to ``document``, by default the open document of the first model the
        recipe reads. ``background`` marks work the app does for itself (shape inference).
        """
        recipe = self.with_inputs(recipe)
        if document is None:
            document = next(
                (
                    d
                    for path in recipe.input_paths()
                    if path
                    for d in [self.document_for(path)]
                    if d is not None
                ),
                None,
            )
        job = self._start(recipe, background)
        self._routes[job.id] = _Route(document)
        return job

    def _start(self, recipe: Recipe[R], background: bool) -> Job[R]:
        job = self.jobs.submit(recipe, background=background)
        if not background and not isinstance(recipe, InputsRecipe):  # finding inputs is quiet
            self.started.emit(job)
        return job

    def with_inputs(self, recipe: AnyRecipe) -> AnyRecipe:
        """``recipe`` with its model's input overrides, unless it names inputs itself."""
        shapes, ranges = getattr(recipe, "shapes", None), getattr(recipe, "ranges", None)
        if shapes is None or ranges is None or (shapes and ranges):
            return recipe  # feeds no model, or names its inputs itself
        model = (
            getattr(recipe, "models", None)
            or (getattr(recipe, "model", "") or getattr(recipe, "float_model", ""),)
        )[0]
        document = self.document_for(model) if model else None
        if document is None or not document.inputs:
            return recipe
        given = document.inputs
        changes: dict[str, Any] = {
            "shapes": shapes or given.shapes,
            "ranges": ranges or given.ranges,
        }
        return dataclasses.replace(recipe, **changes)

    def quantize(
        self,
        document: ModelDocument,
        recipe: QuantRecipe,
        analyze_on: DataSource | None = None,
        metric: str = "auto",
        judge_on: str = "",
    ) -> QuantRun:
        """Quantize ``document``'s model; analyse the result on ``analyze_on`` when given,
        judged by the task ``metric`` (``auto``: detected) on ``judge_on`` ("": the target it
        is quantized for; "openvino": in OpenVINO's onnxruntime)."""
        run = document.new_run(
            QuantRun(number=0, recipe=recipe, analyze_on=analyze_on, metric=metric)
        )
        judging = None if analyze_on is None else Judging(analyze_on, metric, judge_on)
        chain = QuantizeThenAnalyse.start(self.jobs, self.with_inputs(recipe), judging)
        self._follow(document, run, chain)
        return run

    def _follow(self, document: ModelDocument, run: QuantRun, chain: QuantizeThenAnalyse) -> None:
        """Route the job ``chain`` runs now to ``run`` (a person started it: announced)."""
        self.started.emit(chain.job)
        self._routes[chain.job.id] = _Route(document, run, chain)

    def requantize_excluding(
        self, document: ModelDocument, run: QuantRun, nodes: set[str] | frozenset[str]
    ) -> QuantRun:
        """Quantize again as ``run`` was, keeping ``nodes`` in float too, and analyse the
        result on the same data by the same metric (the exclude → re-quantize loop; the
        calibration is reused from the cache)."""
        document.exclude(document.excluded | set(nodes))
        return self.quantize(document, run.with_more_excluded(nodes), run.analyze_on, run.metric)

    def rank_layers(self, document: ModelDocument, run: QuantRun, top: int = 10) -> Job[Any]:
        """Rank ``run``'s layers by what keeping each alone in 16-bit gives back on its task,
        measured on the data its analysis ran on (the graph is coloured by it when done)."""
        assert run.analyze_on is not None
        recipe = SensitivityRecipe(
            base=dataclasses.replace(run.recipe, output=None),
            data=run.analyze_on,
            metric=run.metric,
            top=top,
        )
        return self.submit(recipe, document)

    def requantize_int16(
        self, document: ModelDocument, run: QuantRun, nodes: set[str] | frozenset[str]
    ) -> QuantRun:
        """Quantize again as ``run`` was (QDQ), keeping ``nodes`` in 16-bit too (the rest stays
        8-bit and integer), and analyse it the same way (calibration from the cache)."""
        return self.quantize(document, run.with_more_int16(nodes), run.analyze_on, run.metric)

    def keep_tuned(
        self, document: ModelDocument, candidate: Candidate, tuner: Tuner, target: Path
    ) -> QuantRun:
        """A tuned candidate as an ordinary quantization run of ``document``, its model at
        ``target``: copied there with its analysis (the graph coloured by its SQNR), or — when
        an earlier tune measured it and left no file — quantized and analysed again in the
        background (calibration from the cache). The tune is recorded either way."""
        if not Path(str(candidate.recipe.output)).is_file():
            run = self.quantize(
                document,
                dataclasses.replace(candidate.recipe, output=str(target), overwrite=True),
                tuner.settings.data,
            )
        else:
            tuner.keep(candidate, target)
            run = document.new_run(
                QuantRun(
                    number=0,
                    recipe=dataclasses.replace(candidate.recipe, output=str(target)),
                    output=str(target),
                    analysis=candidate.analysis,
                    state=RunState.ANALYSED,
                    quantization=Quantization(
                        float_bytes=document.path.stat().st_size,
                        quant_bytes=candidate.quant_bytes or 0,
                        command=candidate.recipe.command_line(),
                    ),
                )
            )
            document.overlay = Overlay(OverlayKind.SQNR, run.number)
        document.record_tune(tuner_summary(tuner))
        return run

    def adopt(
        self,
        job: Job[Any],
        document: ModelDocument,
        run: QuantRun | None = None,
        chain: QuantizeThenAnalyse | None = None,
    ) -> None:
        """Follow a job someone else started (the command line's) for ``document``;
        :meth:`job_finished` then puts its outcome there as for a job started here. A step of
        a quantization comes with its ``run`` and the ``chain`` it is a job of."""
        self._routes[job.id] = _Route(document, run, chain)

    def find_inputs(self, document: ModelDocument, recipe: InputsRecipe) -> Job[Any]:
        """Find the inputs ``document``'s model runs on."""
        return self.submit(recipe, document)

    def probe_providers(self) -> Job[Any] | None:
        """Find which execution providers work (once per session, in the background)."""
        if self._probe is None and self.providers is None:
            self._probe = self._start(ProbeRecipe(), True)
        return self._probe

    # ----- outcomes ------------------------------------------------------------------------
    def job_finished(self, job: Job[Any]) -> None:
        """Put a finished job's outcome where it belongs and start what follows it."""
        ok = job.state is JobState.SUCCEEDED and job.report is not None
        if job is self._probe:
            self._probe = None
            if ok:
                assert job.report is not None
                self.providers = job.report.result.providers
                self.providers_found.emit(self.providers)
            return
        route = self._routes.pop(job.id, None)
        if route is None or route.document is None:
            return
        document = route.document
        self._record(document, job)
        if route.run is not None and route.chain is not None:
            self._quant_outcome(document, route.run, route.chain)
            return
        outcome = self._OUTCOMES.get(type(job.recipe))
        if outcome is None:
            return
        succeeded, failed = outcome
        if ok:
            assert job.report is not None
            succeeded(self, document, job, job.report.result)
        elif failed is not None:
            failed(document, job.error or job.state.value)

    # What a finished job of each kind that works for a document puts there: (on success,
    # given the typed result; on failure, given why — None: a failure changes nothing).
    def _inputs_found(
        self, document: ModelDocument, job: Job[Any], spec: InputSpecification
    ) -> None:
        document.input_spec = spec
        # the cost at the sizes just found (the Summary's and the graph's MACs): submitted with
        # the document's input overrides, the ones the inputs were found with
        self.submit(CostRecipe(model=str(document.path)), document, background=True)

    def _latency_measured(self, document: ModelDocument, job: Job[Any], latency: Latency) -> None:
        document.latency = latency

    def _shapes_inferred(self, document: ModelDocument, job: Job[Any], shapes: Shapes) -> None:
        document.tensor_shapes = shapes.tensors

    def _profiled(self, document: ModelDocument, job: Job[Any], profile: Profile) -> None:
        document.profile = profile

    def _cost_counted(self, document: ModelDocument, job: Job[Any], cost: ModelCost) -> None:
        document.cost = cost

    def _sensitivity_ranked(
        self, document: ModelDocument, job: Job[Any], sensitivity: Sensitivity
    ) -> None:
        document.sensitivity = sensitivity
        document.overlay = Overlay(OverlayKind.SENSITIVITY)

    def _target_checked(self, document: ModelDocument, job: Job[Any], check: TargetCheck) -> None:
        document.target = check
        document.overlay = Overlay(OverlayKind.TARGET)

    def _target_compiled(
        self, document: ModelDocument, job: Job[Any], compiled: TargetCompile
    ) -> None:
        document.compiled = compiled

    _OUTCOMES: ClassVar[
        dict[type[Recipe[Any]], tuple[Callable[..., None], Callable[..., None] | None]]
    ] = {
        InputsRecipe: (_inputs_found, ModelDocument.fail_input_spec),
        BenchRecipe: (_latency_measured, None),
        ShapesRecipe: (_shapes_inferred, ModelDocument.fail_tensor_shapes),
        ProfileRecipe: (_profiled, None),
        CostRecipe: (_cost_counted, lambda document, why: document.cost_failed.emit(why)),
        SensitivityRecipe: (_sensitivity_ranked, None),
        TargetCheckRecipe: (_target_checked, None),
        TargetCompileRecipe: (_target_compiled, None),
    }

    def _quant_outcome(
        self, document: ModelDocument, run: QuantRun, chain: QuantizeThenAnalyse
    ) -> None:
        """Move ``chain`` on and put where it stands into ``run`` (announced once per step)."""
        ended = chain.advance()
        with run.changing():
            if chain.quantization is not None:
                run.output, run.quantization = chain.output, chain.quantization
            if chain.analysis is not None:
                run.analysis = chain.analysis
            run.state = chain.state
            if chain.error:
                run.error = chain.error
        if chain.state is RunState.ANALYSED:
            document.overlay = Overlay(OverlayKind.SQNR, run.number)
        if not ended:  # the analysis was started
            self._follow(document, run, chain)

    @staticmethod
    def _record(document: ModelDocument, job: Job[Any]) -> None:
        """Keep the job in the document's history if it read the document's model (the app's
        own shape inference is not part of the history)."""
        if document.path not in {
            Path(p).absolute() for p in job.recipe.input_paths() if p
        } or isinstance(job.recipe, (ShapesRecipe, CostRecipe)):
            return
        report = to_json(job.report) if job.report else {}
        document.record_job(
            JobRecord(
                title=job.recipe.title(),
                state=job.state.value,
                command=job.recipe.command_line(),
                output=report.get("output"),
                error=job.error,
                check=report.get("check"),
            )
        )
