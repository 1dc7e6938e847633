"""A second, independent generator of real data for the corpus — the part set aside.

:mod:`tests.realmodels.realdata` renders DejaVu faces on plain light grey, width 320, its own
word list, eSpeak's eight voices over hum. Recipes were developed on that data. Judged only on
it, a recipe can win on one generator and fail on another (per-channel read 100 % of our lines
and 25 % of someone else's). This module makes the same tasks' data another way, and no recipe
is ever tuned on it: other font families (Liberation, FreeFont, Noto — Debian's
fonts-liberation, fonts-freefont-ttf, fonts-noto-mono; ``make realmodels`` installs them), other
sizes and colours, tinted and graded backgrounds, a slight skew, blur, noise and JPEG
compression, lines up to 480 wide, other texts (addresses, times, codes, mixed case), other
voices and speaking rates over white or pink noise. The recovery table judges every winner on
it, in a column of its own.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from tests.realmodels import realdata

FONT_PATHS = (
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSerif.ttf",
    "/usr/share/fonts/truetype/freefont/FreeMonoBold.ttf",
    "/usr/share/fonts/truetype/noto/NotoMono-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSansMono-Bold.ttf",
)
WORDS = (
    "Warehouse",
    "receipt",
    "Lisbon",
    "customer",
    "ticket",
    "platform",
    "voucher",
    "Oslo",
    "express",
    "parcel",
    "meeting",
    "Friday",
    "gateway",
    "firmware",
    "kitchen",
    "garden",
    "amount",
    "Madrid",
    "route",
    "signal",
    "window",
    "printer",
    "Avenue",
    "Road",
)
VOICES = ("en-us+f2", "en-gb+m2", "en+f4", "en-us+m4", "en-gb-x-rp", "en+f5")


def fonts() -> list[str]:
    """The held-out font files installed here (DejaVu never among them)."""
    return [p for p in FONT_PATHS if Path(p).is_file()]


def _font(size: int, k: int) -> ImageFont.FreeTypeFont:
    available = fonts()
    if not available:
        raise FileNotFoundError(
            "no held-out font is installed (apt install fonts-liberation fonts-freefont-ttf, "
            "or make realmodels)"
        )
    return ImageFont.truetype(available[k % len(available)], size)


def sentences(count: int, seed: int = 0) -> list[str]:
    """Printed strings of other shapes than :func:`realdata.sentences`: addresses, times,
    codes and mixed-case phrases, some with punctuation."""
    rng = np.random.default_rng(seed + 7919)
    out = []
    for k in range(count):
        kind = k % 5
        if kind == 0:
            out.append(f"{rng.integers(1, 250)} {rng.choice(WORDS)} {rng.choice(('Road', 'St.'))}")
        elif kind == 1:
            out.append(f"{rng.integers(0, 24):02d}:{rng.integers(0, 60):02d} {rng.choice(WORDS)}")
        elif kind == 2:
            letters = "".join(rng.choice(list("ABCDEFGHJKLMNPRSTUVWXYZ"), 3))
            out.append(f"{letters}-{rng.integers(1000, 9999)}")
        elif kind == 3:
            out.append(f"{rng.choice(WORDS)}, {rng.choice(WORDS).lower()}!")
        else:
            out.append(f"Total: {rng.integers(1, 9999)},{rng.integers(0, 99):02d}")
    return out


def _background(width: int, height: int, rng: np.random.Generator) -> Image.Image:
    """A tinted background with a soft gradient, as paper under uneven light."""
    tint = rng.integers(200, 250, 3).astype(np.float32)
    fade = np.linspace(0, rng.uniform(-25, 25), width, dtype=np.float32)[None, :, None]
    pixels = np.clip(np.broadcast_to(tint, (height, width, 3)) + fade, 0, 255)
    return Image.fromarray(pixels.astype(np.uint8), "RGB")


def _degrade(image: Image.Image, rng: np.random.Generator) -> Image.Image:
    """Blur, sensor noise and JPEG compression, each by a random amount."""
    image = image.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.0, 1.1))))
    pixels = np.asarray(image, np.float32)
    pixels = pixels + rng.normal(0, rng.uniform(0, 8), pixels.shape)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=int(rng.integers(35, 85)))
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def render_line(text: str, k: int, seed: int, height: int = 48) -> Image.Image:
    """A line in a held-out face, size and colour, slightly skewed, on a graded background."""
    rng = np.random.default_rng(seed * 10007 + k)
    font = _font(int(height * rng.uniform(0.45, 0.8)), k)
    left, top, right, bottom = font.getbbox(text)
    margin = int(rng.integers(4, 20))
    width, tall = right - left + 2 * margin, bottom - top + 2 * int(rng.integers(4, 12))
    image = _background(width, tall, rng)
    ink = tuple(int(v) for v in rng.integers(0, 90, 3))
    ImageDraw.Draw(image).text(
        (margin - left, (tall - bottom - top) // 2), text, fill=ink, font=font
    )
    image = image.rotate(float(rng.uniform(-2, 2)), expand=True, fillcolor=image.getpixel((0, 0)))
    return _degrade(image, rng)


def text_lines(count: int = 24, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """``x[count, 3, 48, 480]`` for a PaddleOCR recogniser (lines up to 480 wide), and the text
    of each line."""
    texts = sentences(count, seed)
    return (
        np.stack(
            [realdata.paddle_array(render_line(t, k, seed), 48, 480) for k, t in enumerate(texts)]
        ),
        texts,
    )


def text_lines_320(count: int = 24, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """The same held-out lines at width 320, for a recogniser whose width is fixed."""
    texts = sentences(count, seed)
    return (
        np.stack([realdata.paddle_array(render_line(t, k, seed)) for k, t in enumerate(texts)]),
        texts,
    )


def direction_lines(count: int = 32, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``x[count, 3, 48, 192]`` held-out lines, every other one turned 180°; labels 0 or 1."""
    arrays, labels = [], []
    for k, text in enumerate(sentences(count, seed)):
        image = render_line(text, k, seed)
        flipped = k % 2 == 1
        arrays.append(realdata.paddle_array(image.rotate(180) if flipped else image, 48, 192))
        labels.append(int(flipped))
    return np.stack(arrays), np.asarray(labels, np.int64)


