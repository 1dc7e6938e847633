"""One tune candidate's quantize → analyse, as jobs of the session's queue (:class:`LocalStep`)
or as one Ray task on a cluster (:class:`RayStep`); both polled, both cancellable, both ending
in the quantized size and the analysis or why there is none."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, TypeVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, Quantization
from edgestudio.core.quant.tune import (
    Candidate,
    TuneSettings,
)
from edgestudio.core.serialise import from_json, to_json
from edgestudio.jobs.runner import Job, JobState
from edgestudio.jobs.scheduler import JobSubmitter

R = TypeVar("R")


def thread_share(workers: int) -> int | None:
    """onnxruntime threads per worker when ``workers`` run side by side (None: alone, every
    core): two workers each with every core fight over them."""
    return max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None


def connect_ray(
    address: str, model: str, calib: DataSource, evaluation: DataSource
) -> dict[str, Any]:
    """Join (or start, for ``local``) the Ray cluster at ``address`` and put the model and
    the data in its object store once: every :class:`RayStep` reads them there."""
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("Ray is not installed: pip install 'edgestudio[cluster]'") from exc
    if not ray.is_initialized():
        ray.init(
            address=None if address == "local" else address,
            ignore_reinit_error=True,
            log_to_driver=False,
        )
    return {
        "model": ray.put(Path(model).read_bytes()),
        "data": ray.put(
            [
                (Path(d.path).read_bytes(), Path(d.path).name, to_json(d))
                for d in (calib, evaluation)
            ]
        ),
    }


def outcome(job: Job[R]) -> R | str | None:
    """A finished job's typed result, or why it has none; None while it runs."""
    if not job.state.is_final:
        return None
    if job.state is not JobState.SUCCEEDED or job.report is None:
        return job.error or job.state.value
    return job.report.result


class LocalStep:
    """Quantize, then analyse, as jobs of the session's queue."""

    def __init__(
        self, candidate: Candidate, settings: TuneSettings, jobs: JobSubmitter, evaluation: Any
    ) -> None:
        self.candidate = candidate
        self.settings = settings
        self.evaluation = evaluation  # never the samples that calibrated it
        self.jobs = jobs
        self.threads = thread_share(min(settings.workers, jobs.max_parallel))
        self.quantizing = jobs.submit(candidate.recipe, threads=self.threads)
        self.analysing: Job[Analysis] | None = None
        self.quant_bytes = 0
        self.calibration_samples = 0
        self.result: tuple[int, Analysis] | str | None = None

    @property
    def job(self) -> Job[Quantization] | Job[Analysis]:
        """The job running now (the analysis, once the quantization succeeded)."""
        return self.analysing or self.quantizing

    def poll(self) -> bool:
        """Advance; True once :attr:`result` holds the outcome (or why it failed)."""
        if self.analysing is None:
            quantization = outcome(self.quantizing)
            if quantization is None:
                return False
            if isinstance(quantization, str):
                self.result = quantization
                return True
            self.quant_bytes = quantization.quant_bytes
            self.calibration_samples = quantization.calibration_samples
            recipe = self.candidate.recipe
            self.analysing = self.jobs.submit(
                AnalyzeRecipe.after(recipe, str(recipe.output), self.evaluation),
                threads=self.threads,
            )
            return False
        analysis = outcome(self.analysing)
        if analysis is None:
            return False
        self.result = analysis if isinstance(analysis, str) else (self.quant_bytes, analysis)
        return True

    def cancel(self) -> None:
        """Stop the running job."""
        self.jobs.cancel(self.job)
        self.job.wait(10)


def ray_quantize_and_analyse(
    recipe_data: dict[str, Any],
    model: bytes,
    model_name: str,
    data: list[tuple[bytes, str, dict[str, Any]]],
) -> tuple[int, bytes, dict[str, Any]] | str:
    """A Ray task: the same operations the workers run, on files sent through the object store
    (``data``: the calibration data, then the evaluation data, each its bytes, file name and
    DataSource)."""
    import tempfile as _tempfile

    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.progress import RecordingReporter
    from edgestudio.core.serialise import from_json
    from edgestudio.jobs.kinds import resolve_operation

    with _tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / model_name).write_bytes(model)
        sources = []
        for k, (content, name, source_data) in enumerate(data):
            (folder / str(k)).mkdir()
            (folder / str(k) / name).write_bytes(content)
            sources.append(
                dataclasses.replace(
                    from_json(DataSource, source_data), path=str(folder / str(k) / name)
                )
            )
        calib, source = sources
        recipe = from_json(
            QuantRecipe,
            {**recipe_data, "model": str(folder / model_name), "output": str(folder / "out.onnx")},
        )
        if recipe.calib is not None:
            recipe = dataclasses.replace(recipe, calib=calib)
        staging = folder / "staging"
        staging.mkdir()
        try:
            report = resolve_operation("quantize")(recipe, RecordingReporter(), staging)
            quantized = staging / report.files[0]
            analysis = resolve_operation("analyze")(
                AnalyzeRecipe.after(recipe, str(quantized), source), RecordingReporter(), staging
            )
        except Exception as exc:  # recorded like a failed job
            return f"{type(exc).__name__}: {exc}"
        return quantized.stat().st_size, quantized.read_bytes(), to_json(analysis.result)


class RayStep:
    """Quantize and analyse as one Ray task; the model comes back through the object store."""

    def __init__(
        self, candidate: Candidate, settings: TuneSettings, shared: dict[str, Any]
    ) -> None:
        import ray

        self.candidate = candidate
        remote = ray.remote(ray_quantize_and_analyse)
        self.ref = remote.remote(
            to_json(candidate.recipe), shared["model"], Path(settings.model).name, shared["data"]
        )
        self.result: tuple[int, Analysis] | str | None = None

    def poll(self) -> bool:
        """Advance; True once :attr:`result` holds the outcome (or why it failed)."""
        import ray

        ready, _ = ray.wait([self.ref], timeout=0)
        if not ready:
            return False
        try:
            outcome = ray.get(self.ref)
        except Exception as exc:  # the task or its node died
            self.result = f"the Ray task failed: {type(exc).__name__}: {exc}"
            return True
        if isinstance(outcome, str):
            self.result = outcome
            return True
        size, model, analysis = outcome
        Path(str(self.candidate.recipe.output)).write_bytes(model)
        self.result = (size, from_json(Analysis, analysis))
        return True

    def cancel(self) -> None:
        """Cancel the task wherever it runs."""
        import ray

        ray.cancel(self.ref, force=True)
