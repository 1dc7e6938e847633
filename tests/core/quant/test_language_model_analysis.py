"""A language model judged as one: real sentences through the model's tokenizer into a decoder
with a KV cache, the 4-bit result compared by next-token agreement and KL divergence, equal to
a hand computation on the same token ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edgestudio.core.inputs.calib_data import open_samples
from edgestudio.core.inputs.data_source import parse_data_source
from edgestudio.core.quant.accel.int4_stream import Int4Options, quantize_int4_streamed
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.graph_builders import llama_decoder

LINES = [
    "the edge device reads every line",
    "a small model runs on a phone",
    "it is given the next word and answers",
    "without a network the device reads text",
]
WORDS = " ".join(LINES).split(" ")


def _tokenizer(path: Path) -> Path:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, **{w: k + 1 for k, w in enumerate(dict.fromkeys(WORDS))}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(path))
    return path


def _kl_and_agreement(ref: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    """By hand: softmax of each position's logits, KL(float ‖ quantized), same argmax."""
    kls, same = [], []
    for f, q in zip(ref.reshape(-1, ref.shape[-1]), test.reshape(-1, ref.shape[-1]), strict=True):
        p = np.exp(f - f.max()) / np.exp(f - f.max()).sum()
        r = np.exp(q - q.max()) / np.exp(q - q.max()).sum()
        kls.append(float(np.sum(p * np.log(p / r))))
        same.append(f.argmax() == q.argmax())
    return float(np.mean(kls)), float(np.mean(same))


@pytest.fixture()
def decoder(tmp_path: Path) -> tuple[Path, Path, Path]:
    source = llama_decoder(tmp_path, layers=2, hidden=64, intermediate=160, vocab=300)
    quantize_int4_streamed(source, tmp_path / "q4.onnx", Int4Options(block_size=16))
    _tokenizer(tmp_path / "tokenizer.json")
    text = tmp_path / "sentences.txt"
    text.write_text("\n".join(LINES) + "\n")
    return source, tmp_path / "q4.onnx", text


def test_sentences_feed_a_decoder_with_an_empty_cache(decoder: tuple[Path, Path, Path]) -> None:
    source, _, text = decoder
    import onnx

    samples = list(open_samples(parse_data_source(str(text)), onnx.load(str(source)), None, source))
    assert len(samples) == len(LINES)
    first = samples[0]
    assert first["input_ids"].shape == (1, 6)  # "the edge device reads every line"
    assert first["cos"].shape == (1, 1, 6, 16)  # the same "seq" symbol: the line's length
    assert first["past_key.0"].shape == (1, 4, 0, 16)  # generation starts from the prompt
    session = ort.InferenceSession(str(source))
    assert session.run(["logits"], first)[0].shape == (1, 6, 300)


@pytest.mark.e2e
def test_the_int4_result_is_judged_by_its_next_tokens(decoder: tuple[Path, Path, Path]) -> None:
    source, quantized, text = decoder
    job = run_job(
        AnalyzeRecipe(
            float_model=str(source), quant_model=str(quantized), data=parse_data_source(str(text))
        ),
        timeout=300,
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    analysis = job.report.result
    assert analysis.task is not None and analysis.task.task == "language-model"
    figures = {f.key: f.value for f in analysis.task.figures}

    import onnx

    samples = list(open_samples(parse_data_source(str(text)), onnx.load(str(source)), None, source))
    f_session, q_session = ort.InferenceSession(str(source)), ort.InferenceSession(str(quantized))
    ref = np.concatenate([f_session.run(["logits"], s)[0][0] for s in samples])
    test = np.concatenate([q_session.run(["logits"], s)[0][0] for s in samples])
    kl, agreement = _kl_and_agreement(ref.astype(np.float64), test.astype(np.float64))
    assert figures["next_token_agreement"] == pytest.approx(agreement)
    assert figures["next_token_kl"] == pytest.approx(kl, rel=1e-4)
    assert analysis.verdict is not None and analysis.verdict.level is not None  # real text
    assert "text lines from sentences.txt" in analysis.verdict.data
