"""Our placement and SmoothQuant against NNCF's, side by side on the same real data.

NNCF (OpenVINO's compression framework, ONNX backend) is the library reference for both:
quantizers on the inputs of compute operators only, and SmoothQuant for transformers. We wrote
ours on numpy and onnx (README: recover accuracy) rather than adding its 85 MB; this prints,
for each corpus model, each side's task figure on held-out data (calibration and evaluation
disjoint), its quantization wall time and its size, judged by one analysis job for both.

NNCF is not a dependency: ``pip install nncf`` (or put it on ``PYTHONPATH``) to run this;
without it the benchmark says so and stops. Usage: ``python -m tests.benchmarks bench_vs_nncf``.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.inputs.calib_data import open_samples
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.benchmarks.recovery_table import _figure
from tests.realmodels import realdata
from tests.realmodels.corpus import cache_dir

COUNT = 40  # calibration samples; as many others judge


def _text_data(work: Path, source: Path) -> tuple[DataSource, DataSource]:
    tokenizer = str(source.with_suffix(".tokenizer.json"))
    calib, evaluation = work / "calib.txt", work / "eval.txt"
    calib.write_text("\n".join(realdata.CALIBRATION_SENTENCES) + "\n")
    evaluation.write_text("\n".join(realdata.paraphrase_sentences()[0]) + "\n")
    return (
        DataSource("text", str(calib), tokenizer=tokenizer),
        DataSource("text", str(evaluation), tokenizer=tokenizer),
    )


def _image_data(make: Callable[[int, int], Any]) -> Callable[[Path, Path], Any]:
    def data(work: Path, source: Path) -> tuple[DataSource, DataSource]:
        name = onnx.load(str(source), load_external_data=False).graph.input[0].name
        paths = []
        for label, seed in (("calib", 100), ("eval", 200)):
            x, _ = make(COUNT, seed)
            path = work / f"{label}.npz"
            np.savez(path, **{name: x})
            paths.append(DataSource("npz", str(path)))
        return paths[0], paths[1]

    return data


# model, its data, the task figure, ours (recipe options), NNCF's (quantize() arguments)
CASES: tuple[tuple[str, Callable[[Path, Path], Any], str, dict[str, Any], dict[str, Any]], ...] = (
    (
        "minilm_l6_v2",
        _text_data,
        "cosine",
        {"per_channel": True, "placement": "compute-inputs", "smooth_quant": 0.5},
        {"model_type": "transformer"},  # NNCF's SmoothQuant is on for transformers
    ),
    (
        "ppocr_v4_rec",
        _image_data(realdata.text_lines),
        "text_agreement",
        {"per_channel": True, "placement": "compute-inputs"},
        # quantizers on compute inputs, per-channel weights; activations asymmetric as ours
        # (its default preset, symmetric activations, reads none of these lines)
        {"preset": "mixed"},
    ),
)


def _nncf_quantize(source: Path, calib: DataSource, out: Path, options: dict[str, Any]) -> None:
    import nncf

    model = onnx.load(str(source))
    samples = [dict(s) for s in open_samples(calib, model)]
    # NNCF asks for shapes on every edge ("could lead to inaccurate statistics" otherwise):
    # onnxruntime's pre-processing gives them, as it does before our quantizer.
    from onnxruntime.quantization.shape_inference import quant_pre_process

    shaped = out.with_name(out.stem + "_shaped.onnx")
    quant_pre_process(str(source), str(shaped), skip_symbolic_shape=True)
    model = onnx.load(str(shaped))
    kwargs: dict[str, Any] = {"subset_size": len(samples)}
    if options.get("model_type") == "transformer":
        kwargs["model_type"] = nncf.ModelType.TRANSFORMER
    if options.get("preset") == "mixed":
        kwargs["preset"] = nncf.QuantizationPreset.MIXED
    quantized = nncf.quantize(model, nncf.Dataset(samples), **kwargs)
    onnx.save(quantized, str(out))


def compare(work: Path) -> None:
    """One table row per model and side."""
    print(f"{'model':16} {'side':28} {'figure':>16} {'time s':>7} {'size MB':>8}")
    for model_name, make_data, figure, ours, theirs in CASES:
        source = cache_dir() / f"{model_name}.onnx"
        if not source.is_file():
            print(f"{model_name}: not in the corpus cache (make realmodels) — skipped")
            continue
        folder = work / model_name
        folder.mkdir()
        calib, evaluation = make_data(folder, source)
        rows = []
        started = time.perf_counter()
        ours_out = folder / "ours.onnx"
        job = run_job(
            QuantRecipe(
                model=str(source), output=str(ours_out), calib=calib, overwrite=True, **ours
            ),
            timeout=1800,
        )
        seconds = time.perf_counter() - started
        rows.append(("EdgeStudio " + ", ".join(ours), ours_out, seconds, job.error))
        started = time.perf_counter()
        nncf_out = folder / "nncf.onnx"
        error = None
        try:
            _nncf_quantize(source, calib, nncf_out, theirs)
        except Exception as exc:  # its failure is a result of the comparison
            error = f"{type(exc).__name__}: {str(exc)[:120]}"
        rows.append(
            (
                "NNCF " + (", ".join(theirs) or "defaults"),
                nncf_out,
                time.perf_counter() - started,
                error,
            )
        )
        for side, out, took, failed in rows:
            if failed or (job.state is not JobState.SUCCEEDED and out == ours_out):
                print(f"{model_name:16} {side[:28]:28} failed: {failed}")
                continue
            value = _figure(source, out, evaluation, figure, ())
            shown = "—" if value is None else f"{figure} {value:.4f}"
            size = out.stat().st_size / 1e6
            print(f"{model_name:16} {side[:28]:28} {shown:>16} {took:7.1f} {size:8.1f}")


def main() -> None:
    """Both sides on every case, printed as they finish."""
    try:
        import nncf  # noqa: F401
    except ImportError:
        print("NNCF is not installed (pip install nncf): nothing to compare — skipped")
        return
    # in a scratch folder: what NNCF or onnxruntime's tools leave in the working folder goes too
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        compare(Path(tmp))


if __name__ == "__main__":
    main()
