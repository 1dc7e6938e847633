"""The task metrics a quantized model can be judged by, by name: what recipes, the CLI and the
forms offer (kept apart from their detection, which needs onnx, so that parsing a command line
does not import it)."""

from __future__ import annotations

TASKS = (
    "auto",
    "classification",
    "multilabel",
    "tokens",
    "ids",
    "language-model",
    "ctc",
    "embedding",
    "detection",
    "mask",
    "signal",
    "generic",
)
TASK_LABELS = {
    "classification": "classification (top-1 / top-5 agreement)",
    "multilabel": "per-frame multi-label (decisions at 0.5 of every class at every time step: "
    "frame agreement and F1)",
    "tokens": "per-position classes (argmax agreement at every position)",
    "ids": "integer outputs (tags, ids, an ArgMax: the share identical)",
    "language-model": "language model (next-token top-1 agreement and the KL divergence of the "
    "next-token distribution, at every position)",
    "ctc": "CTC sequence recognition (greedy decode: exact text and character error rate)",
    "embedding": "embeddings (cosine of the pooled vectors, nearest-neighbour agreement)",
    "detection": "detection (IoU-matched agreement of the top boxes)",
    "mask": "per-pixel mask (Sigmoid maps of a text detector or a segmenter: the regions the "
    "pixels over 0.5 form, found again at IoU ≥ 0.5; the pixels' IoU and agreement)",
    "signal": "signal / regression (relative error)",
    "generic": "output SQNR and cosine",
}

__all__ = ["TASKS", "TASK_LABELS"]
