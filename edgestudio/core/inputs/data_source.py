"""Where calibration, evaluation or benchmark samples come from (a recipe field)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from edgestudio.core.inputs.grammar import (
    parse_floats,
    parse_image_size,
    parse_scale,
    show_floats,
    show_image_size,
    show_scale,
)
from edgestudio.core.job_api.options import declared_options, option, option_argv

SOURCE_KINDS = ("npz", "folder", "images", "audio", "text", "synthetic")
# Kinds that fill the inputs they do not feed from the model's input specification.
SPEC_KINDS = frozenset({"synthetic", "audio", "text"})
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})


@dataclass(frozen=True)
class DataSource:
    """Where calibration or evaluation samples come from.

    ``npz``: arrays named after the model inputs, first axis = samples (``labels`` optional).
    ``folder``: ``.npy``/``.npz`` files or ONNX ``input_*.pb`` test-data folders, sorted by name.
    ``images``: image files, preprocessed as the fields below say. ``audio``: a ``.wav`` (or
    ``.flac``) file or a folder of them, resampled to ``sample_rate`` and cut into windows the
    model runs on. ``text``: a UTF-8 file, one sample per line, encoded with ``tokenizer`` (a
    ``tokenizer.json``; found beside the text or the model when empty). ``synthetic``: seeded
    random data (meaningless ranges; for smoke tests only). ``samples`` caps the count (0: all).
    """

    kind: str = "npz"
    path: str = ""
    samples: int = 0
    seed: int = 0
    # "even" or "odd": every other sample only (after ``samples`` caps them), how one data set
    # is split into calibration and evaluation halves that never share a sample (tune).
    part: str = ""
    # How samples are prepared, declared once: the command line's options, the forms' fields and
    # to_cli() follow. A pixel becomes (pixel * scale - mean) / std.
    size: tuple[int, int] | None = option(
        None,
        "--image-size",
        "resize images to H×W",
        modes=("images",),
        metavar="HxW",
        label="Image size:",
        group="images",
        placeholder="as they are, or HxW, e.g. 224x224",
        parse=parse_image_size,
        show=show_image_size,
    )
    layout: str = option(
        "NCHW",
        "--image-layout",
        "channels first or last",
        ("NCHW", "NHWC"),
        modes=("images",),
        label="Image layout:",
        group="images",
    )
    scale: float = option(
        1 / 255,
        "--image-scale",
        "multiply pixels by this first",
        modes=("images",),
        metavar="F",
        label="Pixel scale:",
        group="images",
        parse=parse_scale,
        show=show_scale,
    )
    mean: tuple[float, ...] = option(
        (0.0,),
        "--image-mean",
        "subtract per channel after scaling",
        modes=("images",),
        metavar="M[,M,M]",
        label="Image mean:",
        group="images",
        parse=parse_floats,
        show=show_floats,
    )
    std: tuple[float, ...] = option(
        (1.0,),
        "--image-std",
        "divide per channel after the mean",
        modes=("images",),
        metavar="S[,S,S]",
        label="Image std:",
        group="images",
        parse=parse_floats,
        show=show_floats,
    )
    colour: str = option(
        "RGB",
        "--image-colour",
        "channel order, or L for grey",
        ("RGB", "BGR", "L"),
        modes=("images",),
        label="Colour:",
        group="images",
    )
    sample_rate: int = option(
        16000,
        "--sample-rate",
        "resample .wav/.flac audio to this rate in Hz",
        modes=("audio",),
        metavar="HZ",
        label="Sample rate (Hz):",
        group="audio",
        minimum=1000,
        maximum=384_000,
    )
    tokenizer: str = option(
        "",
        "--tokenizer",
        "the model's tokenizer.json, for a .txt of sentences (one sample per line)",
        modes=("text",),
        metavar="TOKENIZER_JSON",
        label="Tokenizer:",
        group="text",
        placeholder="the one beside the text file or the model",
    )

    def describe(self) -> str:
        """Short text for logs and reports."""
        if self.kind == "synthetic":
            return f"synthetic (seed {self.seed}, {self.samples or 32} samples)"
        return (
            f"{self.kind} {self.path}"
            + (f" (first {self.samples})" if self.samples else "")
            + (f" ({self.part}-numbered samples)" if self.part else "")
        )

    def to_cli(self) -> list[str]:
        """The ``--calib``/``--data`` argument and the options that shape it (sample count, and the
        preparation its kind uses), each only where it differs from the default."""
        if self.kind == "synthetic":
            return [f"synthetic:{self.samples or 32}:{self.seed}"]
        args = [self.path]
        if self.samples:
            args += ["--samples", str(self.samples)]
        if self.part:
            args += ["--part", self.part]
        return args + option_argv(self, mode=self.kind)


@dataclass(frozen=True)
class DataProvenance:
    """What an accuracy figure was computed on: carried by every analysis, verdict and report.

    ``kind`` is the data source's kind (``synthetic`` for inputs drawn from the derived input
    specification); ``source`` names it for a person; ``samples`` is how many were used.
    """

    kind: str
    samples: int
    source: str = ""
    note: str = ""  # how the samples were made where it matters (a stream's carried state)

    @property
    def representative(self) -> bool:
        """True for the user's own data; synthetic inputs prove only that the pipeline runs."""
        return self.kind != "synthetic"

    def text(self) -> str:
        """``8 images from /data/lines`` or ``32 synthetic samples (seed 0)``."""
        if self.kind == "synthetic":
            return f"{self.samples} synthetic samples drawn from the derived input specification"
        unit = {"images": "images", "audio": "audio windows", "text": "text lines"}.get(
            self.kind, "samples"
        )
        where = self.source.rstrip("/").rsplit("/", 1)[-1] if self.source else self.kind
        return f"{self.samples} {unit} from {where}" + (f" ({self.note})" if self.note else "")


