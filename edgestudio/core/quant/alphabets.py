"""A CTC recogniser's alphabet (the symbols its classes stand for): given by the user, shipped
in the model's metadata, or a dictionary file beside the model. Pure onnx, for types only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx


def model_alphabet(model: onnx.ModelProto) -> list[str] | None:
    """The character list a recogniser ships in its metadata (PaddleOCR exports write it as
    ``character``, one symbol per line), or None."""
    for prop in model.metadata_props:
        if prop.key in ("character", "characters", "vocab") and "\n" in prop.value:
            return list(str(prop.value).split("\n"))
    return None


# Dictionaries recognisers ship beside the model: PaddleOCR's ppocr_keys_v1.txt / *_dict.txt,
# a CRNN's charset.json or alphabet.txt.
ALPHABET_PATTERNS = (
    "*keys*.txt",
    "*dict*.txt",
    "*charset*.txt",
    "*charset*.json",
    "*alphabet*.txt",
    "*alphabet*.json",
    "*vocab*.txt",
)


def read_alphabet(path: Path) -> list[str]:
    """A dictionary file: a JSON list of symbols, or one symbol per line. Raises ValueError
    when it holds none."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        symbols = json.loads(text)
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise ValueError(f"{path.name} is not a JSON list of symbols")
    else:
        symbols = text.split("\n")
        if symbols and symbols[-1] == "":
            symbols.pop()  # the file's last newline ends a line, it is no symbol
        symbols = [s.rstrip("\r") for s in symbols]
    if not symbols:
        raise ValueError(f"{path.name} holds no symbols")
    return list(symbols)


def find_alphabet(
    model: onnx.ModelProto, model_path: Path | None, explicit: str = ""
) -> tuple[list[str] | None, str]:
    """A CTC recogniser's dictionary and where it came from: ``explicit`` (``--alphabet``), the
    model's metadata, or a dictionary file beside the model (one sharing its name first).
    Raises ValueError when ``explicit`` cannot be read."""
    if explicit:
        try:
            return read_alphabet(Path(explicit)), Path(explicit).name
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"The dictionary {explicit} cannot be read: {exc}") from exc
    shipped = model_alphabet(model)
    if shipped is not None:
        return shipped, "the model's metadata"
    if model_path is None:
        return None, ""
    folder, stem = model_path.parent, model_path.stem.lower()
    found = sorted(
        {p for pattern in ALPHABET_PATTERNS for p in folder.glob(pattern)},
        key=lambda p: (not p.name.lower().startswith(stem), p.name),
    )
    for path in found:
        try:
            return read_alphabet(path), path.name
        except (OSError, ValueError, UnicodeDecodeError):
            continue
    return None, ""
