"""Audio files and text as model inputs: the user's own recordings and sentences.

Audio (``.wav`` read with the standard library; ``.flac``/``.ogg`` through ``soundfile`` when it
is installed) is mixed to mono, resampled to the model's rate and cut into consecutive windows
of the length the model runs on (the input specification's size for that axis, which a
``--shape`` changes): one window is one sample. Text is one sample per line, encoded with the
model's own tokenizer (a Hugging Face ``tokenizer.json``, given or found beside the text or the
model) into ids, attention mask and token types. Every other input (recurrent state, a sample
rate, …) comes from the input specification — except the state of a streaming model (a VAD's),
which the float model carries from one window of a file to the next, as it runs on a stream.
"""

from __future__ import annotations

import wave
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.input_spec import InputEntry, InputSpecification

AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".ogg"})
MAX_WINDOWS_PER_FILE = 256
Sample = dict[str, np.ndarray]


class MediaError(EdgeStudioError):
    """An audio file or a text cannot be read or does not fit the model."""


# ----- audio ----------------------------------------------------------------------------------
def audio_files(path: Path) -> list[Path]:
    """The audio files at ``path`` (one file, or a folder's files sorted by name)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.suffix.lower() in AUDIO_SUFFIXES)


def read_audio(path: Path, rate: int) -> np.ndarray:
    """``path`` as float32 mono samples in [-1, 1] at ``rate`` Hz."""
    if path.suffix.lower() == ".wav":
        samples, source_rate = _read_wav(path)
    else:
        try:
            import soundfile
        except ImportError as exc:
            raise MediaError(
                f"{path.name}: reading {path.suffix} files needs the soundfile "
                "package (pip install soundfile); .wav files need nothing."
            ) from exc
        try:
            data, source_rate = soundfile.read(str(path), dtype="float32", always_2d=True)
        except Exception as exc:  # libsndfile's own errors
            raise MediaError(f"{path.name} is not a readable audio file: {exc}") from exc
        samples = data.mean(axis=1)
    return resample(samples.astype(np.float32), int(source_rate), rate)


def _read_wav(path: Path) -> tuple[np.ndarray, int]:
    try:
        with wave.open(str(path), "rb") as w:
            width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except (wave.Error, EOFError, OSError, RuntimeError, ValueError) as exc:
        raise MediaError(f"{path.name} is not a readable PCM .wav file: {exc}") from exc
    values: np.ndarray
    if width == 1:
        values = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128) / 128
    elif width in (2, 4):
        dtype = np.int16 if width == 2 else np.int32
        values = np.frombuffer(raw, dtype).astype(np.float32) / float(np.iinfo(dtype).max)
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        ints = np.where(ints >= 1 << 23, ints - (1 << 24), ints)
        values = ints.astype(np.float32) / float(1 << 23)
    else:
        raise MediaError(f"{path.name}: {8 * width}-bit samples are not supported.")
    return values.reshape(-1, channels).mean(axis=1), rate


def resample(samples: np.ndarray, source: int, target: int) -> np.ndarray:
    """Linear-interpolation resampling (enough for evaluation data; a model's own front end
    may use a better filter)."""
    if source == target or samples.size == 0:
        return samples
    count = max(1, round(samples.size * target / source))
    positions = np.arange(count) * (source / target)
    resampled: np.ndarray = np.interp(positions, np.arange(samples.size), samples)
    return resampled.astype(np.float32)


def audio_target(spec: InputSpecification) -> InputEntry:
    """The input that takes the waveform: the first float input that is not state or a mask.

    Only a waveform (one axis longer than one besides the batch) is fed: an input of features
    (a mel spectrogram ``[N, 900, 120]``) needs the model's own front end, and a generic one
    would be real audio processed wrongly.
    """
    for entry in spec.inputs:
        if (
            np.issubdtype(np.dtype(entry.dtype), np.floating)
            and entry.shape
            and entry.domain.kind not in ("zeros", "ones")
        ):
            if sum(d > 1 for d in entry.shape[1:]) > 1:
                raise MediaError(
                    f"Input '{entry.name}' {entry.declared_text()} takes features (a "
                    "spectrogram), not a waveform: compute them with the model's own front end "
                    "and give them as an .npz (or a folder of .npy files)."
                )
            return entry
    raise MediaError("The model has no float input to take audio samples.")


def state_pairs(spec: InputSpecification, outputs: list[str]) -> dict[str, str]:
    """The recurrent state a streaming model hands from one window to the next: each state
    input (derived as zeros) and the output that carries it on, by the names exporters give
    them (``state`` → ``stateN``, ``h`` → ``h_out``, ``h0`` → ``hn``)."""
    pairs = {}
    for entry in spec.inputs:
        if entry.domain.kind != "zeros":
            continue
        name = entry.name
        names = [f"{name}N", f"{name}n", f"{name}_out", f"{name}out", name.replace("_in", "_out")]
        if name.endswith("0"):
            names.append(f"{name[:-1]}n")
        found = next((n for n in names if n in outputs and n != name), None)
        if found is not None:
            pairs[name] = found
    return pairs


Carry = Callable[[Sample], Sample]  # a window's sample → the state inputs of the next window


def audio_windows(
    files: list[Path],
    spec: InputSpecification,
    rate: int,
    seed: int = 0,
    carry: Carry | None = None,
) -> Iterator[Sample]:
    """One sample per window of the waveform input's length, file after file. With ``carry``
    (a streaming model), each window after a file's first takes the state the model handed on
    from the window before; a file starts from the specification's state."""
    target = audio_target(spec)
    length = target.shape[-1]
    base = spec.feeds(seed)
    for path in files:
        samples = read_audio(path, rate)
        count = min(MAX_WINDOWS_PER_FILE, max(1, samples.size // length))
        state: Sample = {}
        for k in range(count):
            window = samples[k * length : (k + 1) * length]
            if window.size < length:
                window = np.pad(window, (0, length - window.size))
            sample = {name: value.copy() for name, value in base.items()}
            sample[target.name] = window.reshape(target.shape).astype(target.dtype)
            sample.update(state)
            yield sample
            if carry is not None:
                state = carry(sample)


def count_windows(files: list[Path], spec: InputSpecification, rate: int) -> int:
    """How many samples :func:`audio_windows` yields (read from the files' headers where
    possible)."""
    length = audio_target(spec).shape[-1]
    total = 0
    for path in files:
        frames = _frames(path, rate)
        total += min(MAX_WINDOWS_PER_FILE, max(1, frames // length))
    return total


def _frames(path: Path, rate: int) -> int:
    if path.suffix.lower() == ".wav":
        try:
            with wave.open(str(path), "rb") as w:
                return round(w.getnframes() * rate / w.getframerate())
        except (wave.Error, EOFError, OSError, RuntimeError, ValueError) as exc:
            raise MediaError(f"{path.name} is not a readable PCM .wav file: {exc}") from exc
    return read_audio(path, rate).size


# ----- text -----------------------------------------------------------------------------------
def find_tokenizer(explicit: str, text_path: Path, model_path: Path | None) -> Path:
    """The tokenizer to use: the one given, else ``tokenizer.json`` beside the text or the
    model."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise MediaError(f"The tokenizer {path} does not exist.")
        return path
    folders = [text_path.parent] + ([model_path.parent] if model_path is not None else [])
    for folder in folders:
        candidate = folder / "tokenizer.json"
        if candidate.is_file():
            return candidate
    raise MediaError(
        "Text needs the model's tokenizer: give --tokenizer tokenizer.json, or put "
        "tokenizer.json beside the text file or the model."
    )


def text_lines(path: Path) -> list[str]:
    """The non-empty lines of a UTF-8 text file."""
    try:
        return [
            line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    except (OSError, UnicodeDecodeError) as exc:
        raise MediaError(f"{path.name} is not a readable UTF-8 text file: {exc}") from exc


def _role(entry: InputEntry) -> str:
    name = entry.name.lower()
    if "mask" in name:
        return "mask"
    if "type" in name or "segment" in name:
        return "types"
    if "position" in name:
        return "positions"
    if "id" in name or entry.domain.kind == "integers":
        return "ids"
    return ""


def _is_cache(entry: InputEntry) -> bool:
    """A decoder's KV-cache input (``past_key_values.0.key``, ``past_key.3``, ``cache_v``)."""
    name = entry.name.lower()
    return "past" in name or "cache" in name


def _sequence_sizes(spec: InputSpecification, ids: InputEntry, length: int) -> dict[str, int]:
    """The symbolic sizes a tokenized line fixes: the ids' sequence axis is the line's length
    in every input that declares the same symbol (a rotary table, a mask), and a decoder's KV
    cache starts empty (its past-length axes 0), as generation starts from a prompt."""
    sizes: dict[str, int] = {}
    sequence = ids.declared[-1] if ids.declared else None
    if isinstance(sequence, str):
        sizes[sequence] = length
    for entry in spec.inputs:
        if _is_cache(entry):  # [batch, heads, past, head size] or [batch, past, …]: not axis 0
            sizes.update({d: 0 for d in entry.declared[1:] if isinstance(d, str) and d != sequence})
    return sizes


def tokenized(
    lines: list[str], tokenizer_path: Path, spec: InputSpecification, seed: int = 0
) -> Iterator[Sample]:
    """One sample per line: ids, attention mask and token types where the model takes them
    (a fixed sequence length pads or truncates), the other inputs from ``spec``."""
    tokenizer = _load_tokenizer(tokenizer_path)
    roles = {e.name: _role(e) for e in spec.inputs}
    ids_entry = next((e for e in spec.inputs if roles[e.name] == "ids"), None)
    if ids_entry is None:
        raise MediaError(
            "The model has no input that takes token ids (an integer input named like input_ids)."
        )
    fixed = ids_entry.declared[-1] if ids_entry.declared else None
    if isinstance(fixed, int) and fixed > 0:
        tokenizer.enable_truncation(max_length=fixed)
        tokenizer.enable_padding(length=fixed)
    base = spec.feeds(seed)
    for line in lines:
        encoding = tokenizer.encode(line)
        length = len(encoding.ids)
        values = {
            "ids": encoding.ids,
            "mask": encoding.attention_mask,
            "types": encoding.type_ids,
            "positions": list(range(length)),
        }
        sizes = _sequence_sizes(spec, ids_entry, length)
        sample = (
            spec.scaled(sizes).feeds(seed)
            if sizes
            else {name: value.copy() for name, value in base.items()}
        )
        for entry in spec.inputs:
            role = roles[entry.name]
            if role and len(entry.shape) == 2:
                sample[entry.name] = np.asarray(values[role], entry.dtype).reshape(1, length)
        yield sample


def _load_tokenizer(path: Path) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise MediaError(
            "Text data needs the tokenizers package (pip install tokenizers)."
        ) from exc
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # the library's own parse errors
        raise MediaError(
            f"{path.name} is not a tokenizer.json the tokenizers library reads: {exc}"
        ) from exc
