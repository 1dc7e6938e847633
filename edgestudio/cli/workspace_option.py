"""``--workspace W`` on quantize / analyze / bench / profile / tune: the run is added to a
workspace file, created when missing, so that ``edgestudio report W`` and the window (``edgestudio
W``) show it without the window having run it.

A finished job's outcome goes into the document the same way as in the window: through the
workflow (:meth:`edgestudio.jobs.workflow.Workflow.adopt`), so the command line and the window
cannot record a run differently.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.serialise import to_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from edgestudio.core.job_api.recipe import Recipe
    from edgestudio.core.workspace.document import ModelDocument
    from edgestudio.jobs.runner import Job

R = TypeVar("R")


def add_workspace_option(parser: argparse.ArgumentParser) -> None:
    """Register ``--workspace W``."""
    parser.add_argument(
        "--workspace",
        metavar="W",
        help="add this run to the workspace file W (*.edgestudio.json; created when missing) "
        "for `edgestudio report W` or the window",
    )


def open_document(workspace_path: str, model: str) -> ModelDocument:
    """The document saved in ``workspace_path``, or a new one for ``model`` when the file does
    not exist yet.

    Raises
    ------
    EdgeStudioError
        When the workspace holds another model (its runs would describe the wrong file).
    """
    from edgestudio.core.model.summary import summarize_file
    from edgestudio.core.workspace import workspace
    from edgestudio.core.workspace.document import ModelDocument

    target = Path(workspace_path)
    model_path = Path(model).absolute()
    if target.exists():
        document = workspace.load(target).document
        if document.path.resolve() != model_path.resolve():
            raise EdgeStudioError(
                f"the workspace {target} is for {document.path}, not "
                f"{model_path}: give another --workspace file"
            )
        return document
    document = ModelDocument(model_path)
    document.summary = to_json(summarize_file(model_path))
    return document


def _model_of(recipe: Recipe[Any]) -> str:
    """The model a job is about: the first file it reads (a benchmark's first model)."""
    return next(p for p in recipe.input_paths() if p)


def workspace_problems(args: argparse.Namespace, recipe: Recipe[Any]) -> list[str]:
    """Why ``--workspace`` would fail after the job ran (checked before it starts)."""
    target = getattr(args, "workspace", None)
    if not target or not Path(target).exists():
        return (
            []
            if not target or Path(target).absolute().parent.is_dir()
            else [
                f"--workspace {target}: the folder {Path(target).absolute().parent} does not exist."
            ]
        )
    try:
        open_document(target, _model_of(recipe))
    except EdgeStudioError as exc:
        return [f"--workspace: {exc}"]
    return []


def record_job(args: argparse.Namespace, job: Job[Any]) -> None:
    """Add the finished ``job`` to ``args.workspace`` (nothing without the option)."""
    target = getattr(args, "workspace", None)
    if not target:
        return
    from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
    from edgestudio.core.quant.quant_runs import QuantRun, RunState
    from edgestudio.core.workspace import workspace
    from edgestudio.jobs.quant_pipeline import Judging, QuantizeThenAnalyse
    from edgestudio.jobs.workflow import Workflow

    document = open_document(target, _model_of(job.recipe))
    queue = _NothingAfter()
    flow = Workflow(queue)
    flow.add_document(document)
    recipe = job.recipe
    run, chain = None, None
    if isinstance(recipe, QuantRecipe):
        run = document.new_run(QuantRun(number=0, recipe=recipe))
        chain = QuantizeThenAnalyse(queue, recipe, None, quantizing=job)
    elif isinstance(recipe, AnalyzeRecipe):
        # The run that wrote the analysed model, else a run standing for it (made elsewhere).
        run = next(
            (
                r
                for r in document.runs
                if r.output and Path(r.output).absolute() == Path(recipe.quant_model).absolute()
            ),
            None,
        )
        if run is None:
            import onnx

            from edgestudio.core.quant.quantized_graph import quantization_mode

            # the mode that model's operators say wrote it, not the recipe's default
            made = quantization_mode(onnx.load(recipe.quant_model, load_external_data=False))
            run = document.new_run(
                QuantRun(
                    number=0,
                    recipe=QuantRecipe(
                        model=recipe.float_model, output=recipe.quant_model, mode=made or "qdq"
                    ),
                )
            )
            from edgestudio.core.quant.mixed_precision import quantized_elsewhere

            with run.changing():
                run.output, run.state = recipe.quant_model, RunState.QUANTIZED
                run.quantization = quantized_elsewhere(
                    Path(recipe.float_model), Path(recipe.quant_model)
                )
        run.analyze_on, run.metric = recipe.data, recipe.metric
        judging = Judging(recipe.data, recipe.metric, recipe.target)
        chain = QuantizeThenAnalyse(queue, run.recipe, judging, analysing=job)
    flow.adopt(job, document, run, chain)
    flow.job_finished(job)
    saved = workspace.save(document, target)
    print(f"added to the workspace {saved}", file=sys.stderr)


def record_tune(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    """Add an auto-tune's summary to ``args.workspace`` (nothing without the option)."""
    target = getattr(args, "workspace", None)
    if not target:
        return
    from edgestudio.core.workspace import workspace

    document = open_document(target, str(summary["model"]))
    document.record_tune(summary)
    saved = workspace.save(document, target)
    print(f"added to the workspace {saved}", file=sys.stderr)


class _NothingAfter:
    """The job queue of a recorded command-line job: it starts nothing after it."""

    max_parallel = 1

    def submit(
        self,
        recipe: Recipe[R],
        timeout: float | None = None,
        background: bool = False,
        threads: int | None = None,
    ) -> Job[R]:
        raise AssertionError("a recorded command-line job starts nothing after it")

    def poll(self) -> bool:
        return False

    def cancel(self, job: Job[Any]) -> None:
        """Nothing runs here."""

    def follow(self, listener: Callable[[Job[Any]], None]) -> None:
        """Nothing ends here: the recorded job is handed to the workflow directly."""
