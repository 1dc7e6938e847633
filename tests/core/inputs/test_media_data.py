"""Audio files and text as evaluation data: read, cut or tokenized the way the model runs, the
other inputs from the input specification, and named as real data in the analysis."""

from __future__ import annotations

import shutil
import wave
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.inputs.calib_data import DataError, open_samples
from edgestudio.core.inputs.data_source import DataSource, parse_data_source
from edgestudio.core.inputs.input_derivation import derive_candidates
from edgestudio.core.inputs.media_data import MAX_WINDOWS_PER_FILE, read_audio, resample
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models


def _wav(path: Path, seconds: float, rate: int = 8000, channels: int = 2) -> np.ndarray:
    """A 440 Hz tone with a rising second partial, 16-bit PCM; returns the mono float mix."""
    t = np.arange(int(seconds * rate)) / rate
    mono = 0.5 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * (200 + 300 * t) * t)
    pcm = (np.repeat(mono[:, None], channels, axis=1) * 32767).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return mono.astype(np.float32)


def test_wav_files_are_read_resampled_and_cut_into_the_windows_the_model_runs_on(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "clips"
    folder.mkdir()
    mono = _wav(folder / "a.wav", 1.0)
    _wav(folder / "b.wav", 0.5)
    samples = read_audio(folder / "a.wav", 16000)
    assert samples.size == 16000 and np.abs(samples).max() <= 0.71
    np.testing.assert_allclose(resample(mono, 8000, 16000)[::2], mono, atol=2e-4)
    source = parse_data_source(str(folder), sample_rate=16000)
    assert source.kind == "audio"
    model = models.state_input(hidden=8)  # x[batch,16] + state[2,batch,8]
    spec = next(derive_candidates(model))
    windows = list(open_samples(source, model, spec))
    # 16,000 + 8,000 samples in windows of 16, at most MAX_WINDOWS_PER_FILE from each file
    assert len(windows) == min(1000, MAX_WINDOWS_PER_FILE) + min(500, MAX_WINDOWS_PER_FILE)
    first = windows[0]
    assert first["x"].shape == (1, 16) and not first["state"].any()  # state from the spec
    np.testing.assert_allclose(first["x"][0], samples[:16])


def test_a_missing_codec_or_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.wav"
    bad.write_bytes(b"RIFF0000WAVEnot really")
    model = models.state_input(hidden=8)
    with pytest.raises(DataError, match=r"broken\.wav"):
        len(open_samples(DataSource("audio", str(bad)), model))


def _tokenizer(path: Path, words: list[str]) -> Path:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, **{w: k + 1 for k, w in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(path))
    return path


@pytest.mark.e2e
def test_text_is_encoded_with_the_models_tokenizer_found_beside_it(tmp_path: Path) -> None:
    src = models.save(models.embedding_encoder(rows=30), tmp_path / "encoder.onnx")
    words = ["the", "edge", "device", "reads", "every", "line", "of", "text", "it", "is", "given"]
    _tokenizer(tmp_path / "tokenizer.json", words)
    text = tmp_path / "data" / "sentences.txt"
    text.parent.mkdir()
    text.write_text("the device reads text\n\nevery line it is given\nunknown words here\n")
    source = parse_data_source(str(text))
    assert source.kind == "text" and source.tokenizer == ""
    samples = list(open_samples(source, models.embedding_encoder(rows=30), None, src))
    assert len(samples) == 3  # the empty line is not a sample
    assert samples[0]["ids"].tolist() == [[1, 3, 4, 8]]  # the device reads text
    assert samples[0]["mask"].tolist() == [[1, 1, 1, 1]]
    assert samples[0]["type_ids"].tolist() == [[0, 0, 0, 0]]
    assert samples[2]["ids"].tolist() == [[0, 0, 0]]  # unknown words: [UNK]

    copy = tmp_path / "copy.onnx"
    shutil.copy(src, copy)
    job = run_job(
        AnalyzeRecipe(float_model=str(src), quant_model=str(copy), data=source), timeout=300
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    analysis = job.report.result
    assert analysis.data is not None and analysis.data.kind == "text"
    assert (
        analysis.verdict is not None and "3 text lines from sentences.txt" in analysis.verdict.data
    )
    assert analysis.verdict.level == "good"  # an identical model, judged on real text


def test_text_without_a_tokenizer_says_how_to_give_one(tmp_path: Path) -> None:
    text = tmp_path / "s.txt"
    text.write_text("hello\n")
    with pytest.raises(DataError, match="tokenizer"):
        open_samples(DataSource("text", str(text)), models.embedding_encoder())


def test_audio_is_never_fed_to_a_features_input(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["mel"], ["y"], keepdims=0)],
        "mel_model",
        [helper.make_tensor_value_info("mel", TensorProto.FLOAT, ["N", 900, 120])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    clip = tmp_path / "speech.wav"
    _wav(clip, 0.5)
    with pytest.raises(DataError, match="front end"):
        list(open_samples(DataSource("audio", str(clip)), model))


def test_a_folder_is_listed_once_until_its_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quantize form asks a folder's kind at every keystroke: it is listed once, and again
    only when a file is added or removed."""
    import os

    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.npy").write_bytes(b"")
    listed: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(path: str) -> object:
        listed.append(path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    assert [parse_data_source(str(folder)).kind for _ in range(5)] == ["folder"] * 5
    assert len(listed) == 1
    (folder / "b.png").write_bytes(b"")
    os.utime(folder, ns=(folder.stat().st_atime_ns, folder.stat().st_mtime_ns + 1_000_000))
    assert parse_data_source(str(folder)).kind == "images"
    assert len(listed) == 2


@pytest.mark.parametrize(
    ("model", "fixed"),
    [(models.scalar_rate(), "sr"), (models.state_input(hidden=8), "state")],
)
def test_inputs_audio_does_not_feed_keep_the_graphs_values_once_the_data_decides_shapes(
    tmp_path: Path, model: onnx.ModelProto, fixed: str
) -> None:
    # Silero VAD: its sample-rate input redrawn as 0–3 and its state as noise sent the
    # calibration run down a branch the float model never takes, and onnxruntime failed there.
    from edgestudio.core.inputs.input_probe import resolve_inputs

    folder = tmp_path / "clips"
    folder.mkdir()
    _wav(folder / "a.wav", 0.25)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    source = parse_data_source(str(folder), sample_rate=16000)
    resolved = resolve_inputs(path, model, data=source, use_cache=False)
    samples = list(open_samples(source, model, resolved.spec, path))
    expected = 16000 if fixed == "sr" else 0.0
    assert samples and all(np.all(s[fixed] == expected) for s in samples)


def _streaming_sum() -> onnx.ModelProto:
    """x[batch,16], state[2,batch,4] → stateN = state + mean(x): each window adds its mean."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("ReduceMean", ["x"], ["m"], name="mean", keepdims=1),
            helper.make_node("Add", ["state", "m"], ["stateN"], name="carry"),
            helper.make_node("Identity", ["m"], ["y"], name="out"),
        ],
        "stream",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", 4]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, "batch", 4]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_streaming_models_state_is_carried_from_window_to_window_within_a_file(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "clips"
    folder.mkdir()
    _wav(folder / "a.wav", 0.004, rate=16000, channels=1)  # 64 samples: 4 windows of 16
    _wav(folder / "b.wav", 0.002, rate=16000, channels=1)  # 2 windows: starts from zeros
    model = _streaming_sum()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    source = parse_data_source(str(folder), sample_rate=16000)
    samples = open_samples(source, model, next(derive_candidates(model)), path)
    assert samples.carried == {"state": "stateN"}
    assert "state 'state' carried from window to window" in samples.note
    windows = list(samples)
    assert len(windows) == 6
    running = np.float32(0)
    for k, window in enumerate(windows[:4]):
        np.testing.assert_allclose(window["state"], np.full((2, 1, 4), running), rtol=1e-5)
        running += window["x"].mean()
        assert k < 1 or window["state"].any()
    assert not windows[4]["state"].any()  # the next file starts over
    # a second pass (calibration and analysis read the data again) reads the states back
    computed = len(samples._states)
    again = list(samples)
    assert len(samples._states) == computed
    assert all(np.array_equal(a["state"], b["state"]) for a, b in zip(windows, again, strict=True))


def test_audio_is_cut_to_the_size_given_for_its_input(tmp_path: Path) -> None:
    # Silero VAD v5 reads 576 samples (512 and 64 of context); derived, it got 512
    from edgestudio.core.inputs.grammar import InputOverrides
    from edgestudio.core.inputs.input_probe import resolve_inputs

    folder = tmp_path / "clips"
    folder.mkdir()
    _wav(folder / "a.wav", 0.01, rate=16000, channels=1)
    model = _streaming_sum()
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "samples"
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    source = parse_data_source(str(folder), sample_rate=16000)
    resolved = resolve_inputs(
        path, model, InputOverrides(shapes=("x=1x40",)), data=source, use_cache=False
    )
    assert resolved.spec.inputs[0].shape == (1, 40)