def _page(k: int, seed: int, size: tuple[int, int] = (320, 420)) -> Image.Image:
    rng = np.random.default_rng(seed * 7001 + k)
    page = _background(*size, rng)
    draw = ImageDraw.Draw(page)
    y = int(rng.integers(12, 40))
    for line in sentences(int(rng.integers(7, 12)), seed * 131 + k):
        font = _font(int(rng.integers(16, 28)), k + y)
        draw.text((int(rng.integers(10, 40)), y), line, fill=(40, 30, 60), font=font)
        y += int(rng.integers(28, 40))
    return _degrade(page, rng)


def rotated_pages(count: int = 24, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``x[count, 3, 224, 224]`` held-out pages turned clockwise by 0/90/180/270° (labels 0–3),
    prepared as :func:`realdata.rotated_pages` prepares its own."""
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    arrays, labels = [], []
    for k in range(count):
        quarter = k % 4
        page = _page(k, seed).rotate(90 * quarter, expand=True)
        array = np.asarray(page.resize((224, 224), Image.Resampling.BILINEAR), np.float32)
        arrays.append(((array / 255.0 - mean) / std).transpose(2, 0, 1))
        labels.append((4 - quarter) % 4)
    return np.stack(arrays).astype(np.float32), np.asarray(labels, np.int64)


def detector_pages(count: int = 24, seed: int = 3) -> tuple[np.ndarray, None]:
    """``x[count, 3, 416, 320]`` held-out pages for a DB text detector, as PaddleOCR prepares
    them."""
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    arrays = []
    for k in range(count):
        page = _page(k, seed, (320, 416))
        array = np.asarray(page, np.float32)[..., ::-1]
        arrays.append(((array / 255.0 - mean) / std).transpose(2, 0, 1))
    return np.stack(arrays).astype(np.float32), None


HELD_OUT_SENTENCES = (
    "Our neighbours adopted two small cats last spring.",
    "The bakery on the corner sells bread until noon.",
    "Please restart the router before calling support.",
    "The lecture about volcanoes was surprisingly funny.",
    "Tickets for the concert sold out within an hour.",
    "The ferry crosses the bay twice every afternoon.",
    "He repaired the bicycle with a borrowed wrench.",
    "A storm knocked out the power in the whole valley.",
)


def speech_clips(folder: Path, count: int = 8, seed: int = 4, rate: int = 16000) -> list[Path]:
    """``count`` WAV files of other voices, rates and noise than :func:`realdata.speech_clips`:
    eSpeak NG's held-out voices at 110–210 words a minute, other sentences, white or pink noise
    at 5–25 dB SNR. Raises FileNotFoundError without eSpeak NG."""
    import shutil
    import subprocess

    from edgestudio.core.inputs.media_data import read_audio

    if shutil.which("espeak-ng") is None:
        raise FileNotFoundError("espeak-ng is not installed (make realmodels)")
    rng = np.random.default_rng(seed + 104729)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        text = HELD_OUT_SENTENCES[(k + seed) % len(HELD_OUT_SENTENCES)]
        raw = folder / f".speech_{k}.wav"
        voice = VOICES[int(rng.integers(len(VOICES)))]
        subprocess.run(
            [
                "espeak-ng",
                "-v",
                voice,
                "-s",
                str(int(rng.integers(110, 210))),
                "-w",
                str(raw),
                text,
            ],
            check=True,
            timeout=60,
        )
        speech = read_audio(raw, rate)
        raw.unlink()
        gaps = [np.zeros(int(rate * rng.uniform(0.2, 1.2)), np.float32) for _ in range(2)]
        signal = np.concatenate([gaps[0], speech, gaps[1]])
        power = float(np.mean(speech**2)) or 1e-6
        noise = rng.standard_normal(signal.size).astype(np.float32)
        if k % 2:  # pink-ish: integrated white noise, its low end stronger
            noise = np.cumsum(noise) - np.convolve(np.cumsum(noise), np.ones(64) / 64, "same")
            noise = noise.astype(np.float32)
        snr_db = rng.uniform(5, 25)
        noise *= np.sqrt(power / 10 ** (snr_db / 10) / (float(np.mean(noise**2)) or 1e-6))
        paths.append(realdata.write_wav(folder / f"heldout_{k:02d}.wav", signal + noise, rate))
    return paths
