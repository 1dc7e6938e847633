"""Streamed 4-bit quantization: the same model onnxruntime's MatMulNBitsQuantizer writes, byte
for byte, on small graphs (shared weights, excluded nodes, odd K, both symmetries, external
data), with memory bounded by one weight rather than the model."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto

from edgestudio.core.quant.accel.int4_stream import (
    Int4Options,
    NotStreamableError,
    _weights_to_pack,
    lm_head,
    quantize_int4_streamed,
    streamable,
)
from tests import models
from tests.graph_builders import llama_decoder, residual_mlp, transformer_like
from tests.realmodels.corpus import CORPUS, SKIP_REASON, RealModel


def _stock(source: Path, options: Int4Options) -> onnx.ModelProto:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(
        onnx.load(str(source)),
        block_size=options.block_size,
        is_symmetric=options.symmetric,
        accuracy_level=options.accuracy_level,
        nodes_to_exclude=sorted(options.exclude),
        op_types_to_quantize=options.op_types(),
    )
    quantizer.process()
    return quantizer.model.model


def _inline(model: onnx.ModelProto | Path) -> bytes:
    """The model's bytes with its external data read in (where its weights are stored aside:
    onnx marks a tensor read from external data as stored inline)."""
    model = onnx.load(str(model)) if isinstance(model, Path) else model
    for tensor in model.graph.initializer:
        tensor.ClearField("data_location")
    return model.SerializeToString()


CASES = {
    "two matmuls": lambda: models.matmul_model(hidden=96),
    "odd K": lambda: models.matmul_model(hidden=200),  # K = 200: the last block is padded
    "shared weight": lambda: transformer_like(200),  # every MatMul reads the same "w"
    "residual mlp": lambda: residual_mlp(120, hidden=64),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("symmetric", [True, False])
def test_inline_models_are_byte_identical_to_stock(
    case: str, symmetric: bool, tmp_path: Path
) -> None:
    source = models.save(CASES[case](), tmp_path / "float.onnx")
    options = Int4Options(block_size=32, symmetric=symmetric)
    written = quantize_int4_streamed(source, tmp_path / "ours.onnx", options)
    assert written == ["ours.onnx"]
    stock = _stock(source, options)
    assert (tmp_path / "ours.onnx").read_bytes() == stock.SerializeToString()


def test_excluded_nodes_and_accuracy_level_follow_stock(tmp_path: Path) -> None:
    source = models.save(models.matmul_model(hidden=64), tmp_path / "float.onnx")
    options = Int4Options(block_size=16, accuracy_level=4, exclude=frozenset({"mm2"}))
    quantize_int4_streamed(source, tmp_path / "ours.onnx", options)
    assert (tmp_path / "ours.onnx").read_bytes() == _stock(source, options).SerializeToString()
    ops = [n.op_type for n in onnx.load(str(tmp_path / "ours.onnx")).graph.node]
    assert ops == ["MatMulNBits", "Relu", "MatMul"]


def test_a_decoder_with_external_data_matches_stock_and_runs(tmp_path: Path) -> None:
    source = llama_decoder(tmp_path, layers=2, hidden=64, intermediate=160)
    progress: list[tuple[int, int, str]] = []
    options = Int4Options(block_size=32, exclude=frozenset({"logits"}))  # the LM head kept
    written = quantize_int4_streamed(
        source,
        tmp_path / "ours.onnx",
        options,
        lambda done, total, name: progress.append((done, total, name)),
    )
    assert written == ["ours.onnx", "ours.onnx.data"]
    assert [p[0] for p in progress] == list(range(1, 15)) and progress[-1][1] == 14
    assert _inline(tmp_path / "ours.onnx") == _inline(_stock(source, options))
    # the external weights stay external, and the model runs
    kept = onnx.load(str(tmp_path / "ours.onnx"), load_external_data=False)
    assert all(
        t.data_location == TensorProto.EXTERNAL
        for t in kept.graph.initializer
        if t.dims and np.prod(t.dims) > 1000
    )
    session = ort.InferenceSession(str(tmp_path / "ours.onnx"))
    feeds = {
        "input_ids": np.array([[1, 2, 3]], np.int64),
        "cos": np.ones((1, 1, 3, 16), np.float32),
        "sin": np.zeros((1, 1, 3, 16), np.float32),
    }
    for i in range(2):
        feeds[f"past_key.{i}"] = np.zeros((1, 4, 0, 16), np.float32)
        feeds[f"past_value.{i}"] = np.zeros((1, 4, 0, 16), np.float32)
    assert session.run(["logits"], feeds)[0].shape == (1, 3, 256)


@pytest.mark.parametrize("symmetric", [True, False])
def test_embedding_tables_become_gather_block_quantized_as_stock_makes_them(
    symmetric: bool, tmp_path: Path
) -> None:
    source = llama_decoder(tmp_path, layers=1, hidden=64, intermediate=160, vocab=300)
    options = Int4Options(block_size=32, symmetric=symmetric, gather=True)
    quantize_int4_streamed(source, tmp_path / "ours.onnx", options)
    assert _inline(tmp_path / "ours.onnx") == _inline(_stock(source, options))
    ours = onnx.load(str(tmp_path / "ours.onnx"))
    assert [n.op_type for n in ours.graph.node].count("GatherBlockQuantized") == 1
    session = ort.InferenceSession(str(tmp_path / "ours.onnx"))  # the runtime has the kernel
    feeds = {
        "input_ids": np.array([[1, 299, 3]], np.int64),
        "cos": np.ones((1, 1, 3, 16), np.float32),
        "sin": np.zeros((1, 1, 3, 16), np.float32),
        "past_key.0": np.zeros((1, 4, 0, 16), np.float32),
        "past_value.0": np.zeros((1, 4, 0, 16), np.float32),
    }
    assert session.run(["logits"], feeds)[0].shape == (1, 3, 300)


def test_the_lm_head_is_the_widest_projection_reaching_an_output(tmp_path: Path) -> None:
    decoder = onnx.load(
        str(llama_decoder(tmp_path, layers=2, hidden=64, intermediate=160)),
        load_external_data=False,
    )
    assert lm_head(decoder.graph) == "logits"  # not a k/v projection feeding present_*
    assert lm_head(models.matmul_model(hidden=64).graph) == "mm2"  # one head: its last MatMul
    assert lm_head(models.conv_relu_gemm().graph) == ""  # no MatMul at all


def test_what_it_cannot_stream_is_said(tmp_path: Path) -> None:
    assert "subgraphs" in streamable(models.with_if_subgraph(), Int4Options())
    model = models.matmul_model()
    model.graph.initializer[0].CopyFrom(
        onnx.numpy_helper.from_array(np.ones((32, 64), np.float16), "w1")
    )
    assert "float32" in streamable(model, Int4Options())
    with pytest.raises(NotStreamableError, match="float32"):
        quantize_int4_streamed(
            models.save(model, tmp_path / "h.onnx"), tmp_path / "o.onnx", Int4Options()
        )


MEMORY_PROBE = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    import onnx, onnx_ir, onnxruntime.capi._pybind_state  # loaded before the baseline
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    from edgestudio.core.quant.accel.int4_stream import Int4Options, quantize_int4_streamed

    def rss_kb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):  # all resident memory, mapped files too
                return int(line.split()[1])
        return 0

    peak, done = [rss_kb()], []
    base = peak[0]
    def watch():
        while not done:
            peak[0] = max(peak[0], rss_kb())
            time.sleep(0.005)
    threading.Thread(target=watch, daemon=True).start()
    if sys.argv[3] == "ours":
        quantize_int4_streamed(Path(sys.argv[1]), Path(sys.argv[2]), Int4Options())
    else:
        quantizer = MatMulNBitsQuantizer(onnx.load(sys.argv[1]))
        quantizer.process()
    done.append(1)
    print((peak[0] - base) // 1024)
""")


