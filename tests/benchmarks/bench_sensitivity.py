"""A sensitivity pass against one analysis, side by side in one run (the corpus cache; skipped
when empty): PP-OCRv4 rec on real rendered lines, 24 to calibrate and 24 others to judge, the
10 worst layers each kept alone in 16-bit. The target: a pass within 20 analyses.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.sensitivity import SensitivityRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.realmodels import realdata
from tests.realmodels.corpus import cache_dir

MODEL = "ppocr_v4_rec"
LINES = 24
TOP = 10


def main() -> None:
    """Print the time of one analysis, of the sensitivity pass, and their ratio."""
    source = cache_dir() / f"{MODEL}.onnx"
    if not source.is_file():
        print(f"{MODEL}: not in the corpus cache (make realmodels) — skipped")
        return
    name = onnx.load(str(source), load_external_data=False).graph.input[0].name
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sources = []
        for label, seed in (("calib", 100), ("eval", 200)):
            x, _ = realdata.text_lines(LINES, seed)
            np.savez(work / f"{label}.npz", **{name: x})
            sources.append(DataSource("npz", str(work / f"{label}.npz")))
        calib, evaluation = sources
        recipe = QuantRecipe(
            model=str(source), output=str(work / "q.onnx"), mode="qdq", calib=calib
        )
        job = run_job(recipe, timeout=1800)
        assert job.state is JobState.SUCCEEDED, job.error
        started = time.perf_counter()
        job = run_job(
            AnalyzeRecipe(
                float_model=str(source), quant_model=str(work / "q.onnx"), data=evaluation
            ),
            timeout=1800,
        )
        one = time.perf_counter() - started
        assert job.state is JobState.SUCCEEDED, job.error
        started = time.perf_counter()
        job = run_job(
            SensitivityRecipe(
                base=QuantRecipe(model=str(source), mode="qdq", calib=calib),
                data=evaluation,
                top=TOP,
            ),
            timeout=3600,
        )
        sweep = time.perf_counter() - started
        assert job.state is JobState.SUCCEEDED, job.error
    print(f"{MODEL}, {LINES} + {LINES} rendered lines, the {TOP} worst layers in 16-bit")
    print(f"  one analysis      {one:7.1f} s")
    print(f"  sensitivity pass  {sweep:7.1f} s  = {sweep / one:.1f} analyses (target ≤ 20)")


if __name__ == "__main__":
    main()
