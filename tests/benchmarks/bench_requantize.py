"""The exclude → re-quantize loop: static QDQ with one more excluded node, with the calibration
cache, against the first quantization (whole job, as the window runs it), side by side.

Each round starts from an empty per-user cache (so the first quantization also finds its inputs,
pre-processes and calibrates), then re-quantizes excluding one more node (ranges and the
pre-processed model from the cache), then does the same re-quantization again with those two
caches emptied (calibrating and pre-processing again). Models: a
2k-node generated graph, the digits sample CNN (real, trained), and the PP-OCRv4 detector from
the real-model corpus when it is present (at the size the model decides on, and at 640×640, the
size it is used at). Target: re-quantize ≥ 5× faster than the first.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.paths import cache_dir
from edgestudio.core.quant import calib_cache, prep_cache
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import close_default_launcher, default_launcher, run_job
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_MODEL
from tests import graph_builders, models
from tests.realmodels.corpus import CORPUS

ROUNDS = 3


def _job_seconds(recipe: QuantRecipe) -> tuple[float, str]:
    started = time.perf_counter()
    job = run_job(recipe)
    seconds = time.perf_counter() - started
    if job.state is not JobState.SUCCEEDED or job.report is None:
        raise RuntimeError(f"{recipe.model}: {job.error}")
    return seconds, job.report.result.calibration


def _round(recipe: QuantRecipe, exclude: str, folder: Path) -> tuple[float, ...]:
    """(first, re-quantize with everything cached, with only the ranges cached, with nothing
    cached) in seconds; the three re-quantizations' results are asserted identical."""
    # The environment stays as the worker server was started with: the caches are emptied by
    # removing their folders, not by pointing the jobs elsewhere.
    for cache in ("calibration", "preprocessed", "input_specs"):  # nothing cached yet
        shutil.rmtree(cache_dir() / cache, ignore_errors=True)
    first, state = _job_seconds(replace(recipe, output=str(folder / "first.onnx")))
    assert state == "computed", state
    again = replace(recipe, exclude=(exclude,), output=str(folder / "again.onnx"))
    cached, state = _job_seconds(again)
    assert state == "reused", state
    shutil.rmtree(prep_cache.cache_folder(), ignore_errors=True)  # pre-processing again
    ranges_only, state = _job_seconds(replace(again, output=str(folder / "ranges.onnx")))
    assert state == "reused", state
    for folder_of in (calib_cache.cache_folder, prep_cache.cache_folder):  # the same job
        shutil.rmtree(folder_of(), ignore_errors=True)  # calibrating and pre-processing again
    cold, state = _job_seconds(replace(again, output=str(folder / "cold.onnx")))
    assert state == "computed", state
    for other in ("ranges.onnx", "cold.onnx"):
        assert (folder / "again.onnx").read_bytes() == (folder / other).read_bytes()
    return first, cached, ranges_only, cold


def _cases(folder: Path) -> list[tuple[str, QuantRecipe, str]]:
    graph = models.save(graph_builders.conv_branches(2000), folder / "g2k.onnx")
    synthetic = DataSource(kind="synthetic", samples=32)
    cases = [
        (
            f"generated CNN, {_nodes(graph)} nodes",
            QuantRecipe(model=str(graph), mode="qdq", calib=synthetic, overwrite=True),
            "",
        )
    ]
    sample = folder / SAMPLE_MODEL.name
    shutil.copy(SAMPLE_MODEL, sample)
    cases.append(
        (
            "digits CNN (trained), 32 real samples",
            QuantRecipe(
                model=str(sample),
                mode="qdq",
                overwrite=True,
                calib=DataSource(kind="npz", path=str(SAMPLE_CALIBRATION), samples=32),
            ),
            "",
        )
    )
    det = next(m for m in CORPUS if m.name == "ppocr_v4_det")
    if det.path.is_file():
        cases.append(
            (
                "PP-OCRv4 detector (real), 32 synthetic",
                QuantRecipe(model=str(det.path), mode="qdq", calib=synthetic, overwrite=True),
                "",
            )
        )
        cases.append(
            (
                "PP-OCRv4 detector at 640×640, 32 synthetic",
                QuantRecipe(
                    model=str(det.path),
                    mode="qdq",
                    calib=synthetic,
                    overwrite=True,
                    shapes=("x=1x3x640x640",),
                ),
                "",
            )
        )
    else:
        print("the real-model corpus is empty (make realmodels): the PP-OCRv4 row is skipped")
    return [(label, recipe, _second_conv(Path(recipe.model))) for label, recipe, _ in cases]


def _nodes(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


def _second_conv(path: Path) -> str:
    import onnx

    convs = [
        n.name
        for n in onnx.load(str(path), load_external_data=False).graph.node
        if n.op_type == "Conv"
    ]
    return convs[1]


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    saved_home = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder / "cache")  # before the worker server starts
    default_launcher().prepare()  # as the window does while the user looks at the graph
    time.sleep(3)
    print(
        f"{'model':<46}{'first s':>9}{'re-quantize s':>15}{'ratio':>8}"
        f"{'ranges only s':>15}{'ratio':>8}{'no cache s':>12}{'ratio':>8}"
    )
    try:
        for label, recipe, exclude in _cases(folder):
            rounds = [_round(recipe, exclude, folder) for _ in range(ROUNDS)]
            first, *others = (statistics.median(r[k] for r in rounds) for k in range(4))
            cells = "".join(
                f"{t:>{w}.2f}{first / t:>7.1f}×" for t, w in zip(others, (15, 15, 12), strict=True)
            )
            print(f"{label:<46}{first:>9.2f}{cells}", flush=True)
    finally:
        close_default_launcher()
        if saved_home is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved_home
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"medians of {ROUNDS} rounds, whole jobs (forked from the loaded server, as in the window); "
        "re-quantize = static QDQ excluding one more Conv with the calibration ranges and the "
        "pre-processed model from the cache; ranges only = the same with the pre-processing "
        "done again; no cache = calibrating and pre-processing again: all three "
        "byte-identical. Target: ≥ 5× the first."
    )
