"""Task metrics: what a quantized model got right *for the model's task*, not only how far its
numbers moved.

An OCR recogniser is judged by the text it reads, a classifier by the class it picks, an encoder
by whether its nearest neighbours stay the same; output SQNR stays a diagnostic beneath. Which
task applies is :mod:`edgestudio.core.quant.task_detection`'s answer (or the user's choice).

Pure numpy (no onnxruntime): meters are fed one sample at a time and keep only what the figure
needs (argmax sequences, pooled vectors), so memory stays bounded on long evaluations.
"""

from __future__ import annotations

import numpy as np

from edgestudio.core.quant.ctc_reads import ctc_reads
from edgestudio.core.quant.mask_regions import MATCH_IOU, regions_found
from edgestudio.core.quant.task_detection import MASK_MAX_CHANNELS, TaskChoice, detection_layout
from edgestudio.core.quant.task_figures import TaskFigure, TaskResult
from edgestudio.core.quant.task_readers import (
    ctc_rows,
    log_softmax,
    match_boxes,
    neighbour_agreement,
    real_positions,
)

# "auto" detects; the others force a metric.
MAX_KEPT = 2000  # samples whose sequences / vectors a meter keeps


# ----- meters -------------------------------------------------------------------------------------
class TaskMeter:
    """Collects one task's figures sample by sample (``add``), then :meth:`result`."""

    def __init__(
        self,
        choice: TaskChoice,
        labels: np.ndarray | None = None,
        alphabet: list[str] | None = None,
        spelled_by: str = "",
    ) -> None:
        self.choice = choice
        self.labels = labels
        # CTC: symbol k is alphabet[k - 1] (0 is the blank), or alphabet[k] when the
        # dictionary lists the blank itself first (as an empty string)
        self.alphabet = alphabet
        self.spelled_by = spelled_by  # where the dictionary came from, for the note
        self.samples = 0
        self._pairs: list[tuple[np.ndarray, np.ndarray]] = []  # argmax rows (float, quant)
        self._agree = self._total = self._agree5 = 0
        self._rows_float: list[int] = []
        self._rows_quant: list[int] = []
        self._cos_sum = 0.0
        self._cos_count = 0
        self._pooled: list[tuple[np.ndarray, np.ndarray]] = []
        self._box_matched = self._box_total = 0
        self._diff_sq = self._ref_sq = 0.0
        self._classes = 0  # CTC: the alphabet size, blank included
        self._kl_sum = 0.0  # language model: KL(float ‖ quantized) summed over positions
        self._tp = self._fp = self._fn = 0  # multi-label: the float model's decisions as truth
        self._regions = [0, 0, 0]  # masks: regions of float's maps, of quantized's, found again
        self._yes_no = False  # classification of one probability (a VAD, a wake word)
        self._masked = False  # an attention mask left padding positions out

    def add(self, ref: np.ndarray, test: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Fold in the chosen output of one sample (float ``ref``, quantized ``test``).

        ``mask``: the sample's attention mask, where the model takes one: per-position figures
        (ids, tokens) count only the positions it marks as real, not the padding."""
        ref = np.asarray(ref, dtype=np.float64)
        test = np.asarray(test, dtype=np.float64).reshape(ref.shape)
        self.samples += 1
        task = self.choice.task
        if task == "ids":
            real = real_positions(mask, ref.shape)
            self._masked |= not real.all()
            same = ref == test
            self._agree += int(same[real].sum())
            self._total += int(real.sum())
            if not same[real].all() and len(self._pairs) < 3:
                where = np.argwhere(~same & real)[0]
                self._pairs.append(
                    (np.asarray([*where]), np.asarray([ref[tuple(where)], test[tuple(where)]]))
                )
        if task == "classification":
            f = ref.reshape(ref.shape[0], -1) if ref.ndim > 1 else ref[None]
            q = test.reshape(ref.shape[0], -1) if ref.ndim > 1 else test[None]
            if f.shape[1] == 1:  # one probability: the decision at 0.5 is the class
                self._yes_no = True
                self._count_decisions(f >= 0.5, q >= 0.5)
                f, q = np.concatenate([0.5 - f, f - 0.5], 1), np.concatenate([0.5 - q, q - 0.5], 1)
            self._add_classes(f, q)
        elif task == "tokens":
            axis = 1 if ref.ndim == 4 else -1
            f, q = ref.argmax(axis=axis), test.argmax(axis=axis)
            real = real_positions(mask, f.shape)
            self._masked |= not real.all()
            self._agree += int((f == q)[real].sum())
            self._total += int(real.sum())
        elif task == "multilabel":
            self._add_decisions(ref, test)
        elif task == "mask":
            self._add_pixels(ref, test)
        elif task == "language-model":
            self._add_next_tokens(ref, test)
        elif task == "ctc":
            self._classes = ref.shape[-1]
            for f_row, q_row in ctc_rows(ref, test):
                if len(self._pairs) < MAX_KEPT:
                    self._pairs.append((f_row, q_row))
        elif task == "embedding":
            self._add_vectors(ref, test)
        elif task == "detection":
            self._add_boxes(ref, test)
        r, t = ref.reshape(-1), test.reshape(-1)
        self._diff_sq += float(((r - t) ** 2).sum())
        self._ref_sq += float((r * r).sum())

    def _add_decisions(self, ref: np.ndarray, test: np.ndarray) -> None:
        """Per-frame multi-label outputs ([..., frames, classes] probabilities): every class's
        decision at 0.5, frame by frame, the float model's as the truth."""
        f = ref.reshape(-1, ref.shape[-1]) >= 0.5
        q = test.reshape(-1, ref.shape[-1]) >= 0.5
        self._agree += int((f == q).all(axis=1).sum())
        self._total += f.shape[0]
        self._count_decisions(f, q)

    def _add_pixels(self, ref: np.ndarray, test: np.ndarray) -> None:
        """Sigmoid maps: every pixel's decision at 0.5, the float model's as the truth, and
        the regions (text lines, objects) those pixels form on each map."""
        f, q = ref >= 0.5, test >= 0.5
        self._agree += int((f == q).sum())
        self._total += f.size
        self._count_decisions(f, q)
        if f.ndim == 4 and f.shape[1] > MASK_MAX_CHANNELS:  # NHWC: one map per last index
            f, q = np.moveaxis(f, -1, 1), np.moveaxis(q, -1, 1)
        planes = f.reshape(-1, *f.shape[-2:]), q.reshape(-1, *q.shape[-2:])
        for f_plane, q_plane in zip(*planes, strict=True):
            in_float, in_quant, found = regions_found(f_plane, q_plane)
            self._regions[0] += in_float
            self._regions[1] += in_quant
            self._regions[2] += found

    def _count_decisions(self, f: np.ndarray, q: np.ndarray) -> None:
        """True/false positives and negatives of ``q``'s decisions against ``f``'s."""
        self._tp += int((f & q).sum())
        self._fp += int((~f & q).sum())
        self._fn += int((f & ~q).sum())

    def _add_next_tokens(self, ref: np.ndarray, test: np.ndarray) -> None:
        """Every position's next-token distribution ([..., vocabulary] logits): whether the
        most likely token stays the same, and KL(float ‖ quantized) of the softmax, in nats."""
        f = ref.reshape(-1, ref.shape[-1])
        q = test.reshape(-1, ref.shape[-1])
        self._agree += int((f.argmax(axis=1) == q.argmax(axis=1)).sum())
        self._total += f.shape[0]
        log_p, log_q = log_softmax(f), log_softmax(q)
        self._kl_sum += float((np.exp(log_p) * (log_p - log_q)).sum())
        top5 = np.argpartition(-q, 4, axis=1)[:, :5] if q.shape[1] > 5 else None
        if top5 is not None:
            self._agree5 += int((top5 == f.argmax(axis=1)[:, None]).any(axis=1).sum())

    def _add_classes(self, ref: np.ndarray, test: np.ndarray) -> None:
        f, q = ref.argmax(axis=1), test.argmax(axis=1)
        self._agree += int((f == q).sum())
        self._total += f.size
        self._rows_float += f.tolist()
        self._rows_quant += q.tolist()
        if ref.shape[1] >= 5:
            top5 = np.argsort(-test, axis=1)[:, :5]
            self._agree5 += int((top5 == f[:, None]).any(axis=1).sum())

    def _add_vectors(self, ref: np.ndarray, test: np.ndarray) -> None:
        # One vector per sample, as it is used downstream: per-position hidden states are
        # mean-pooled into the sentence's embedding (a per-token cosine is far stricter than
        # what a retrieval or similarity user sees).
        f = ref.reshape(-1, ref.shape[-1]).mean(axis=0) if ref.ndim > 1 else ref
        q = test.reshape(-1, ref.shape[-1]).mean(axis=0) if ref.ndim > 1 else test
        norm = float(np.linalg.norm(f) * np.linalg.norm(q))
        if norm > 0:
            self._cos_sum += float(f @ q) / norm
            self._cos_count += 1
        if len(self._pooled) < MAX_KEPT:
            self._pooled.append((f, q))

    def _add_boxes(self, ref: np.ndarray, test: np.ndarray) -> None:
        layout = detection_layout(ref.shape)
        if layout is None:
            return
        per_box = layout[0]
        for b in range(ref.shape[0]):
            fr, qr = ref[b], test[b]
            if fr.shape[0] == per_box:  # [4+C, N] → [N, 4+C]
                fr, qr = fr.T, qr.T
            matched, total = match_boxes(fr, qr)
            self._box_matched += matched
            self._box_total += total

    def accuracy(self) -> dict[str, float] | None:
        """Classification: top-1 agreement, and both accuracies when labels fit the samples."""
        floats, quants = self._rows_float, self._rows_quant
        if not floats:
            return None
        figures = {
            "top1_agreement": float(np.mean(np.equal(floats, quants))),
            "samples": len(floats),
        }
        labels = self.labels
        if labels is not None and len(labels) == len(floats):
            figures["float_top1"] = float(np.mean(np.asarray(labels) == np.asarray(floats)))
            figures["quant_top1"] = float(np.mean(np.asarray(labels) == np.asarray(quants)))
        return figures

    def _f1(self, label: str) -> TaskFigure:
        """F1 of the decisions counted so far, the float model's as the truth."""
        decided = 2 * self._tp + self._fp + self._fn
        return TaskFigure("f1", label, 2 * self._tp / decided if decided else 1.0, 0.98, 0.95)

    def result(self) -> TaskResult:
        """The figures collected so far."""
        c = self.choice
        res = TaskResult(
            c.task,
            c.output,
            c.why,
            self.samples,
            chosen_by=c.chosen_by,
            alternatives=list(c.alternatives),
        )
        if c.task == "classification" and self._total:
            if self._yes_no:  # rare "yes" answers: agreement alone would hide missing them all
                res.figures.append(self._f1("F1 of the yes decisions at 0.5 (float's as truth)"))
            res.figures.append(
                TaskFigure(
                    "top1_agreement",
                    "top-1 agreement",
                    self._agree / self._total,
                    0.99,
                    0.95,
                    count=self._total,
                )
            )
            if self._yes_no:
                res.note = (
                    f"the float model says yes on {self._tp + self._fn} of {self._total} "
                    f"sample(s), the quantized one on {self._tp + self._fp}"
                )
            if self._agree5:
                res.figures.append(
                    TaskFigure(
                        "top5_agreement", "top-5 agreement", self._agree5 / self._total, 0.999, 0.99
                    )
                )
            accuracy = self.accuracy() or {}
            if "float_top1" in accuracy:
                fl, ql = accuracy["float_top1"], accuracy["quant_top1"]
                res.figures.insert(
                    0,
                    TaskFigure(
                        "top1_drop",
                        "top-1 accuracy drop",
                        fl - ql,
                        0.01,
                        0.03,
                        higher_is_better=False,
                        unit="points",
                    ),
                )
                res.note = f"accuracy on your labels: float {fl:.1%}, quantized {ql:.1%}"
            classes = set(self._rows_float)
            if len(classes) == 1 and self._total > 1 and self._agree == self._total:
                res.one_sided = True
                res.note = " ".join(
                    n
                    for n in (
                        res.note,
                        f"Both models give class {classes.pop()} on all {self._total} "
                        "samples: agreement cannot show a decision that changes between "
                        "classes; judge on data where the float model decides both ways.",
                    )
                    if n
                )
            diffs = [
                i
                for i, (a, b) in enumerate(zip(self._rows_float, self._rows_quant, strict=True))
                if a != b
            ]
            res.examples = [
                f"sample {i}: class {self._rows_float[i]} → {self._rows_quant[i]}"
                for i in diffs[:3]
            ]
        elif c.task == "multilabel" and self._total:
            res.figures.append(
                TaskFigure(
                    "frame_agreement",
                    "frames whose decisions all agree",
                    self._agree / self._total,
                    0.99,
                    0.95,
                )
            )
            res.figures.append(self._f1("F1 of the decisions at 0.5 (float's as truth)"))
            res.note = (
                f"{self._total} frames over {self.samples} sample(s); the float model "
                f"says yes {self._tp + self._fn} time(s)"
            )
        elif c.task == "mask" and self._total:
            marked = self._tp + self._fp + self._fn
            in_float, in_quant, found = self._regions
            res.figures.append(
                TaskFigure(
                    "region_f1",
                    f"regions found alike (F1, IoU ≥ {MATCH_IOU:g}, float's as truth)",
                    2 * found / (in_float + in_quant) if in_float + in_quant else 1.0,
                    0.98,
                    0.95,
                )
            )
            res.figures.append(
                TaskFigure(
                    "mask_iou",
                    "IoU of the pixels over 0.5 (float's as truth)",
                    self._tp / marked if marked else 1.0,
                    0.95,
                    0.9,
                    deciding=False,  # edges move a pixel; the regions are what is handed on
                )
            )
            res.figures.append(
                TaskFigure(
                    "pixel_agreement",
                    "pixels decided alike",
                    self._agree / self._total,
                    0.999,
                    0.99,
                    deciding=False,
                )
            )
            res.note = (
                f"{self._total} pixels over {self.samples} sample(s); the float model marks "
                f"{(self._tp + self._fn) / self._total:.1%} of them, in {in_float} region(s) "
                f"(the quantized one: {in_quant}, {found} of float's found again)"
            )
        elif c.task == "ids" and self._total:
            res.figures.append(
                TaskFigure(
                    "identical_share",
                    "values identical (tags, ids)",
                    self._agree / self._total,
                    0.99,
                    0.95,
                )
            )
            res.note = f"{self._total} value(s) over {self.samples} sample(s)" + (
                " (positions the attention mask marks as padding left out)" if self._masked else ""
            )
            res.examples = [
                f"position {tuple(int(i) for i in where)}: {int(v[0])} → {int(v[1])}"
                for where, v in self._pairs
            ]
        elif c.task == "tokens" and self._total:
            res.figures.append(
                TaskFigure(
                    "position_agreement",
                    "argmax agreement per position",
                    self._agree / self._total,
                    0.99,
                    0.95,
                )
            )
        elif c.task == "language-model" and self._total:
            # Bounds from what weight quantization of language models is known to keep:
            # 8-bit ≈ 99 % / KL 0.001, good 5-6-bit ≈ 95 % / 0.01-0.02, 4-bit ≈ 88-93 % /
            # 0.03-0.1 (llama.cpp's KL-divergence statistics against the float model).
            res.figures.append(
                TaskFigure(
                    "next_token_agreement",
                    "next-token top-1 agreement",
                    self._agree / self._total,
                    0.95,
                    0.88,
                )
            )
            res.figures.append(
                TaskFigure(
                    "next_token_kl",
                    "mean KL divergence of the next-token distribution (nats)",
                    self._kl_sum / self._total,
                    0.02,
                    0.1,
                    higher_is_better=False,
                    unit="",
                )
            )
            res.figures.append(
                TaskFigure(
                    "next_token_top5",
                    "float's next token in the quantized top 5",
                    self._agree5 / self._total,
                    0.99,
                    0.97,
                )
            )
            res.note = f"{self._total} positions over {self.samples} sequence(s)"
        elif c.task == "ctc" and self._pairs:
            figures, examples, res.note = ctc_reads(
                self._pairs, self._classes, self.alphabet, self.spelled_by
            )
            res.figures += figures
            res.examples += examples[: max(0, 3 - len(res.examples))]
        elif c.task == "embedding" and self._cos_count:
            # Bounds for embeddings as used (pooled), not raw outputs: a cosine of 0.97 moves
            # similarity scores by a few hundredths and, on real paraphrases, no ranking.
            res.figures.append(
                TaskFigure(
                    "cosine",
                    "mean cosine of the (pooled) embeddings",
                    self._cos_sum / self._cos_count,
                    0.99,
                    0.95,
                    unit="",
                )
            )
            if len(self._pooled) >= 3:
                res.figures.append(
                    TaskFigure(
                        "neighbour_agreement",
                        "nearest-neighbour agreement",
                        neighbour_agreement(self._pooled),
                        0.99,
                        0.9,
                    )
                )
            else:
                res.note = "nearest-neighbour agreement needs at least 3 samples"
        elif c.task == "detection" and self._box_total:
            res.figures.append(
                TaskFigure(
                    "box_agreement",
                    "top-box agreement (IoU ≥ 0.5, same class)",
                    self._box_matched / self._box_total,
                    0.95,
                    0.9,
                )
            )
        if not res.figures and self._ref_sq > 0:  # signal, generic, or nothing else applied
            res.figures.append(
                TaskFigure(
                    "relative_error",
                    "relative error",
                    float(np.sqrt(self._diff_sq / self._ref_sq)),
                    10 ** (-30 / 20),
                    10 ** (-20 / 20),
                    higher_is_better=False,
                )
            )
        return res
