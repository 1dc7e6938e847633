"""Calibration and evaluation samples: read, checked against the model's inputs, replayable.

Every source yields the same samples in the same order on every pass (ORT's calibrators and our
per-layer analysis both need that: ARCHITECTURE.md). Samples are produced lazily, one at a time, so
a large folder is never held in memory at once.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs import media_data
from edgestudio.core.inputs.data_source import IMAGE_SUFFIXES, SPEC_KINDS, DataSource
from edgestudio.core.inputs.input_derivation import (
    DeclaredInput,
    declared_inputs,
    derive_candidates,
)
from edgestudio.core.inputs.input_spec import InputSpecification

SYNTHETIC_DEFAULT = 32
Sample = dict[str, np.ndarray]


class DataError(EdgeStudioError):
    """The data does not fit the model, or holds values that would corrupt the result."""


class SampleSet:
    """A replayable sequence of samples (each a dict input name -> array with batch dim 1)."""

    def __init__(
        self,
        source: DataSource,
        inputs: list[DeclaredInput],
        spec: InputSpecification | None = None,
        model_path: Path | None = None,
    ) -> None:
        self.source = source
        self.inputs = inputs
        self.spec = spec  # synthetic samples, and the inputs audio or text do not feed
        self.model_path = model_path  # where a tokenizer.json may sit
        self.carried: dict[str, str] = {}  # audio: state input → the output that carries it on
        self._states: list[Sample] = []  # the carried state after each window, in data order
        self.labels: np.ndarray | None = None
        self.fingerprint: str | None = None  # set by validate()
        self._count = self._prepare()  # every sample read (``samples`` caps it)
        self._kept = (
            self._count
            if not source.part
            else ((self._count + 1) // 2 if source.part == "even" else self._count // 2)
        )
        if self.labels is not None and source.part:
            self.labels = self.labels[0 if source.part == "even" else 1 :: 2]

    def __len__(self) -> int:
        return self._kept

    def __iter__(self) -> Iterator[Sample]:
        if not self.source.part:
            yield from self._every_sample()
            return
        first = 0 if self.source.part == "even" else 1
        for k, sample in enumerate(self._every_sample()):
            if k % 2 == first:
                yield sample

    def _every_sample(self) -> Iterator[Sample]:
        kind = self.source.kind
        if kind == "npz":
            yield from self._npz_samples()
        elif kind == "folder":
            for path in self._files[: self._count]:
                yield self._check(self._read_file(path), path.name)
        elif kind == "images":
            for path in self._files[: self._count]:
                yield self._check({self.inputs[0].name: self._read_image(path)}, path.name)
        elif kind == "audio":
            assert self.spec is not None
            windows = media_data.audio_windows(
                self._files, self.spec, self.source.sample_rate, self.source.seed, self._carry()
            )
            for k, sample in zip(range(self._count), windows, strict=False):
                yield self._check(sample, f"audio window {k}")
        elif kind == "text":
            assert self.spec is not None
            lines = media_data.tokenized(
                self._lines[: self._count], self._tokenizer, self.spec, self.source.seed
            )
            for k, sample in enumerate(lines):
                yield self._check(sample, f"line {k + 1}")
        else:
            if self.spec is None:
                raise DataError("Synthetic data needs the model's input specification.")
            for k in range(self._count):
                yield self.spec.feeds(self.source.seed * 1_000_003 + k)

    @property
    def note(self) -> str:
        """How the samples were made, where a person should know it."""
        if not self.carried or self.model_path is None:
            return ""
        names = ", ".join(f"'{name}'" for name in self.carried)
        return f"state {names} carried from window to window by the float model"

    def _carry(self) -> media_data.Carry | None:
        """For a streaming model: the float model's run on a window, its state outputs as the
        next window's state inputs (a state whose shape does not come back is not carried).

        Windows come in the same order on every pass (calibration and the analysis read the
        data several times): the states are computed on the first pass, by one session, and
        read back on the others."""
        if not self.carried or self.model_path is None:
            return None
        states, position = self._states, itertools.count()

        def carry(sample: Sample) -> Sample:
            k = next(position)
            if k < len(states):
                return states[k]
            inputs, outputs = list(self.carried), list(self.carried.values())
            values = self._state_session.run(outputs, sample)
            states.append(
                {
                    name: np.asarray(value, sample[name].dtype)
                    for name, value in zip(inputs, values, strict=True)
                    if np.shape(value) == sample[name].shape
                }
            )
            return states[k]

        return carry

    @functools.cached_property
    def _state_session(self) -> Any:
        """The float model's session that carries a stream's state (made on first use)."""
        import onnxruntime as ort

        from edgestudio.core.model.sessions import job_session_options

        return ort.InferenceSession(
            str(self.model_path), job_session_options(), providers=["CPUExecutionProvider"]
        )

    # ----- preparation ------------------------------------------------------------------------
    def _prepare(self) -> int:
        cap = self.source.samples
        kind = self.source.kind
        path = Path(self.source.path)
        if kind == "synthetic":
            return cap or SYNTHETIC_DEFAULT
        if not path.exists():
            raise DataError(f"The data path {path} does not exist.")
        if kind in ("audio", "text"):
            return self._prepare_media(path, cap)
        if kind == "npz":
            try:
                self._npz = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise DataError(f"{path.name} is not a readable .npz file: {exc}") from exc
            names = [i.name for i in self.inputs]
            missing = [n for n in names if n not in self._npz.files]
            if missing:
                raise DataError(
                    f"{path.name} has arrays {', '.join(sorted(self._npz.files)) or '(none)'}, "
                    f"but the model's inputs are {', '.join(i.text() for i in self.inputs)}: "
                    f"missing {', '.join(missing)}."
                )
            counts = {n: len(self._npz[n]) for n in names}
            if len(set(counts.values())) > 1:
                raise DataError(
                    f"The arrays in {path.name} hold different numbers of samples: {counts}."
                )
            total = next(iter(counts.values())) if counts else 0
            if "labels" in self._npz.files:
                self.labels = np.asarray(self._npz["labels"])[: cap or total]
            return min(total, cap) if cap else total
        if not path.is_dir():
            raise DataError(f"{path} is not a folder.")
        if kind == "images":
            self._files = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            if len(self.inputs) != 1:
                raise DataError(
                    "Image folders work for models with one input; this model has "
                    f"{len(self.inputs)}: {', '.join(i.text() for i in self.inputs)}."
                )
        else:
            self._files = sorted(
                [p for p in path.iterdir() if p.suffix in (".npy", ".npz")]
                + [p for p in path.iterdir() if p.is_dir() and p.name.startswith("test_data_set")]
            )
        if not self._files:
            raise DataError(
                f"{path} holds no {'images' if kind == 'images' else 'samples'} "
                "(.npy, .npz or test_data_set_* folders)."
            )
        return min(len(self._files), cap) if cap else len(self._files)

    def _prepare_media(self, path: Path, cap: int) -> int:
        if self.spec is None:
            raise DataError(
                f"{self.source.kind.capitalize()} data needs the model's input "
                "specification for the inputs it does not feed."
            )
        try:
            if self.source.kind == "audio":
                self._files = media_data.audio_files(path)
                if not self._files:
                    raise DataError(f"{path} holds no audio files (.wav, .flac, .ogg).")
                total = media_data.count_windows(self._files, self.spec, self.source.sample_rate)
            else:
                self._lines = media_data.text_lines(path)
                self._tokenizer = media_data.find_tokenizer(
                    self.source.tokenizer, path, self.model_path
                )
                total = len(self._lines)
        except media_data.MediaError as exc:
            raise DataError(str(exc)) from exc
        return min(total, cap) if cap else total

    # ----- readers ------------------------------------------------------------------------------
    def _npz_samples(self) -> Iterator[Sample]:
        # NpzFile decompresses a whole array on every access: read each one once.
        if not hasattr(self, "_arrays"):
            self._arrays = {i.name: np.asarray(self._npz[i.name]) for i in self.inputs}
        for k in range(self._count):
            yield self._check(
                {name: a[k : k + 1] for name, a in self._arrays.items()}, f"sample {k}"
            )

    def _read_file(self, path: Path) -> Sample:
        names = [i.name for i in self.inputs]
        if path.is_dir():  # ONNX test data: input_0.pb, input_1.pb … in input order
            sample = {}
            for j, spec in enumerate(self.inputs):
                tensor = onnx.TensorProto()
                try:
                    tensor.ParseFromString((path / f"input_{j}.pb").read_bytes())
                except (OSError, Exception) as exc:
                    raise DataError(f"{path.name}/input_{j}.pb cannot be read: {exc}") from exc
                sample[spec.name] = numpy_helper.to_array(tensor)
            return self._with_batch(sample)
        if path.suffix == ".npy":
            if len(names) != 1:
                raise DataError(
                    f"{path.name}: a .npy file holds one array, the model has inputs "
                    f"{', '.join(names)}; use .npz files named after them."
                )
            return self._with_batch({names[0]: np.load(path, allow_pickle=False)})
        with np.load(path, allow_pickle=False) as data:
            missing = [n for n in names if n not in data.files]
            if missing:
                raise DataError(
                    f"{path.name} has {', '.join(data.files)}; the model's inputs are "
                    f"{', '.join(i.text() for i in self.inputs)}."
                )
            return self._with_batch({n: np.asarray(data[n]) for n in names})

    def _with_batch(self, sample: Sample) -> Sample:
        """Add a leading batch axis where a file holds one sample without it."""
        out = {}
        for spec in self.inputs:
            array = sample[spec.name]
            if array.ndim == len(spec.shape) - 1:
                array = array[None, ...]
            out[spec.name] = array
        return out

    def _read_image(self, path: Path) -> np.ndarray:
        from PIL import Image

        spec = self.inputs[0]
        src = self.source
        try:
            with Image.open(path) as opened:
                image = opened.convert("L" if src.colour == "L" else "RGB")
                if src.size is not None:
                    image = image.resize((src.size[1], src.size[0]), Image.Resampling.BILINEAR)
                array: np.ndarray = np.asarray(image, dtype=np.float32)
        except OSError as exc:
            raise DataError(f"{path.name} is not a readable image: {exc}") from exc
        if array.ndim == 2:
            array = array[..., None]
        if src.colour == "BGR":
            array = array[..., ::-1]
        array = array * np.float32(src.scale)
        array = (array - np.asarray(src.mean, np.float32)) / np.asarray(src.std, np.float32)
        if src.layout == "NCHW":
            array = array.transpose(2, 0, 1)
        return np.ascontiguousarray(array[None, ...]).astype(spec.dtype)

    # ----- checks -------------------------------------------------------------------------------
    def _check(self, sample: Sample, where: str) -> Sample:
        for spec in self.inputs:
            array = sample[spec.name]
            if array.dtype != np.dtype(spec.dtype):
                if np.issubdtype(array.dtype, np.floating) and np.issubdtype(
                    spec.dtype, np.floating
                ):
                    array = array.astype(spec.dtype)
                    sample[spec.name] = array
                else:
                    raise DataError(
                        f"{where}: '{spec.name}' is {array.dtype}, the model expects "
                        f"{spec.dtype} ({spec.text()})."
                    )
            if len(array.shape) != len(spec.shape) or any(
                isinstance(d, int) and d > 0 and d != n
                for d, n in zip(spec.shape, array.shape, strict=False)
            ):
                fit = image_flags(spec.shape) if self.source.kind == "images" else ""
                raise DataError(
                    f"{where}: '{spec.name}' has shape {list(array.shape)}, the model "
                    f"expects {spec.text()}."
                    + (
                        f" Images that fit it: {fit} (the data form's Image size, "
                        "layout and colour)."
                        if fit
                        else axis_hint(tuple(array.shape), spec.shape)
                    )
                )
            if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
                bad = "NaN" if np.isnan(array).any() else "inf"
                raise DataError(
                    f"{where}: '{spec.name}' contains {bad} values; calibration with "
                    "them gives infinite or NaN scales."
                )
        return sample

    def validate(self) -> list[str]:
        """Read every sample once (raising DataError on the first bad one); return warnings.

        The pass also fingerprints the data (:attr:`fingerprint`: SHA-256 of every sample's
        names, types, shapes and bytes, in order), the key calibration results are cached by.
        """
        warnings = []
        zero = {i.name: True for i in self.inputs}
        floating: set[str] = set()  # only float inputs have calibrated ranges
        count = 0
        digest = hashlib.sha256()
        for sample in self:
            count += 1
            for name, array in sorted(sample.items()):
                if np.any(array != 0) or array.size == 0:  # an empty KV cache holds no values
                    zero[name] = False
                if np.issubdtype(array.dtype, np.floating):
                    floating.add(name)
                digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
                digest.update(np.ascontiguousarray(array).tobytes())
        self.fingerprint = digest.hexdigest()
        if count == 0:
            raise DataError("The data holds no samples.")
        for name, all_zero in zero.items():
            # an integer input (an index, a length, a token type of 0) is never quantized:
            # its zeros collapse no range
            if all_zero and name in floating:
                warnings.append(
                    f"Input '{name}' is all zeros in every sample: calibration "
                    "ranges will collapse (scale 1.0, useless quantization)."
                )
        return warnings


def axis_hint(got: tuple[int, ...], wanted: tuple[int | str | None, ...]) -> str:
    """What to change when a sample is one axis off the model's input: an extra axis of size 1
    to drop (an .npz saved as [N, 1, 256] for a [1, 256] input: each sample already gains the
    batch axis), or a missing one; "" otherwise."""

    def fits(shape: tuple[int, ...]) -> bool:
        return len(shape) == len(wanted) and all(
            not (isinstance(d, int) and d > 0) or d == n for d, n in zip(wanted, shape, strict=True)
        )

    if len(got) == len(wanted) + 1:
        for axis, size in enumerate(got):
            if size == 1 and axis > 0 and fits(got[:axis] + got[axis + 1 :]):
                return (
                    f" Each sample has an extra axis of size 1 (axis {axis}; in an .npz, axis "
                    f"{axis} of the saved array after the samples' axis): save the arrays "
                    f"without it (np.squeeze(x, axis={axis}))."
                )
    if len(got) + 1 == len(wanted):
        for axis in range(1, len(wanted)):
            if fits((*got[:axis], 1, *got[axis:])):
                return (
                    f" Each sample lacks an axis of size 1 at position {axis}: save the arrays "
                    f"with it (np.expand_dims(x, axis={axis}))."
                )
    return ""


def image_flags(shape: tuple[int | str | None, ...]) -> str:
    """The image options that make pictures fit an input of ``shape``: ``--image-size
    224x224 --image-layout NHWC`` (and ``--image-colour L`` for one channel); empty when the
    shape is no image's."""
    if len(shape) != 4:
        return ""
    if shape[1] in (1, 3):
        layout, channels, height, width = "NCHW", shape[1], shape[2], shape[3]
    elif shape[3] in (1, 3):
        layout, channels, height, width = "NHWC", shape[3], shape[1], shape[2]
    else:
        return ""
    flags = []
    if isinstance(height, int) and isinstance(width, int) and height > 0 and width > 0:
        flags.append(f"--image-size {height}x{width}")
    flags.append(f"--image-layout {layout}")
    if channels == 1:
        flags.append("--image-colour L")
    return " ".join(flags)