@pytest.mark.e2e
def test_memory_is_one_weight_not_the_model(tmp_path: Path) -> None:
    """Six 1024x8192 weights (32 MiB each, 228 MiB of external data in all): the process's
    own memory grows by less than one layer's weights (112 MiB: what the issue bounds it by;
    measured: one weight and the allocator's slack, 40 MiB traced, 60-66 MiB resident);
    onnxruntime's quantizer, measured the same way, holds the whole model."""
    source = llama_decoder(tmp_path, layers=2, hidden=1024, intermediate=8192, vocab=512, heads=8)
    weights_mib = (tmp_path / "decoder.onnx.data").stat().st_size / 2**20
    assert weights_mib > 200

    def grown(which: str) -> int:
        done = subprocess.run(
            [sys.executable, "-c", MEMORY_PROBE, str(source), str(tmp_path / "q.onnx"), which],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(Path.cwd())},
        )
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip().splitlines()[-1])

    ours, stock = grown("ours"), grown("stock")
    layer_mib = (4 * 1024 * 1024 + 3 * 1024 * 8192) * 4 / 2**20
    assert ours < layer_mib, (ours, stock, weights_mib)
    print(f"resident memory grown: ours {ours} MiB, stock {stock} MiB")
    assert stock > 0.9 * weights_mib  # the probe sees a whole model when one is held


