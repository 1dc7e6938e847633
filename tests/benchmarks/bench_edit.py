"""Cutting a big model: the generated LLaMA-style decoder (weights as external data) cut to its
first 4 layers by the edit job — wall time and peak memory of the process doing it, against the
model's size (``EDGESTUDIO_EDIT_SIZES``, billions of parameters, default ``1``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.bench_int4 import SHAPES
from tests.graph_builders import llama_decoder

# The cut alone (structure edited, kept weights streamed), then the whole job with its check,
# each in a fresh process so that each peak is its own.
CUT = """
import json, resource, sys, time
from pathlib import Path
from edgestudio.core.edit.edit_job import apply_edits, run_edit
from edgestudio.core.edit.edit_recipe import EditRecipe
from edgestudio.core.edit.streamed import save_streamed
from edgestudio.core.model.model_files import load_structure
from edgestudio.core.progress import RecordingReporter
source, staging, whole = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "job"
recipe = EditRecipe(model=str(source), output=str(staging / "first4.onnx"),
                    outputs=("layers.3/mlp_residual",))
started = time.perf_counter()
if whole:
    outcome = run_edit(recipe, RecordingReporter(), staging).outcome
else:
    edited, _ = apply_edits(load_structure(source), recipe, RecordingReporter())
    save_streamed(edited, source.parent, staging, "first4.onnx")
    outcome = "-"
print(json.dumps({"seconds": time.perf_counter() - started, "outcome": outcome,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "kept_bytes": (staging / "first4.onnx.data").stat().st_size}))
"""


def main() -> None:
    """One line per size: weights, the part kept, time and peak memory of the cut."""
    sizes = [float(s) for s in os.environ.get("EDGESTUDIO_EDIT_SIZES", "1").split(",")]
    print(
        f"{'model':>8} {'weights GiB':>11} {'kept GiB':>9} {'cut s':>7} {'peak MiB':>9} "
        f"{'with check s':>12} {'peak MiB':>9}  check"
    )
    for size in sizes:
        layers, hidden, intermediate, vocab = SHAPES[size]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            source = llama_decoder(
                folder, layers=layers, hidden=hidden, intermediate=intermediate, vocab=vocab
            )
            weights = (folder / "decoder.onnx.data").stat().st_size
            results = []
            for step in ("cut", "job"):
                staging = folder / step
                staging.mkdir()
                done = subprocess.run(
                    [sys.executable, "-c", CUT, str(source), str(staging), step],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode:
                    print(f"{size:>7}B {step} failed: {done.stderr.strip().splitlines()[-1:]}")
                    break
                results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            if len(results) == 2:
                cut, job = results
                print(
                    f"{size:>7}B {weights / 2**30:>11.2f} {cut['kept_bytes'] / 2**30:>9.2f} "
                    f"{cut['seconds']:>7.1f} {cut['peak_mib']:>9.0f} {job['seconds']:>12.1f} "
                    f"{job['peak_mib']:>9.0f}  {job['outcome']}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
