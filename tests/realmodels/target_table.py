"""Over the corpus: how much of each CNN and transformer Qualcomm's NPU takes, before → after
the app's fixes, with the provider's reason for every node it still leaves to the CPU.

Each model is quantized for the NPU (``quantize --mode qdq --target qnn-htp``, 8 synthetic
calibration samples: placement does not depend on the data) and checked (``target check``: as
it is, then with its dynamic dims fixed to the sizes it runs at), through the same jobs the
window and the CLI run. A compute node is any node but the graph-edge Q/DQ left to the CPU by
design; "whole" means every compute node is on the NPU.

Usage: ``python -m tests.realmodels.target_table [--only NAME ...] [--markdown FILE]`` (needs
``make realmodels``; about a minute per model here, the emulated NPU's session building most).
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.targets.target_recipe import (
    FOLDED,
    Placement,
    TargetCheck,
    TargetCheckRecipe,
)
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.realmodels.corpus import RealModel, available

# The corpus's CNN and transformer families (the goal is stated for these).
FAMILIES = {
    "cnn-classifier",
    "classifier",
    "ocr-detector",
    "ocr-recogniser",
    "detector",
    "face-detector",
    "eeg-conv1d",
    "audio-cnn",
    "siamese",
    "text-segmenter",
    "transformer-encoder",
    "vision-transformer",
}
JOB_TIMEOUT = 900.0


@dataclass
class Row:
    """One model: its placement before and after the fixes, or why there is none."""

    model: str
    family: str
    before: str = ""
    after: str = ""
    compute_left: int | None = None  # compute nodes the NPU still leaves to the CPU
    reasons: dict[str, int] = field(default_factory=dict)
    problem: str = ""
    seconds: float = 0.0

    @property
    def whole(self) -> bool:
        """Every compute node on the NPU once fixed."""
        return self.compute_left == 0


def _cell(placement: Placement | None) -> str:
    if placement is None:
        return "—"
    if placement.session_error:
        return "no session"
    folded = sum(1 for n in placement.nodes if n.placed == FOLDED)
    compute = len(placement.nodes) - len(placement.by_design) - folded
    return f"{placement.on_target} / {compute}" + (f" ({folded} folded)" if folded else "")


def check(model: RealModel, folder: Path) -> Row:
    """Quantize ``model`` for the NPU and check where its nodes run."""
    row = Row(model.name, model.family)
    started = time.perf_counter()
    quantized = folder / f"{model.name}_htp.onnx"
    quantize = run_job(
        QuantRecipe(
            model=str(model.path),
            output=str(quantized),
            mode="qdq",
            target="qnn-htp",
            calib=DataSource("synthetic", samples=8, seed=0),
        ),
        timeout=JOB_TIMEOUT,
    )
    if quantize.state is not JobState.SUCCEEDED:
        row.problem = f"quantize: {(quantize.error or quantize.state.value).splitlines()[0]}"
        row.seconds = time.perf_counter() - started
        return row
    job = run_job(TargetCheckRecipe(model=str(quantized)), timeout=JOB_TIMEOUT)
    row.seconds = time.perf_counter() - started
    if job.state is not JobState.SUCCEEDED or job.report is None:
        row.problem = f"target check: {(job.error or job.state.value).splitlines()[0]}"
        return row
    result: TargetCheck = job.report.result
    final = result.final
    row.before = _cell(result.before)
    row.after = _cell(result.after) if result.after is not None else "(static)"
    if final.session_error:
        row.problem = f"no session: {final.session_error[:200]}"
        return row
    left = [n for n in final.on_cpu if n not in final.by_design]
    row.compute_left = len(left)
    for n in left:  # grouped by the words, the node names the provider quotes left out
        why = re.sub(r"`[^`]*`", "`…`", n.reason)
        row.reasons[why] = row.reasons.get(why, 0) + 1
    return row


def markdown(rows: list[Row]) -> str:
    """The table, the reasons left, and the count against the goal."""
    lines = [
        "# Nodes on the emulated Hexagon NPU, before → after the fixes",
        "",
        "Made by `python -m tests.realmodels.target_table --markdown docs/target_table.md` "
        "(needs `make realmodels`): each corpus CNN and transformer quantized for the NPU "
        "(`quantize --mode qdq --target qnn-htp`, 8 synthetic calibration samples), then "
        "`target check` as it is and with its fixes: dynamic dims fixed to the sizes it runs at, "
        "what then became constant folded (QDQ kept) "
        "(onnxruntime-qnn 2.7.0, HTP v73, emulated on x86).",
        "",
        "| model | family | on the NPU as it is | after the fixes | compute nodes left "
        "| reasons left (the provider's words) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        reasons = "; ".join(f"{n} × {why[:120]}" for why, n in r.reasons.items()) or r.problem
        left = "—" if r.compute_left is None else str(r.compute_left)
        lines.append(
            f"| {r.model} | {r.family} | {r.before or '—'} | {r.after or '—'} | {left} "
            f"| {reasons.replace('|', '/')} |"
        )
    judged = [r for r in rows if not r.problem.startswith("quantize: The model is already")]
    whole = sum(1 for r in judged if r.whole)
    lines += [
        "",
        f"**{whole} of {len(judged)} models wholly on the NPU after the fixes** "
        f"({100 * whole / max(1, len(judged)):.0f} %; goal ≥ 80 %). Cells read nodes on the "
        "NPU / compute nodes (the graph-edge Q and DQ the provider leaves to the CPU by design "
        "are not counted, nor nodes folded away once the sizes were fixed, by onnxruntime or the fix).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Check every cached CNN/transformer (or ``--only`` some) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=[], help="model names to check")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    models = [
        m for m in available() if m.family in FAMILIES and (not args.only or m.name in args.only)
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            row = check(model, Path(tmp))
            rows.append(row)
            print(
                f"{model.name}: {row.before} → {row.after}, left {row.compute_left} "
                f"{row.problem} ({row.seconds:.0f} s)",
                flush=True,
            )
    table = markdown(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)


if __name__ == "__main__":
    main()
