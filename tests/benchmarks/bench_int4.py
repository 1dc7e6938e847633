"""4-bit weight-only quantization of LLaMA-style decoders (generated, weights as external data)
at growing sizes: the streamed quantizer against onnxruntime's MatMulNBitsQuantizer, side by
side in one run, each in its own process (time and peak anonymous memory: the process's own,
not the pages of the weight file it maps), the outputs compared
byte for byte, and the growth exponent of each (time ~ parameters^k).

``EDGESTUDIO_INT4_SIZES`` picks the models (default ``0.25,0.5,1``: billions of parameters; the
1 B model is 24 layers of 2048 with an MLP of 5632 and a 32k vocabulary, ~5 GB of float32)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tests.benchmarks.bench_quant_scale import growth_exponent
from tests.graph_builders import llama_decoder

# billions of parameters -> (layers, hidden, intermediate, vocab)
SHAPES = {
    0.02: (4, 512, 1408, 8000),
    0.04: (8, 512, 1408, 8000),
    0.08: (8, 768, 2048, 16000),
    0.25: (16, 1024, 2816, 32000),
    0.5: (16, 1536, 4096, 32000),
    1.0: (24, 2048, 5632, 32000),
}

RUN = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    import onnx

    def anon_mib():  # all resident memory (mapped files too)
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
        return 0

    peak, done = [anon_mib()], []
    def watch():
        while not done:
            peak[0] = max(peak[0], anon_mib())
            time.sleep(0.01)
    threading.Thread(target=watch, daemon=True).start()
    source, out, which = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    start = time.perf_counter()
    if which == "ours":
        from edgestudio.core.quant.accel.int4_stream import Int4Options, quantize_int4_streamed
        quantize_int4_streamed(source, out, Int4Options(symmetric=True))
    else:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
        quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), is_symmetric=True)
        quantizer.process()
        # what a caller must do with a >2 GB result: its weights as external data
        onnx.save(quantizer.model.model, str(out), save_as_external_data=True,
                  all_tensors_to_one_file=True, location=out.name + ".data")
    took = time.perf_counter() - start
    done.append(1)
    print(took, max(peak[0], anon_mib()))
""")


def _run(source: Path, out: Path, which: str) -> tuple[float, int]:
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(source), str(out), which],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    seconds, peak_mib = done.stdout.split()[-2:]
    return float(seconds), int(peak_mib)


JOB = textwrap.dedent("""
    import resource, subprocess, sys, time
    start = time.perf_counter()
    subprocess.run(sys.argv[1:], check=True, capture_output=True)
    took = time.perf_counter() - start
    # the largest of the processes it started and waited for (the CLI, its job worker)
    print(took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
""")


def _job(source: Path, out: Path) -> tuple[float, int]:
    """The CLI's whole int4 job: seconds and the peak resident memory of its processes."""
    cli = [
        sys.executable,
        "-m",
        "edgestudio",
        "quantize",
        str(source),
        "-o",
        str(out),
        "--mode",
        "int4",
    ]
    done = subprocess.run(
        [sys.executable, "-c", JOB, *cli],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    seconds, peak_mib = done.stdout.split()[-2:]
    return float(seconds), int(peak_mib)


def _analysis(source: Path, quantized: Path) -> tuple[float, int]:
    """The CLI's analysis of the 4-bit result against the float model on two 16-token prompts
    (synthetic: a pipeline check): seconds and the peak resident memory of its processes."""
    cli = [
        sys.executable,
        "-m",
        "edgestudio",
        "analyze",
        str(source),
        str(quantized),
        "--data",
        "synthetic:2",
        "--shape",
        "input_ids=1x16",
    ]
    done = subprocess.run(
        [sys.executable, "-c", JOB, *cli],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    seconds, peak_mib = done.stdout.split()[-2:]
    return float(seconds), int(peak_mib)


def _same_weights(a: Path, b: Path) -> bool:
    """The two results hold the same graph and the same bytes in every tensor."""
    import onnx

    first, second = onnx.load(str(a)), onnx.load(str(b))
    for model in (first, second):
        for tensor in model.graph.initializer:
            tensor.ClearField("data_location")
    return first.SerializeToString() == second.SerializeToString()


def main() -> None:
    sizes = [float(s) for s in os.environ.get("EDGESTUDIO_INT4_SIZES", "0.25,0.5,1").split(",")]
    print(
        f"{'params':>8}{'weights':>10}{'ours s':>9}{'stock s':>9}{'speed-up':>10}"
        f"{'ours peak':>11}{'stock peak':>12}{'same bytes':>12}{'job s':>8}{'job peak':>10}"
        f"{'analysis s':>12}{'analysis peak':>15}"
    )
    ours_t, stock_t = [], []
    for size in sizes:
        layers, hidden, intermediate, vocab = SHAPES[size]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            start = time.perf_counter()
            source = llama_decoder(
                folder,
                layers=layers,
                hidden=hidden,
                intermediate=intermediate,
                vocab=vocab,
                heads=hidden // 64,
            )
            made = time.perf_counter() - start
            weights_gib = (folder / "decoder.onnx.data").stat().st_size / 2**30
            ours, ours_peak = _run(source, folder / "ours.onnx", "ours")
            stock, stock_peak = _run(source, folder / "stock.onnx", "stock")
            same = (
                _same_weights(folder / "ours.onnx", folder / "stock.onnx")
                if weights_gib < 3
                else None
            )  # compared in memory: both loaded at once
            for name in ("ours.onnx", "ours.onnx.data", "stock.onnx", "stock.onnx.data"):
                (folder / name).unlink(missing_ok=True)  # the disk holds one result at a time
            job, job_peak = _job(source, folder / "job.onnx")
            analysis, analysis_peak = _analysis(source, folder / "job.onnx")
            params = weights_gib * 2**30 / 4 / 1e9
            ours_t.append((params, ours))
            stock_t.append((params, stock))
            print(
                f"{params:>7.2f}B{weights_gib:>8.2f}GiB{ours:>9.1f}{stock:>9.1f}"
                f"{stock / ours:>9.1f}x{ours_peak:>9}MiB{stock_peak:>10}MiB"
                f"{'yes' if same else 'NO' if same is not None else 'not compared':>12}"
                f"{job:>8.1f}{job_peak:>7}MiB{analysis:>12.1f}{analysis_peak:>12}MiB"
                f"   (model made in {made:.0f} s)"
            )
    if len(sizes) > 1:
        print(
            f"time ~ params^k: ours k = {growth_exponent(ours_t):.2f}, stock k = "
            f"{growth_exponent(stock_t):.2f}"
        )
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB)")


if __name__ == "__main__":
    main()