@pytest.mark.e2e
def test_the_int4_job_streams_and_writes_what_stock_writes(tmp_path: Path) -> None:
    from edgestudio.core.quant.quant_recipes import QuantRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job

    source = llama_decoder(tmp_path, layers=2, hidden=64, intermediate=160)
    out = tmp_path / "q4.onnx"
    job = run_job(
        QuantRecipe(
            model=str(source), output=str(out), mode="int4", block_size=32, exclude=("logits",)
        )
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert any("one weight at a time" in line for line in job.log)
    assert not (tmp_path / "q4.onnx.data").exists()  # small: one file, as the job writes them
    stock = _stock(
        source, Int4Options(block_size=32, symmetric=True, exclude=frozenset({"logits"}))
    )
    assert _inline(out) == _inline(stock)


@pytest.mark.parametrize("model", CORPUS, ids=lambda m: m.name)
def test_corpus_models_are_byte_identical_to_stock(model: RealModel, tmp_path: Path) -> None:
    """Every real corpus model with a MatMul weight: the streamed result is stock's, byte for
    byte (models it cannot stream, or with no MatMul weight, are skipped saying so)."""
    if not model.path.is_file():
        pytest.skip(reason=SKIP_REASON)
    proto = onnx.load(str(model.path), load_external_data=False)
    options = Int4Options(block_size=32, symmetric=False)
    why = streamable(proto, options)
    if why:
        pytest.skip(reason=f"needs onnxruntime's quantizer: {why}")
    if not _weights_to_pack(proto.graph, options)[1]:
        pytest.skip(reason="no MatMul with a constant weight: nothing to quantize to 4 bits")
    quantize_int4_streamed(model.path, tmp_path / "ours.onnx", options)
    assert _inline(tmp_path / "ours.onnx") == _inline(_stock(model.path, options))


@pytest.mark.parametrize(("hidden", "symmetric"), [(64, True), (64, False), (200, True)])
def test_the_analysis_dequantizes_4bit_weights_as_onnxruntime_computes_them(
    hidden: int, symmetric: bool, tmp_path: Path
) -> None:
    """Fed the identity matrix, MatMulNBits outputs its de-quantized weight: the analysis's
    de-quantization (the Weights tab of a 4-bit model) must equal it."""
    from edgestudio.core.quant.weight_errors import dequantize_nbits

    source = models.save(models.matmul_model(hidden=hidden), tmp_path / "float.onnx")
    quantize_int4_streamed(
        source, tmp_path / "q.onnx", Int4Options(block_size=16, symmetric=symmetric)
    )
    quant = onnx.load(str(tmp_path / "q.onnx"))
    first = quant.graph.node[-1]  # mm2: K = hidden (200: the last block padded)
    assert first.op_type == "MatMulNBits"
    rows = next(a.i for a in first.attribute if a.name == "K")
    single = onnx.helper.make_model(
        onnx.helper.make_graph(
            [first],
            "one",
            [onnx.helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, rows])],
            [onnx.helper.make_tensor_value_info(first.output[0], TensorProto.FLOAT, None)],
            [t for t in quant.graph.initializer if t.name in first.input],
        ),
        opset_imports=list(quant.opset_import),
    )
    single.graph.node[0].input[0] = "x"
    ran = ort.InferenceSession(single.SerializeToString()).run(
        None, {"x": np.eye(rows, dtype=np.float32)}
    )[0]
    ours = dequantize_nbits(first, {t.name: t for t in quant.graph.initializer})
    assert ours is not None and ours.shape == ran.shape
    np.testing.assert_allclose(ours, ran, rtol=1e-6, atol=1e-7)
