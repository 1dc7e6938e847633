"""The workflow and the document without Qt: quantize → analyse → benchmark, routed into the
document by real worker jobs, then saved as a workspace and rendered as a report."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.grammar import InputOverrides
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.model.summary import summarize_model
from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_runs import RunState
from edgestudio.core.serialise import to_json
from edgestudio.core.workspace import workspace
from edgestudio.core.workspace.document import ModelDocument, OverlayKind
from edgestudio.core.workspace.report import report_from_document, write_report
from edgestudio.jobs.runner import Job
from edgestudio.jobs.scheduler import default_launcher
from edgestudio.jobs.workflow import Workflow
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL


class Queue:
    """Runs the workflow's jobs one after the other, as the window's queue does."""

    max_parallel = 1

    def __init__(self) -> None:
        self.pending: list[Job] = []
        self.started: list[Recipe] = []
        self.finished: list[Job] = []
        self.announced: list[Job] = []
        self.followers: list = []
        self.workflow = Workflow(self)
        self.workflow.started.connect(self.announced.append)

    def submit(
        self,
        recipe: Recipe,
        timeout: float | None = None,
        background: bool = False,
        threads: int | None = None,
    ) -> Job:
        job = Job(recipe)
        self.pending.append(job)
        self.started.append(recipe)
        return job

    def poll(self) -> bool:
        return bool(self.pending)

    def cancel(self, job: Job) -> None:
        self.pending.remove(job)

    def follow(self, listener) -> None:  # type: ignore[no-untyped-def]
        self.followers.append(listener)

    def drain(self) -> None:
        while self.pending:
            job = self.pending.pop(0)
            job.start(default_launcher())
            job.wait(300)
            self.finished.append(job)
            for listener in self.followers:  # the workflow, as a scheduler would
                listener(job)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    for f in (SAMPLE_MODEL, SAMPLE_CALIBRATION, SAMPLE_EVALUATION):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / SAMPLE_MODEL.name


def _document(model: Path) -> ModelDocument:
    import onnx

    summary = summarize_model(onnx.load(model, load_external_data=False), model, None)
    return ModelDocument(model, summary=to_json(summary))


@pytest.mark.e2e
def test_quantize_analyse_benchmark_chain_fills_the_document(model: Path, tmp_path: Path) -> None:
    queue = Queue()
    document = _document(model)
    queue.workflow.add_document(document)
    events: list[str] = []
    document.run_added.connect(lambda run: events.append(f"added {run.number}"))
    document.run_changed.connect(lambda run: events.append(f"{run.number} {run.state.value}"))
    document.events.overlay.connect(lambda overlay: events.append(f"overlay {overlay.kind.value}"))

    run = queue.workflow.quantize(
        document,
        QuantRecipe(
            model=str(model),
            output=str(tmp_path / "q.onnx"),
            calib=DataSource("npz", str(model.with_name(SAMPLE_CALIBRATION.name))),
        ),
        DataSource("npz", str(model.with_name(SAMPLE_EVALUATION.name)), samples=40),
    )
    assert run.number == 1 and run.state is RunState.QUANTIZING
    queue.drain()
    assert run.state is RunState.ANALYSED, run.error
    assert events == ["added 1", "1 analysing", "1 analysed", "overlay sqnr"]
    assert [type(r).__name__ for r in queue.started] == ["QuantRecipe", "AnalyzeRecipe"]
    # both are the person's: the window hears of them (it shows the Jobs panel)
    assert [type(j.recipe).__name__ for j in queue.announced] == ["QuantRecipe", "AnalyzeRecipe"]
    assert document.overlay.kind is OverlayKind.SQNR and document.overlay.run == 1
    title, values = document.overlay_values() or ("", {})
    assert title.startswith("SQNR (dB)") and values  # every analysed node has a value
    assert "samples from" in document.overlay_note()  # the data the figures come from
    assert document.extra_models == [str(tmp_path / "q.onnx")]

    queue.workflow.submit(
        BenchRecipe(models=(str(model), str(tmp_path / "q.onnx")), runs=10, warmup=1)
    )
    queue.drain()
    assert len(document.latency.rows) == 2 and (document.latency.rows[0].median_ms or 0) > 0
    assert [j.title.split(":")[0] for j in document.jobs] == ["Quantize", "Analyze", "Benchmark"]

    # each typed result reads back from its JSON as it was (nothing dropped on the way)
    for job in queue.finished:
        assert job.report is not None and job.report.result is not None, job.recipe.kind
        sent = json.dumps(to_json(job.report.result), sort_keys=True)
        again = job.recipe.read_result(json.loads(sent))
        assert type(again) is job.recipe.result_type()
        assert json.dumps(to_json(again), sort_keys=True) == sent, job.recipe.kind


@pytest.mark.e2e
def test_the_chained_analysis_is_judged_where_asked(model: Path, tmp_path: Path) -> None:
    """The form's *Judge on*: the analysis that follows a quantization runs where it was
    asked (OpenVINO's onnxruntime), not on the target the result was made for."""
    queue = Queue()
    document = _document(model)
    queue.workflow.add_document(document)
    evaluation = DataSource("npz", str(model.with_name(SAMPLE_EVALUATION.name)), samples=8)
    recipe = QuantRecipe(model=str(model), output=str(tmp_path / "q1.onnx"), mode="dynamic")
    queue.workflow.quantize(document, recipe, evaluation, "auto", "openvino")
    again = dataclasses.replace(recipe, output=str(tmp_path / "q2.onnx"))
    queue.workflow.quantize(document, again, evaluation)
    for job in queue.pending[:2]:  # the quantizations run; the analyses they chain are kept
        queue.pending.remove(job)
        job.start(default_launcher())
        job.wait(300)
        queue.workflow.job_finished(job)
    judged = [r for r in queue.started if isinstance(r, AnalyzeRecipe)]
    assert [r.target for r in judged] == ["openvino", "cpu"]


@pytest.mark.e2e
def test_a_failed_quantization_is_recorded_and_nothing_follows(model: Path, tmp_path: Path) -> None:
    queue = Queue()
    document = _document(model)
    queue.workflow.add_document(document)
    missing = DataSource("npz", str(tmp_path / "missing.npz"))
    run = queue.workflow.quantize(
        document,
        QuantRecipe(model=str(model), output=str(tmp_path / "q.onnx"), calib=missing),
        missing,
    )
    queue.drain()
    assert run.state is RunState.FAILED and run.error
    assert len(queue.started) == 1  # no analysis of a model that was never written
    assert document.jobs[0].state == "failed"


@pytest.mark.e2e
def test_the_documents_inputs_reach_its_jobs(model: Path) -> None:
    queue = Queue()
    document = _document(model)
    queue.workflow.add_document(document)
    document.inputs = InputOverrides(shapes=("image=2x1x8x8",))
    queue.workflow.find_inputs(document, InputsRecipe(model=str(model)))
    assert queue.started[0].shapes == ("image=2x1x8x8",)  # type: ignore[attr-defined]
    assert queue.announced == []  # finding inputs is quiet
    seen: list[object] = []
    document.events.input_spec.connect(seen.append)
    queue.drain()
    assert document.input_spec is not None and seen == [document.input_spec]
    assert document.input_spec.entry("image").shape == (2, 1, 8, 8)


@pytest.mark.e2e
def test_workspace_round_trip_and_report_from_the_cli(model: Path, tmp_path: Path) -> None:
    queue = Queue()
    document = _document(model)
    queue.workflow.add_document(document)
    document.exclude({"/features/features.0/Conv"})
    queue.workflow.quantize(
        document,
        QuantRecipe(
            model=str(model),
            output=str(tmp_path / "q.onnx"),
            calib=DataSource("npz", str(model.with_name(SAMPLE_CALIBRATION.name))),
        ),
        DataSource("npz", str(model.with_name(SAMPLE_EVALUATION.name)), samples=40),
    )
    queue.workflow.submit(BenchRecipe(models=(str(model),), runs=10, warmup=1))
    queue.drain()

    saved = workspace.save(document, tmp_path / "digits.edgestudio.json")
    assert workspace.last_for(model) == saved
    restored = workspace.load(saved)
    assert restored.warning() is None
    again = restored.document
    assert again.excluded == document.excluded
    assert to_json(again.runs) == to_json(document.runs)
    assert again.latency.rows == document.latency.rows
    assert again.overlay == document.overlay
    assert json.dumps(workspace.as_json(again, "x")) == json.dumps(workspace.as_json(document, "x"))

    # the CLI renders the same report as the window's File › Export report
    write_report(tmp_path / "from_document.html", report_from_document(document))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgestudio",
            "report",
            str(saved),
            "-o",
            str(tmp_path / "from_cli.html"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "from_cli.html").read_text() == (tmp_path / "from_document.html").read_text()
    html = (tmp_path / "from_cli.html").read_text()
    assert html.count("<svg") == 2 and "edgestudio quantize" in html

    # the model changes on disk: the workspace says so (and the CLI warns)
    model.write_bytes(model.read_bytes() + b"\0")  # (the report needs no valid model)
    assert workspace.load(saved).model_changed
    done = subprocess.run(
        [sys.executable, "-m", "edgestudio", "report", str(saved)], capture_output=True, text=True
    )
    assert done.returncode == 0 and "changed on disk" in done.stderr


def test_workspace_found_beside_a_moved_model_and_bad_files_refused(
    model: Path, tmp_path: Path
) -> None:
    document = _document(model)
    saved = workspace.save(document, tmp_path / "m.edgestudio.json")
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(model, moved / model.name)
    shutil.move(saved, moved / saved.name)
    restored = workspace.load(moved / saved.name)
    assert restored.model_found and not restored.model_changed
    assert restored.document.path == moved / model.name
    (moved / model.name).unlink()
    assert "not there any more" in (workspace.load(moved / saved.name).warning() or "")

    (tmp_path / "bad.edgestudio.json").write_text("{not json")
    with pytest.raises(workspace.WorkspaceError, match="not a workspace"):
        workspace.load(tmp_path / "bad.edgestudio.json")
    (tmp_path / "other.edgestudio.json").write_text('{"format": "something else"}')
    with pytest.raises(workspace.WorkspaceError, match="not an EdgeStudio workspace"):
        workspace.load(tmp_path / "other.edgestudio.json")
    done = subprocess.run(
        [sys.executable, "-m", "edgestudio", "report", str(tmp_path / "bad.edgestudio.json")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "not a workspace" in done.stderr


def test_an_interrupted_run_comes_back_as_failed(model: Path, tmp_path: Path) -> None:
    document = _document(model)
    queue = Queue()
    queue.workflow.add_document(document)
    queue.workflow.quantize(
        document, QuantRecipe(model=str(model), output=str(tmp_path / "q.onnx"))
    )
    saved = workspace.save(document, tmp_path / "w.edgestudio.json")  # saved while running
    run = workspace.load(saved).document.runs[0]
    assert run.state is RunState.FAILED and "interrupted" in (run.error or "")


@pytest.mark.e2e
def test_a_runs_changes_reach_the_panels_without_being_announced(
    model: Path, tmp_path: Path
) -> None:
    """Runs are evented: assigning a field is the announcement (no update call to forget),
    a workspace's runs are followed once restored, and the state comes last."""
    from edgestudio.core.quant.quant_runs import QuantRun

    document = _document(model)
    seen: list[tuple[int, RunState, str | None]] = []
    document.run_changed.connect(lambda run: seen.append((run.number, run.state, run.error)))
    run = document.new_run(QuantRun(number=0, recipe=QuantRecipe(model=str(model))))
    run.output = str(tmp_path / "q.onnx")
    assert seen[-1][0] == 1 and document.extra_models == [run.output]
    before = len(seen)
    with run.changing():  # several fields, one announcement, after the last
        run.state = RunState.FAILED
        run.error = "boom"
    assert seen[before:] == [(1, RunState.FAILED, "boom")]

    saved = workspace.save(document, tmp_path / "w.edgestudio.json")
    again = _document(model)
    again.restore(workspace.load(saved).document)
    restored: list[RunState] = []
    again.run_changed.connect(lambda r: restored.append(r.state))
    again.runs[0].state = RunState.ANALYSIS_FAILED
    assert restored == [RunState.ANALYSIS_FAILED]

    queue = Queue()  # through the workflow: a failed job ends in one final state, error first
    queue.workflow.add_document(document)
    finals: list[tuple[RunState, str | None]] = []
    document.run_changed.connect(
        lambda r: finals.append((r.state, r.error)) if r.state.is_final and r.number == 2 else None
    )
    queue.workflow.quantize(
        document,
        QuantRecipe(model=str(tmp_path / "missing.onnx"), output=str(tmp_path / "q2.onnx")),
    )
    queue.drain()
    assert finals and finals[0][0] is RunState.FAILED and finals[0][1]


def test_the_document_is_evented(model: Path) -> None:
    """Assigning a field of the document is its announcement; news (a benchmark, a found
    specification, an overlay) is announced even when equal to the last, the user's choices
    only when they change, and a restored workspace once."""
    from edgestudio.core.perf.perf_results import Latency
    from edgestudio.core.workspace.document import Overlay

    document = _document(model)
    heard: list[str] = []

    def hear(name: str):  # type: ignore[no-untyped-def]
        return lambda value: heard.append(name)

    for name in ("inputs", "excluded", "latency", "overlay", "input_spec"):
        getattr(document.events, name).connect(hear(name))
    document.restored.connect(lambda: heard.append("restored"))
    document.inputs = InputOverrides(shapes=("image=2x1x8x8",))
    document.inputs = InputOverrides(shapes=("image=2x1x8x8",))  # the same: nothing to say
    document.exclude({"a"})
    document.exclude({"a"})
    document.latency = Latency()
    document.latency = Latency()  # a new benchmark that measured the same is still news
    document.overlay = Overlay(OverlayKind.SQNR, 1)
    assert heard == ["inputs", "excluded", "latency", "latency", "overlay"]
    heard.clear()
    document.restore(_document(model))
    assert heard == ["restored"]


def test_a_workspace_keeps_every_document_field_but_those_marked_unsaved(
    model: Path, tmp_path: Path
) -> None:
    # Persistence follows the document's fields: a field added later is saved and restored
    # without touching the workspace code; derived ones (shapes, the file's hash) are not.
    import dataclasses

    from edgestudio.core.workspace.document import saved_fields

    document = _document(model)
    document.extra_models = ["other.onnx"]
    document.excluded = frozenset({"b", "a"})
    document.tensor_shapes = {"x": ("float32", [1])}
    data = workspace.as_json(document, "hash")
    names = {f.name for f in dataclasses.fields(ModelDocument)}
    assert set(data) - {"format", "version", "model"} == {name for name, _ in saved_fields()}
    assert {"tensor_shapes", "model_hash", "file_stamp", "path"} & set(data) == set()
    assert {"tensor_shapes", "model_hash", "file_stamp", "path"} <= names
    assert data["excluded"] == ["a", "b"]  # sets are written sorted: same document, same file
    restored = workspace.load(workspace.save(document, tmp_path / "w.edgestudio.json")).document
    for name, _ in saved_fields():
        assert to_json(getattr(restored, name)) == to_json(getattr(document, name)), name
    assert restored.tensor_shapes == {}
