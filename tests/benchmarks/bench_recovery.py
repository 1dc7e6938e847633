"""Accuracy recovery on real models with real data (the corpus cache; skipped when empty).

Each recipe quantizes through the job runner, calibrated on one set of real samples, and is
judged on another (disjoint seeds) by the task as the user reads it: the share of text lines
read exactly as the float model reads them (OCR recognisers), or of classes picked alike. Also
printed: the result's size, the quantization's wall time and its precision counts.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.realmodels import realdata
from tests.realmodels.accuracy_check import _read, _run
from tests.realmodels.corpus import cache_dir

RECIPES: dict[str, dict[str, Any]] = {
    "int8 per-tensor (ORT default)": {},
    "int8 per-channel": {"per_channel": True},
    "A16W8 per-channel": {"activation_type": "uint16", "per_channel": True},
    "A16W8 (whole model)": {"activation_type": "uint16"},
    "int8, quantizers on compute ops": {"placement": "compute"},
    "int8, compute ops, per-channel": {"placement": "compute", "per_channel": True},
    "int8, compute inputs only": {"placement": "compute-inputs"},
    "int8, compute inputs only, per-channel": {"placement": "compute-inputs", "per_channel": True},
}
CASES = (
    ("ppocr_v4_rec", realdata.text_lines, "ctc"),
    ("ppocr_mobile_cls", realdata.direction_lines, "classification"),
)


def recover(model_name: str, make: Any, task: str, work: Path, count: int = 40) -> None:
    """Print one table row per recipe for corpus model ``model_name``."""
    source = cache_dir() / f"{model_name}.onnx"
    if not source.is_file():
        print(f"{model_name}: not in the corpus cache (make realmodels) — skipped")
        return
    model = onnx.load(str(source))
    calib_x, _ = make(count, 100)
    eval_x, _ = make(count, 200)  # another seed: never the calibration samples
    calib = work / f"{model_name}_calib.npz"
    np.savez(calib, **{model.graph.input[0].name: calib_x})
    float_says = _read(model, _run(source, eval_x), task)
    print(f"\n{model_name}: {count} calibration / {count} evaluation samples (disjoint)")
    print(f"{'recipe':42} {'like float':>10} {'size MB':>8} {'time s':>7}  precision")
    for label, options in RECIPES.items():
        out = work / f"{model_name}_{abs(hash(label))}.onnx"
        started = time.perf_counter()
        job = run_job(
            QuantRecipe(
                model=str(source),
                output=str(out),
                overwrite=True,
                mode="qdq",
                calib=DataSource("npz", str(calib)),
                **options,
            ),
            timeout=900,
        )
        took = time.perf_counter() - started
        if job.state is not JobState.SUCCEEDED or job.report is None:
            print(f"{label:42} {job.state.value}: {(job.error or '')[:120]}")
            continue
        said = _read(model, _run(out, eval_x), task)
        alike = float(np.mean([a == b for a, b in zip(float_says, said, strict=True)]))
        precision = next((n for n in job.report.result.notes if n.startswith("Precision")), "")
        print(
            f"{label:42} {alike:>10.0%} {out.stat().st_size / 1e6:>8.2f} {took:>7.1f}  "
            f"{precision[len('Precision: ') :]}",
            flush=True,
        )


def main() -> None:
    """Every case, in a scratch folder."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, task in CASES:
            recover(name, make, task, Path(tmp))


if __name__ == "__main__":
    main()
    sys.exit(0)
