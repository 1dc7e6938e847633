"""The recovery table's NPU columns: each model quantized for Qualcomm's Hexagon NPU
(``quantize --target qnn-htp``: onnxruntime's QNN config, per-channel int8 weights, 8- and 16-bit activations) and its
task figure judged in the NPU's own arithmetic (``analyze --target qnn-htp``: onnxruntime-qnn's
HTP backend emulating the NPU on this x86 machine, CPU fallback off) beside the CPU's figure
for the very same model.

The data are the recovery table's (:mod:`tests.benchmarks.recovery_table`): calibrated on 16
samples of the held-out generator and judged on 24 others of it where the case has one (the
user's own case: a few samples of their data), else on 16 corpus samples and judged on the
corpus evaluation set — said per row. A figure is the NPU's or there is none ("does not run
there", with the provider's reason): never the CPU's in its place.

Usage: ``python -m tests.benchmarks.npu_column [--only NAME ...] [--markdown FILE]`` (needs the
corpus, ``make realmodels``, and onnxruntime-qnn, which ``make`` installs on x86-64 Linux).
"""

from __future__ import annotations

import time
from pathlib import Path

from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.benchmarks.recovery_table import Case, _data, _pct, table_main, task_figure
from tests.realmodels.corpus import cache_dir

# (label, activations, weights), all per-channel: per-tensor weights read 0 % of the held-out
# lines on both recognisers, on the NPU and on the CPU alike. A16W16 (what recovers the
# recognisers on the CPU) is left out: one analysis of PP-OCRv4 rec on 24 lines ran over 11
# minutes on the emulated NPU here (every line width a session of its own) without finishing.
RECIPES = (("A8W8", "uint8", "int8"), ("A16W8", "uint16", "int8"))
TIMEOUT = 3600


def _cell(npu: tuple[float | None, str], cpu: tuple[float | None, str]) -> str:
    """'NPU x % / CPU y %', or the reason the NPU gave none."""
    if npu[0] is None:
        return f"does not run there: {npu[1]} (CPU {_pct(cpu[0])})"
    return f"{_pct(npu[0])} / {_pct(cpu[0])}"


def row(case: Case, work: Path) -> str:
    """One row (Markdown): the case's data, then per recipe the figure on the NPU / the CPU."""
    source = cache_dir() / f"{case.model}.onnx"
    if not source.is_file():
        return f"| {case.model} | not in the corpus cache (make realmodels) |"
    try:
        split = _data(case, work, source)
    except FileNotFoundError as exc:  # a generator's tool missing here (espeak-ng: make sysdeps)
        return f"| {case.model} | {case.data}: cannot be made here ({exc}) |"
    if split.held_calib is not None and split.held_out is not None:
        calib, judge, said = split.held_calib, split.held_out, "held-out generator: 16 / 24"
    elif split.held_out is not None:  # audio: the held-out voices judge, corpus clips calibrate
        calib, judge, said = split.small, split.held_out, "corpus 16 / held-out generator's clips"
    else:
        calib, judge, said = split.small, split.evaluation, "corpus (no second generator): 16 / 40"
    started = time.perf_counter()
    cells = []
    for label, activations, weights in RECIPES:
        out = work / f"{case.model}_{label}_htp.onnx"
        job = run_job(
            QuantRecipe(
                model=str(source),
                output=str(out),
                overwrite=True,
                mode="qdq",
                target="qnn-htp",
                activation_type=activations,
                weight_type=weights,
                per_channel=True,
                calib=calib,
                shapes=case.shapes,
            ),
            timeout=TIMEOUT,
        )
        if job.state is not JobState.SUCCEEDED:
            cells.append(f"quantize failed: {(job.error or '').splitlines()[0][:120]}")
            continue
        npu = task_figure(source, out, judge, case.figure, case.shapes, "qnn-htp")
        cpu = task_figure(source, out, judge, case.figure, case.shapes, "cpu")
        cells.append(_cell(npu, cpu))
    took = time.perf_counter() - started
    return f"| {case.model} | {case.figure} | {said} | {' | '.join(cells)} | {took / 60:.1f} min |"


HEADER = (
    "| model | task figure | data (calibrate / judge) | "
    + " | ".join(
        f"{label} per-channel for the NPU: on the NPU / on the CPU" for label, *_ in RECIPES
    )
    + " | time |\n|---|---|---|---|---|---|"
)


def main() -> None:
    """The NPU columns."""
    table_main(__doc__ or "", HEADER, row)


if __name__ == "__main__":
    main()
