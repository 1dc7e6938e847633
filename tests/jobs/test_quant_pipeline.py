"""The quantize → analyse chain on its own: what it submits after each job's end, where it
stops and why, with jobs ended by hand (no workers)."""

from __future__ import annotations

from typing import Any

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, Quantization
from edgestudio.core.quant.quant_runs import RunState
from edgestudio.jobs.quant_pipeline import Judging, QuantizeThenAnalyse
from edgestudio.jobs.runner import Job, JobState


class Queue:
    """Holds what was submitted; nothing runs until a test ends a job."""

    max_parallel = 1

    def __init__(self) -> None:
        self.submitted: list[tuple[Job[Any], int | None]] = []
        self.cancelled: list[Job[Any]] = []

    def submit(
        self,
        recipe: Recipe[Any],
        timeout: float | None = None,
        background: bool = False,
        threads: int | None = None,
    ) -> Job[Any]:
        job: Job[Any] = Job(recipe, threads=threads)
        self.submitted.append((job, threads))
        return job

    def poll(self) -> bool:
        return False

    def cancel(self, job: Job[Any]) -> None:
        self.cancelled.append(job)


RECIPE = QuantRecipe(
    model="m.onnx",
    output="m_int8.onnx",
    shapes=("x:1x3x8x8",),
    calib=DataSource(kind="npz", path="c.npz"),
)
DATA = DataSource(kind="npz", path="eval.npz")


def _succeed(job: Job[Any], result: Any, output: str | None = None) -> None:
    job.state = JobState.SUCCEEDED
    job.report = JobReport(kind="k", output=output, result=result)


def _fail(job: Job[Any], why: str) -> None:
    job.state, job.error = JobState.FAILED, why


def test_the_analysis_follows_a_quantization_that_succeeded() -> None:
    queue = Queue()
    chain = QuantizeThenAnalyse.start(queue, RECIPE, Judging(DATA, "top1_agreement"), threads=1)
    assert chain.advance() is False and len(queue.submitted) == 1  # still quantizing
    quantization = Quantization(float_bytes=100, quant_bytes=30, calibration_samples=8)
    _succeed(chain.job, quantization, output="/out/m_int8.onnx")
    assert chain.advance() is False
    assert chain.state is RunState.ANALYSING and chain.quantization == quantization
    (job, threads) = queue.submitted[1]
    analysis = job.recipe
    assert isinstance(analysis, AnalyzeRecipe) and threads == 1
    # judged on the data given, by the metric given, fed as the quantization was
    assert (analysis.float_model, analysis.quant_model) == ("m.onnx", "/out/m_int8.onnx")
    assert analysis.data == DATA and analysis.metric == "top1_agreement"
    assert analysis.shapes == RECIPE.shapes
    found = Analysis(float_model="m.onnx", quant_model="/out/m_int8.onnx", samples=4)
    _succeed(job, found)
    assert chain.advance() is True
    assert chain.state is RunState.ANALYSED and chain.analysis == found and not chain.error
    assert len(queue.submitted) == 2  # nothing more


def test_without_data_it_ends_quantized() -> None:
    queue = Queue()
    chain = QuantizeThenAnalyse.start(queue, RECIPE)
    _succeed(chain.job, Quantization(float_bytes=1, quant_bytes=1), output="/out/m.onnx")
    assert chain.advance() is True and chain.state is RunState.QUANTIZED
    assert chain.output == "/out/m.onnx" and len(queue.submitted) == 1


def test_a_failed_quantization_starts_no_analysis_and_says_why() -> None:
    queue = Queue()
    chain = QuantizeThenAnalyse.start(queue, RECIPE, Judging(DATA))
    _fail(chain.job, "onnxruntime refused the model")
    assert chain.advance() is True
    assert chain.state is RunState.FAILED and chain.error == "onnxruntime refused the model"
    assert chain.quantization is None and len(queue.submitted) == 1


def test_a_failed_analysis_keeps_the_quantization() -> None:
    queue = Queue()
    chain = QuantizeThenAnalyse.start(queue, RECIPE, Judging(DATA))
    _succeed(chain.job, Quantization(float_bytes=1, quant_bytes=1), output="/out/m.onnx")
    chain.advance()
    chain.job.state = JobState.TIMED_OUT
    assert chain.advance() is True
    assert chain.state is RunState.ANALYSIS_FAILED and chain.error == "timed out"
    assert chain.quantization is not None and chain.analysis is None


def test_cancel_stops_the_job_running_now() -> None:
    queue = Queue()
    chain = QuantizeThenAnalyse.start(queue, RECIPE, Judging(DATA))
    _succeed(chain.job, Quantization(float_bytes=1, quant_bytes=1), output="/out/m.onnx")
    chain.advance()
    chain.cancel()
    assert queue.cancelled == [queue.submitted[1][0]]  # the analysis, not the quantization


def test_a_chain_around_an_analysis_that_ran_elsewhere() -> None:
    """The command line's ``--workspace`` record: the analysis job it ran, read into a run."""
    queue = Queue()
    analysing: Job[Analysis] = Job(AnalyzeRecipe.after(RECIPE, "/out/m.onnx", DATA))
    chain = QuantizeThenAnalyse(queue, RECIPE, Judging(DATA), analysing=analysing)
    found = Analysis(float_model="m.onnx", quant_model="/out/m.onnx", samples=2)
    _succeed(analysing, found)
    assert chain.advance() is True and chain.analysis == found and queue.submitted == []
