"""A CTC recogniser judged by what it reads: each sequence greedily decoded from the float and
the quantized model's outputs — as text where the model's alphabet spells its classes, else as
class indices — and compared whole (lines read identically) and by edit distance (character
error rate against float). Pure numpy."""

from __future__ import annotations

import numpy as np

from edgestudio.core.quant.task_figures import TaskFigure
from edgestudio.core.quant.task_readers import ctc_blank, ctc_greedy, edit_distance, symbols_text

MAX_EXAMPLES = 3  # lines read differently, shown as examples


def ctc_reads(
    pairs: list[tuple[np.ndarray, np.ndarray]],
    classes: int,
    alphabet: list[str] | None,
    spelled_by: str = "",
) -> tuple[list[TaskFigure], list[str], str]:
    """The figures (lines read identically, character error rate), a few lines read
    differently, and a note saying the blank, the counts and what spelled them, for the
    (float, quantized) class-score sequences ``pairs`` of ``classes`` classes."""
    blank = ctc_blank([f for f, _ in pairs], classes)
    spelled = spells(alphabet, blank, classes)
    edits = length = same = 0
    examples: list[str] = []
    for k, (f, q) in enumerate(pairs):
        fd, qd = (
            read(f, blank, alphabet if spelled else None),
            read(q, blank, alphabet if spelled else None),
        )
        edits += edit_distance(fd, qd)
        length += len(fd)
        same += int(fd == qd)
        if fd != qd and len(examples) < MAX_EXAMPLES:
            examples.append(f"line {k}: {show(fd)} → {show(qd)}")
    figures = [
        TaskFigure(
            "text_agreement",
            "sequences read identically",
            same / len(pairs),
            0.99,
            0.95,
            count=len(pairs),
        ),
        TaskFigure(
            "cer",
            "character error rate vs float",
            edits / max(1, length),
            0.01,
            0.03,
            higher_is_better=False,
        ),
    ]
    unit = "characters of text" if spelled else "symbols"
    said = (
        f", spelled with {spelled_by}"
        if spelled and spelled_by
        else "; no dictionary found (--alphabet FILE spells them)"
        if not alphabet
        else ""
    )
    note = (
        f"blank class {blank}; {len(pairs)} sequences, {length} {unit} read by the float "
        f"model{said}"
    )
    return figures, examples, note


def spells(alphabet: list[str] | None, blank: int, classes: int) -> bool:
    """The dictionary spells the classes: the blank first (PaddleOCR, most CRNNs) or last
    (Keras' and PyTorch-CTC exports with the blank after the alphabet)."""
    return bool(alphabet) and blank in (0, classes - 1)


def read(sequence: np.ndarray, blank: int, alphabet: list[str] | None) -> list[int] | list[str]:
    """Greedy decode; as the text's characters (outer spaces are not text) when ``alphabet``
    spells the classes (see :func:`spells`), else as class indices."""
    decoded = ctc_greedy(sequence, blank)
    if not alphabet:
        return decoded
    if blank != 0 and alphabet[0] != "":  # the blank last: class k is the k-th symbol
        text = "".join(alphabet[k] if k < len(alphabet) else "\ufffd" for k in decoded)
        return list(text.strip())
    if alphabet[0] == "":  # the blank is listed: indices are positions
        text = "".join(alphabet[k] if 0 < k < len(alphabet) else "\ufffd" for k in decoded)
        return list(text.strip())
    # PaddleOCR appends the space after its alphabet: one class past the listed symbols.
    text = "".join(
        alphabet[k - 1] if 0 < k <= len(alphabet) else " " if k == len(alphabet) + 1 else "\ufffd"
        for k in decoded
    )
    return list(text.strip())


def show(decoded: list[int] | list[str]) -> str:
    """A decoded line as a person reads it: quoted text, or the class indices."""
    if decoded and isinstance(decoded[0], str):
        return repr("".join(str(c) for c in decoded))
    return symbols_text([int(c) for c in decoded])
