"""Where calibration, evaluation or benchmark samples come from (a recipe field)."""

from __future__ import annotations

from dataclasses import dataclass

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
    size: tuple[int, int] | None = None  # images: (height, width)
    layout: str = "NCHW"  # images: NCHW or NHWC
    scale: float = 1 / 255  # images: pixel * scale, then (x - mean) / std
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    colour: str = "RGB"  # images: RGB, BGR or L (grey)
    sample_rate: int = 16000  # audio: the rate the model expects
    tokenizer: str = ""  # text: the model's tokenizer.json

    def describe(self) -> str:
        """Short text for logs and reports."""
        if self.kind == "synthetic":
            return f"synthetic (seed {self.seed}, {self.samples or 32} samples)"
        return f"{self.kind} {self.path}" + (f" (first {self.samples})" if self.samples else "")

    def to_cli(self) -> list[str]:
        """The ``--calib``/``--data`` argument and the options that shape it (sample count, image
        preprocessing), each only where it differs from the default."""
        if self.kind == "synthetic":
            return [f"synthetic:{self.samples or 32}:{self.seed}"]
        args = [self.path]
        if self.samples:
            args += ["--samples", str(self.samples)]
        default = DataSource()
        if self.kind == "audio" and self.sample_rate != default.sample_rate:
            args += ["--sample-rate", str(self.sample_rate)]
        if self.kind == "text" and self.tokenizer:
            args += ["--tokenizer", self.tokenizer]
        if self.kind != "images":
            return args
        if self.size is not None:
            args += ["--image-size", f"{self.size[0]}x{self.size[1]}"]
        if self.layout != default.layout:
            args += ["--image-layout", self.layout]
        if self.scale != default.scale:
            args += ["--image-scale", repr(self.scale)]
        if self.mean != default.mean:
            args += ["--image-mean", ",".join(repr(v) for v in self.mean)]
        if self.std != default.std:
            args += ["--image-std", ",".join(repr(v) for v in self.std)]
        if self.colour != default.colour:
            args += ["--image-colour", self.colour]
        return args


@dataclass(frozen=True)
class DataProvenance:
    """What an accuracy figure was computed on: carried by every analysis, verdict and report.

    ``kind`` is the data source's kind (``synthetic`` for inputs drawn from the derived input
    specification); ``source`` names it for a person; ``samples`` is how many were used.
    """

    kind: str
    samples: int
    source: str = ""

    @property
    def representative(self) -> bool:
        """True for the user's own data; synthetic inputs prove only that the pipeline runs."""
        return self.kind != "synthetic"

    def text(self) -> str:
        """``8 images from /data/lines`` or ``32 synthetic samples (seed 0)``."""
        if self.kind == "synthetic":
            return (f"{self.samples} synthetic samples drawn from the derived input "
                    "specification")
        unit = {"images": "images", "audio": "audio windows", "text": "text lines"}.get(
            self.kind, "samples")
        where = self.source.rstrip("/").rsplit("/", 1)[-1] if self.source else self.kind
        return f"{self.samples} {unit} from {where}"


def provenance(source: DataSource, samples: int) -> DataProvenance:
    """The provenance of ``samples`` samples read from ``source``."""
    return DataProvenance(source.kind, samples, "" if source.kind == "synthetic" else source.path)