def provenance(source: DataSource, samples: int, note: str = "") -> DataProvenance:
    """The provenance of ``samples`` samples read from ``source`` (``note``: how they were
    made, where it matters)."""
    where = "" if source.kind == "synthetic" else source.path
    if where and source.part:
        where += f" ({source.part}-numbered samples)"
    return DataProvenance(source.kind, samples, where, note)


@functools.lru_cache(maxsize=64)
def _folder_kind(folder: str, mtime_ns: int) -> str:
    """What a folder of samples holds, by its files' suffixes. Kept per folder and its
    modification time (which any file added or removed changes): a form asks at every
    keystroke, and listing a folder of a hundred thousand images takes a while."""
    from edgestudio.core.inputs.media_data import AUDIO_SUFFIXES

    with os.scandir(folder) as entries:
        suffixes = {os.path.splitext(e.name)[1].lower() for e in entries}
    return (
        "audio"
        if suffixes & AUDIO_SUFFIXES and not suffixes & IMAGE_SUFFIXES
        else "images"
        if suffixes & IMAGE_SUFFIXES
        else "folder"
    )


def parse_data_source(
    text: str, samples: int = 0, part: str = "", **preparation: Any
) -> DataSource:
    """``synthetic[:N[:SEED]]``, an ``.npz`` file, a folder of images, audio files (a ``.wav``
    or a folder of them), a ``.txt`` of sentences, or a folder of samples; ``preparation``
    holds DataSource's declared fields (``size``, ``sample_rate``, …), of which the kind found
    takes those it uses (None: the default)."""
    from pathlib import Path

    from edgestudio.core.inputs.media_data import AUDIO_SUFFIXES

    if text.startswith("synthetic"):
        parts = text.split(":")
        try:
            count = int(parts[1]) if len(parts) > 1 and parts[1] else (samples or 32)
            seed = int(parts[2]) if len(parts) > 2 else 0
        except ValueError as exc:
            raise ValueError(f"expected synthetic[:SAMPLES[:SEED]] (got '{text}')") from exc
        return DataSource("synthetic", "", samples=count, seed=seed)
    path = Path(text)
    kind = "npz"
    if path.suffix.lower() in AUDIO_SUFFIXES:
        kind = "audio"
    elif path.suffix.lower() == ".txt":
        kind = "text"
    elif path.is_dir():
        kind = _folder_kind(str(path), path.stat().st_mtime_ns)
    used = {
        f.name: preparation[f.name]
        for f, opt in declared_options(DataSource)
        if opt.used_in(kind) and preparation.get(f.name) is not None
    }
    return DataSource(kind, str(path), samples=samples, part=part, **used)
