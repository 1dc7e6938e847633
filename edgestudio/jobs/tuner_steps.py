"""One tune candidate's quantize → analyse chain (:mod:`.quant_pipeline`), as jobs of the
session's queue (:class:`LocalStep`) or as one Ray task that runs the same chain on a cluster
node (:class:`RayStep`); both polled, both cancellable, both ending in the quantization and the
analysis (:class:`Measured`) or why there are none."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_results import Analysis, Quantization
from edgestudio.core.quant.tune import (
    Candidate,
    TuneSettings,
)
from edgestudio.core.serialise import from_json, to_json
from edgestudio.jobs.quant_pipeline import Judging, QuantizeThenAnalyse
from edgestudio.jobs.runner import Job
from edgestudio.jobs.scheduler import JobSubmitter, Scheduler


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


@dataclass(frozen=True)
class Measured:
    """What one candidate's quantize → analyse gave."""

    quantization: Quantization
    analysis: Analysis


def measured(chain: QuantizeThenAnalyse) -> Measured | str:
    """An ended chain's results, or why it has none."""
    if chain.quantization is None or chain.analysis is None:
        return chain.error or chain.state.value
    return Measured(chain.quantization, chain.analysis)


class LocalStep:
    """Quantize, then analyse, as jobs of the session's queue."""

    def __init__(
        self,
        candidate: Candidate,
        settings: TuneSettings,
        jobs: JobSubmitter,
        evaluation: DataSource,
    ) -> None:
        self.candidate = candidate
        # judged on ``evaluation``: never the samples that calibrated it
        self.chain = QuantizeThenAnalyse.start(
            jobs,
            candidate.recipe,
            Judging(evaluation),
            threads=thread_share(min(settings.workers, jobs.max_parallel)),
        )
        self.result: Measured | str | None = None

    @property
    def job(self) -> Job[Any]:
        """The job running now (the analysis, once the quantization succeeded)."""
        return self.chain.job

    def poll(self) -> bool:
        """Advance; True once :attr:`result` holds the outcome (or why it failed)."""
        if not self.chain.advance():
            return False
        self.result = measured(self.chain)
        return True

    def cancel(self) -> None:
        """Stop the running job."""
        self.chain.cancel()
        self.job.wait(10)


def ray_quantize_and_analyse(
    recipe_data: dict[str, Any],
    model: bytes,
    model_name: str,
    data: list[tuple[bytes, str, dict[str, Any]]],
) -> tuple[bytes, dict[str, Any], dict[str, Any]] | str:
    """A Ray task: the candidate's quantize → analyse chain on files sent through the object
    store (``data``: the calibration data, then the evaluation data, each its bytes, file
    name and DataSource); the quantized model and both results as JSON, or why it failed."""
    import tempfile as _tempfile

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
        # the same jobs the workers run here, in worker processes of this node: a crash or a
        # hung onnxruntime call ends the candidate, not the Ray worker
        scheduler = Scheduler()
        chain = QuantizeThenAnalyse.start(scheduler, recipe, Judging(source))
        while not chain.advance():
            scheduler.poll(wait=0.05)
        result = measured(chain)
        if isinstance(result, str):
            return result
        quantized = Path(str(chain.output))
        return quantized.read_bytes(), to_json(result.quantization), to_json(result.analysis)


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
        self.result: Measured | str | None = None

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
        model, quantization, analysis = outcome
        Path(str(self.candidate.recipe.output)).write_bytes(model)
        self.result = Measured(from_json(Quantization, quantization), from_json(Analysis, analysis))
        return True

    def cancel(self) -> None:
        """Cancel the task wherever it runs."""
        import ray

        ray.cancel(self.ref, force=True)
