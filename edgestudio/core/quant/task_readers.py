"""How a task metric reads model outputs, pure numpy: the real positions of a padded sequence,
CTC's greedy decoding and blank, edit distance, nearest neighbours, box matching."""

from __future__ import annotations

import numpy as np

TOP_BOXES = 10
IOU_MATCH = 0.5


def real_positions(mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """The positions of an output of ``shape`` that hold real tokens: where ``mask`` (an
    attention mask ``[N, T]``, matching the output's leading axes) is not 0; all of them
    without a mask that fits."""
    if mask is not None:
        m = np.asarray(mask) != 0
        if m.ndim <= len(shape) and tuple(shape[: m.ndim]) == m.shape:
            return np.broadcast_to(m.reshape(m.shape + (1,) * (len(shape) - m.ndim)), shape)
    return np.ones(shape, dtype=bool)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, in float64 (stable: the row maximum taken out first)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    result: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return result


def ctc_rows(ref: np.ndarray, test: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Argmax sequences per batch row of a ``[B, T, C]`` or ``[T, B, C]`` CTC output."""
    if ref.ndim != 3:
        return []
    time_major = ref.shape[1] == 1 and ref.shape[0] > 1
    f, q = ref.argmax(axis=2), test.argmax(axis=2)
    if time_major:
        f, q = f.T, q.T
    return list(zip(f, q, strict=True))


def ctc_blank(sequences: list[np.ndarray], classes: int) -> int:
    """The blank class: the commonest argmax when it is the first or last class, else 0."""
    counts = np.bincount(
        np.concatenate([s.reshape(-1) for s in sequences]).astype(np.int64), minlength=classes
    )
    common = int(counts.argmax())
    return common if common in (0, classes - 1) else 0


def ctc_greedy(sequence: np.ndarray, blank: int) -> list[int]:
    """CTC greedy decoding: collapse repeats, then drop blanks."""
    out: list[int] = []
    previous = None
    for symbol in sequence.tolist():
        if symbol != previous and symbol != blank:
            out.append(int(symbol))
        previous = symbol
    return out


def edit_distance(a: list[int] | list[str], b: list[int] | list[str]) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def symbols_text(decoded: list[int]) -> str:
    """A decoded sequence's first symbols, for a person: ``[3 1 4 …]``."""
    shown = " ".join(map(str, decoded[:12]))
    return f"[{shown}{' …' if len(decoded) > 12 else ''}]"


def neighbour_agreement(pairs: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """Share of samples whose nearest other sample (cosine) is the same in both models."""

    def nearest(vectors: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms > 0, norms, 1.0)
        sims = unit @ unit.T
        np.fill_diagonal(sims, -np.inf)
        return np.asarray(sims.argmax(axis=1))

    f = np.stack([p[0] for p in pairs])
    q = np.stack([p[1] for p in pairs])
    return float(np.mean(nearest(f) == nearest(q)))


def box_iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one centre-size box with many."""

    def corners(b: np.ndarray) -> tuple[np.ndarray, ...]:
        return (
            b[..., 0] - b[..., 2] / 2,
            b[..., 1] - b[..., 3] / 2,
            b[..., 0] + b[..., 2] / 2,
            b[..., 1] + b[..., 3] / 2,
        )

    ax0, ay0, ax1, ay1 = corners(box)
    bx0, by0, bx1, by1 = corners(boxes)
    w = np.clip(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), 0, None)
    h = np.clip(np.minimum(ay1, by1) - np.maximum(ay0, by0), 0, None)
    inter = w * h
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    return np.asarray(np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0))


def match_boxes(ref: np.ndarray, test: np.ndarray, top: int = TOP_BOXES) -> tuple[int, int]:
    """How many of the float model's ``top`` boxes the quantized model also finds.

    ``ref``/``test``: ``[N, 4 + C]`` rows of centre x, y, width, height and class scores. A
    float box is found when one of the quantized model's ``2·top`` best boxes has the same
    class and IoU ≥ 0.5 with it.
    """

    def best(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        scores = rows[:, 4:]
        score = scores.max(axis=1)
        order = np.argsort(-score)[:k]
        return rows[order, :4], scores[order].argmax(axis=1), score[order]

    f_boxes, f_cls, f_score = best(ref, top)
    q_boxes, q_cls, _ = best(test, 2 * top)
    keep = f_score >= 0.1 * float(f_score.max()) if f_score.size else f_score.astype(bool)
    matched = 0
    for box, cls in zip(f_boxes[keep], f_cls[keep], strict=True):
        same = q_cls == cls
        if same.any() and float(box_iou(box, q_boxes[same]).max()) >= IOU_MATCH:
            matched += 1
    return matched, int(keep.sum())