def open_samples(
    source: DataSource,
    model: onnx.ModelProto,
    spec: InputSpecification | None = None,
    model_path: Path | None = None,
) -> SampleSet:
    """Open ``source`` for ``model``. Raises DataError with both sides listed on a mismatch.

    Synthetic samples — and the inputs audio or text do not feed — are drawn from ``spec``
    (the model's verified input specification); without one, from the first spec derived from
    the graph (not proven to run).
    """
    if source.kind in SPEC_KINDS and spec is None:
        spec = next(derive_candidates(model), None)
    samples = SampleSet(source, declared_inputs(model), spec, model_path)
    if source.kind == "audio" and spec is not None:
        samples.carried = media_data.state_pairs(spec, [o.name for o in model.graph.output])
    return samples


class ReplayReader:
    """onnxruntime's CalibrationDataReader protocol over a :class:`SampleSet` (rewindable).

    A calibrator that reads the data more than once says so with :meth:`plan_passes`; the
    progress then runs once over all passes."""

    def __init__(self, samples: SampleSet, progress: object = None) -> None:
        self.samples = samples
        self._it: Iterator[Sample] | None = None
        self._done = 0
        self._passes = 1
        self._progress = progress

    @property
    def sample_count(self) -> int:
        """How many samples one pass reads."""
        return len(self.samples)

    def plan_passes(self, count: int) -> None:
        """The data will be read ``count`` times in all (progress is scaled to match)."""
        self._passes = max(1, count)

    def get_next(self) -> Sample | None:
        """The next sample, or None at the end."""
        if self._it is None:
            self._it = iter(self.samples)
        sample = next(self._it, None)
        if sample is not None:
            self._done += 1
            if callable(self._progress):
                total = max(1, len(self.samples)) * self._passes
                self._progress(min(1.0, self._done / total))
        return sample

    def rewind(self) -> None:
        """Start again from the first sample (progress goes on where a planned pass ends)."""
        self._it = None
        if self._passes == 1:
            self._done = 0

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)
