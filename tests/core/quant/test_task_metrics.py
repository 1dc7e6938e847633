"""Accuracy you can trust, without a worker: the task is detected from the outputs and the graph,
each task figure equals a hand computation, verdicts need representative data and follow the task
metric, advice names only nodes that change the model, latency verdicts respect the noise, and
inputs are derived through the chains real models use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.inputs.data_source import DataProvenance, DataSource, provenance
from edgestudio.core.inputs.input_derivation import derive_candidates
from edgestudio.core.perf.bench_verdicts import bench_verdicts
from edgestudio.core.perf.latency_stats import median_ratio_interval
from edgestudio.core.quant.quantized_graph import existing_quantization
from edgestudio.core.quant.task_detection import TaskChoice, choose_task, detect_task
from edgestudio.core.quant.task_metrics import TaskMeter
from edgestudio.core.quant.task_readers import ctc_greedy, edit_distance, match_boxes
from edgestudio.core.quant.verdicts import analysis_verdict
from edgestudio.core.serialise import to_json
from tests import models

REAL = DataProvenance("images", 8, "/data/lines")
SYNTHETIC = provenance(DataSource("synthetic", samples=8), 8)


def _head(op: str, shape: list[int], name: str = "y", **attrs: object) -> onnx.ModelProto:
    """x → OP → y with the given output shape (what detection reads from the graph)."""
    node = helper.make_node(op, ["x"], [name], name="head", **attrs)
    graph = helper.make_graph(
        [node],
        "head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("op", "shape", "name", "task"),
    [
        ("Softmax", [1, 10], "y", "classification"),
        ("Identity", [1, 1000], "logits", "classification"),
        ("Softmax", [1, 40, 6625], "y", "ctc"),  # a PP-OCR recogniser's output
        ("Softmax", [1, 16, 9], "y", "tokens"),
        ("Identity", [1, 16, 9], "y", "tokens"),
        ("Identity", [1, 16, 384], "last_hidden_state", "embedding"),
        ("LpNormalization", [1, 384], "y", "embedding"),
        ("Identity", [1, 1, 64, 64], "y", "signal"),
        ("Sigmoid", [1, 1, 64, 64], "y", "mask"),  # a DB text detector's probability map
        ("Sigmoid", [1, 64, 32, 32], "y", "signal"),  # a feature map, not a mask
        ("Identity", [1, 1], "prob", "signal"),
        ("Sigmoid", [1, 1], "y", "classification"),  # a wake-word head's yes/no probability
        ("Sigmoid", [1], "probability", "classification"),  # a VAD's, one value per sample
        ("Identity", [1, 3], "y", "signal"),  # three regressed scores (DNSMOS), not classes
    ],
)
def test_the_task_is_detected_from_outputs_and_graph(
    op: str, shape: list[int], name: str, task: str
) -> None:
    model = _head(op, shape, name)
    choice = detect_task(model, {name: np.zeros(shape, np.float32)})
    assert choice.task == task, choice.why
    assert name in choice.why  # the reason names the output


def test_a_detector_is_a_model_fed_images_whose_output_lists_boxes() -> None:
    # YOLO-style [1, 84, 2100]: 4 box values and 80 class scores for each of 2100 candidates
    head = helper.make_node("Conv", ["image", "w"], ["output0"], name="head")
    w = numpy_helper.from_array(np.zeros((84, 3, 1, 1), np.float32), "w")
    graph = helper.make_graph(
        [head, helper.make_node("Reshape", ["output0", "s"], ["boxes"])],
        "yolo",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 42, 50])],
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 84, 2100])],
        [w, numpy_helper.from_array(np.array([1, 84, 2100], np.int64), "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert detect_task(model, {"boxes": np.zeros((1, 84, 2100), np.float32)}).task == "detection"
    # the same shape from a model fed a sequence (an encoder's memory) is no box list
    memory = _head("Identity", [1, 16, 256], "memory_out")
    choice = detect_task(memory, {"memory_out": np.zeros((1, 16, 256), np.float32)})
    assert choice.task == "embedding", choice.why


def test_the_user_can_choose_another_metric() -> None:
    model = _head("Identity", [1, 10])
    choice = choose_task(model, {"y": np.zeros((1, 10), np.float32)}, "embedding")
    assert choice.task == "embedding" and choice.chosen_by == "you"
    assert "classification" in choice.why  # what was detected is still said
    with pytest.raises(ValueError, match="Unknown metric"):
        choose_task(model, {"y": np.zeros((1, 10), np.float32)}, "bleu")


def _one_hot(sequence: list[int], classes: int) -> np.ndarray:
    out = np.full((1, len(sequence), classes), 0.01, np.float32)
    for t, c in enumerate(sequence):
        out[0, t, c] = 1.0
    return out


def test_ctc_figures_equal_a_hand_computation() -> None:
    # float reads [3, 5, 5, 2] ("3 5 5 2" after collapsing with blanks between the 5s);
    # quantized reads [3, 5, 2]: one deletion in four symbols → CER 0.25, not the same text.
    f = [0, 3, 3, 0, 5, 0, 5, 2, 0, 0]
    q = [0, 3, 3, 0, 5, 5, 5, 2, 0, 0]
    assert ctc_greedy(np.array(f), 0) == [3, 5, 5, 2] and ctc_greedy(np.array(q), 0) == [3, 5, 2]
    meter = TaskMeter(TaskChoice("ctc", "y", "test"))
    meter.add(_one_hot(f, 40), _one_hot(q, 40))
    meter.add(_one_hot(f, 40), _one_hot(f, 40))  # a second line read identically
    figures = {fig.key: fig.value for fig in meter.result().figures}
    assert figures["text_agreement"] == pytest.approx(0.5)
    assert figures["cer"] == pytest.approx(1 / 8)  # one edit over 4 + 4 float symbols
    assert edit_distance([1, 2, 3], [1, 3]) == 1 and edit_distance([], [4, 4]) == 2
    assert "line 0" in meter.result().examples[0]


def test_ctc_reads_time_major_outputs_and_finds_the_blank_at_the_end() -> None:
    seq = [39, 3, 39, 4, 4, 39]  # blank is the last class (39) here
    ref = _one_hot(seq, 40).transpose(1, 0, 2)  # [T, B, C]
    meter = TaskMeter(TaskChoice("ctc", "y", "test"))
    meter.add(ref, ref)
    result = meter.result()
    assert "blank class 39" in result.note
    assert {f.key: f.value for f in result.figures}["text_agreement"] == 1.0


def test_classification_figures_and_labels() -> None:
    meter = TaskMeter(TaskChoice("classification", "y", "test"), labels=np.array([1, 2, 0, 1]))
    ref = np.eye(3, dtype=np.float32)[[1, 2, 0, 0]]  # float: 1, 2, 0, 0 (3 of 4 right)
    test = np.eye(3, dtype=np.float32)[[1, 0, 0, 0]]  # quantized: 1, 0, 0, 0 (2 of 4 right)
    for k in range(4):
        meter.add(ref[k : k + 1], test[k : k + 1])
    figures = {f.key: f.value for f in meter.result().figures}
    assert figures["top1_agreement"] == pytest.approx(0.75)
    assert figures["top1_drop"] == pytest.approx(0.25)
    assert meter.accuracy() == {
        "top1_agreement": 0.75,
        "samples": 4,
        "float_top1": 0.75,
        "quant_top1": 0.5,
    }


def test_embedding_neighbours_and_cosine() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((6, 16)).astype(np.float32)
    same = TaskMeter(TaskChoice("embedding", "y", "test"))
    shuffled = TaskMeter(TaskChoice("embedding", "y", "test"))
    for k in range(6):
        same.add(vectors[k : k + 1], vectors[k : k + 1] * 1.001)
        shuffled.add(vectors[k : k + 1], vectors[(k * 5 + 1) % 6][None])
    figures = {f.key: f.value for f in same.result().figures}
    assert figures["cosine"] == pytest.approx(1.0) and figures["neighbour_agreement"] == 1.0
    assert {f.key: f.value for f in shuffled.result().figures}["cosine"] < 0.9


def test_boxes_are_matched_by_iou_and_class() -> None:
    rows = np.zeros((200, 6), np.float32)  # cx, cy, w, h, score class 0, score class 1
    rows[:, :4] = [50, 50, 10, 10]
    rows[0] = [20, 20, 10, 10, 0.9, 0.0]
    rows[1] = [80, 80, 10, 10, 0.0, 0.8]
    moved = rows.copy()
    moved[1, :2] = [95, 95]  # the class-1 box moved off: IoU 0
    assert match_boxes(rows, rows) == (2, 2)
    assert match_boxes(rows, moved) == (1, 2)


def _outputs(sqnr: float) -> list[dict[str, object]]:
    return [{"output": "y", "sqnr_db": sqnr, "cosine": 0.9}]


def test_no_verdict_on_synthetic_data() -> None:
    verdict = analysis_verdict(_outputs(45.0), None, [], data=SYNTHETIC)
    assert verdict.level is None and verdict.label == "Pipeline check"
    assert "synthetic" in verdict.why and "real samples" in verdict.why
    assert to_json(verdict)["level"] is None and not verdict.suggestions
    assert "synthetic" in verdict.data


def test_the_task_metric_decides_and_sqnr_stays_a_diagnostic() -> None:
    # An OCR model whose output moved (11 dB) but which reads every line as the float does.
    meter = TaskMeter(TaskChoice("ctc", "y", "softmax over 40 symbols"))
    line = _one_hot([0, 3, 0, 7, 7, 0], 40)
    meter.add(line, line * 0.7 + 0.01)
    verdict = analysis_verdict(_outputs(11.6), None, [], data=REAL, task=meter.result())
    assert verdict.level == "good", verdict.reasons
    assert any("11.6 dB" in d for d in verdict.diagnostics)
    assert "CTC" in verdict.task and "8 images" in verdict.data


def test_exclusion_advice_names_only_quantized_nodes() -> None:
    layers = [
        {"node": "shift", "sqnr_db": 2.0},
        {"node": "cap_values", "sqnr_db": 3.0},
        {"node": "relu", "sqnr_db": 4.0},
        {"node": "proj", "sqnr_db": 9.0},
    ]
    verdict = analysis_verdict(
        _outputs(5.0),
        None,
        layers,
        quantized_ops=["MatMulInteger"],
        data=REAL,
        excludable={"proj", "relu"},
    )
    exclude = next(t for t in verdict.suggestions if t.startswith("exclude"))
    assert "proj (9.0 dB)" in exclude and "relu (4.0 dB)" in exclude
    assert "shift" not in exclude and "cap_values" not in exclude
    per_channel = analysis_verdict(
        _outputs(5.0), None, layers, per_channel=True, data=REAL, excludable=set()
    )
    assert not any("per-channel" in t for t in per_channel.suggestions)
    assert not any(t.startswith("exclude") for t in per_channel.suggestions)


def _runs(rng: np.random.Generator, median_ms: float, spread_ms: float, n: int) -> list[float]:
    return list(median_ms + spread_ms * rng.standard_normal(n).clip(-3, 3))


def test_two_identical_models_are_never_called_slower() -> None:
    rng = np.random.default_rng(0)
    for trial in range(40):  # the same distribution each time: std 8–10 ms around 60 ms
        spread = 8 + 2 * rng.random()
        rows = [
            {
                "model": "/m/f.onnx",
                "ep": "CPU",
                "threads": 1,
                "quantized_ops": [],
                "samples_ms": _runs(rng, 60, spread, 30),
            },
            {
                "model": "/m/q.onnx",
                "ep": "CPU",
                "threads": 1,
                "quantized_ops": ["DequantizeLinear"],
                "samples_ms": _runs(rng, 60, spread, 30),
            },
        ]
        for r in rows:
            r["median_ms"] = float(np.median(r["samples_ms"]))
        (line,) = bench_verdicts(rows)
        assert "SLOWER" not in line and "faster" not in line, (trial, line)
        assert "no measurable difference" in line


def test_a_real_difference_beyond_the_noise_is_reported() -> None:
    rng = np.random.default_rng(1)
    base, slow = _runs(rng, 60, 3, 50), _runs(rng, 90, 3, 50)
    interval = median_ratio_interval(slow, base)
    assert interval.slower and 1.4 < interval.low <= interval.ratio <= interval.high < 1.6
    assert median_ratio_interval(base, slow).faster


def test_float_ids_behind_a_cast_are_drawn_as_whole_numbers_below_the_table() -> None:
    spec = next(derive_candidates(models.char_ids_behind_cast(rows=48)))
    entry = spec.entry("chars_in")
    assert entry.domain.kind == "integers" and entry.domain.high == 48
    assert entry.shape[1] > 1  # a sequence of characters, not one
    values = entry.make(np.random.default_rng(0))
    assert values.dtype == np.float32 and np.all(values == np.round(values))
    assert values.min() >= 0 and values.max() < 48


@pytest.mark.parametrize("behind", ["mul", "cast"])
def test_ids_index_a_table_behind_dequantizing_ops(behind: str) -> None:
    spec = next(derive_candidates(models.int8_table_embedding(rows=50, behind=behind)))
    domain = spec.entry("ids").domain
    assert (domain.kind, domain.low, domain.high) == ("integers", 0, 50)
    assert "50 rows" in spec.entry("ids").reason


def test_every_form_of_existing_quantization_is_recognised() -> None:
    found = existing_quantization(models.int8_table_embedding(behind="mul"))
    assert found and "weight-only int8" in found[0] and "table_int8" in found[0]
    assert existing_quantization(models.int8_table_embedding(behind="cast")) == []  # fp16
    assert existing_quantization(models.conv_relu_gemm()) == []
    nbits = models.matmul_model()
    nbits.graph.node[0].op_type = "MatMulNBits"
    nbits.graph.node[0].domain = "com.microsoft"
    assert "MatMulNBits" in existing_quantization(nbits)[0]


def test_ctc_with_the_models_alphabet_compares_the_text_read() -> None:
    alphabet = list("abcdefghij")  # classes 1–10; class 11 is PaddleOCR's space
    meter = TaskMeter(TaskChoice("ctc", "y", "test"), alphabet=alphabet)
    f = [0, 1, 0, 2, 0, 3, 0]  # "abc"
    q = [0, 1, 0, 2, 0, 3, 11]  # "abc " — an outer space is not text
    r = [0, 1, 0, 4, 0, 3, 0]  # "adc": one substitution
    meter.add(_one_hot(f, 12), _one_hot(q, 12))
    meter.add(_one_hot(f, 12), _one_hot(r, 12))
    result = meter.result()
    figures = {fig.key: fig.value for fig in result.figures}
    assert figures["text_agreement"] == 0.5 and figures["cer"] == pytest.approx(1 / 6)
    assert result.examples == ["line 1: 'abc' → 'adc'"]
    assert "characters of text" in result.note


def test_one_probability_is_judged_by_its_decision() -> None:
    meter = TaskMeter(TaskChoice("classification", "y", "one Sigmoid probability"))
    for f, q in ((0.9, 0.7), (0.2, 0.45), (0.55, 0.48), (0.1, 0.1)):  # the third flips
        meter.add(np.array([[f]], np.float32), np.array([[q]], np.float32))
    figures = {fig.key: fig.value for fig in meter.result().figures}
    assert figures["top1_agreement"] == 0.75
    # float says yes twice (0.9, 0.55), quantized once (0.7): tp 1, fn 1 → F1 2 / 3
    assert figures["f1"] == pytest.approx(2 / 3)
    assert (
        meter.result().note
        == "the float model says yes on 2 of 4 sample(s), the quantized one on 1"
    )


def test_missing_the_rare_yes_is_poor_whatever_the_agreement() -> None:
    # Silero VAD quantized: speech in 1 window of 1051, never heard again: 99.9 % agreement
    meter = TaskMeter(TaskChoice("classification", "y", "one Sigmoid probability"))
    for k in range(1000):
        meter.add(np.array([[0.9 if k == 0 else 0.01]]), np.array([[0.01]]))
    result = meter.result()
    assert not result.one_sided
    verdict = analysis_verdict(_outputs(45.0), None, [], data=REAL, task=result)
    assert verdict.level == "poor" and "F1 of the yes decisions" in verdict.reasons[0]


def test_hidden_states_are_judged_as_the_pooled_embedding() -> None:
    # Per-token noise that averages out: the sentence embedding barely moves although every
    # token's vector does (cosine per token ≈ 0.7 here).
    rng = np.random.default_rng(3)
    hidden = rng.standard_normal((1, 64, 32)).astype(np.float32) + 3.0
    noise = rng.standard_normal((1, 64, 32)).astype(np.float32) * 2.0
    noise -= noise.mean(axis=1, keepdims=True)  # zero mean over tokens
    meter = TaskMeter(TaskChoice("embedding", "last_hidden_state", "hidden states"))
    meter.add(hidden, hidden + noise)
    figures = {f.key: f.value for f in meter.result().figures}
    assert figures["cosine"] == pytest.approx(1.0, abs=1e-6)


def test_index_inputs_stay_below_the_axis_they_index() -> None:
    spec = next(derive_candidates(models.graph_network()))
    feat, edges = spec.entry("feat"), spec.entry("edge_index")
    assert edges.domain.kind == "below_dim" and edges.domain.of_dim == "num_nodes"
    assert "feat" in edges.reason
    nodes = dict(spec.sizes)["num_nodes"]
    assert nodes > 1 and feat.shape[0] == nodes  # a count of nodes, not a batch of one
    for seed in range(5):
        values = spec.feeds(seed)["edge_index"]
        assert values.min() >= 0 and values.max() < nodes


def test_index_inputs_into_computed_tensors_and_pooling_without_empty_graphs() -> None:
    """edge_index indexes h = feat·W (computed: only inferred shapes say it has num_nodes
    rows), batch indexes the pooled [num_graphs, H] tensor; every graph gets a node (a mean
    over an empty graph is 0/0) and a bool mask is all true."""
    import onnxruntime as ort

    model = models.pooled_graph_network()
    spec = next(derive_candidates(model))
    assert spec.entry("edge_index").domain.of_dim == "num_nodes"
    assert spec.entry("batch").domain.of_dim == "num_graphs"
    assert spec.entry("node_mask").domain.kind == "ones"
    sizes = dict(spec.sizes)
    assert sizes["num_nodes"] > 1 and sizes["num_graphs"] > 1
    session = ort.InferenceSession(model.SerializeToString())
    for seed in range(5):
        feeds = spec.feeds(seed)
        assert set(np.unique(feeds["batch"])) == set(range(sizes["num_graphs"]))
        assert feeds["edge_index"].max() < sizes["num_nodes"]
        (y,) = session.run(None, feeds)
        assert np.isfinite(y).all()


def test_language_model_logits_are_detected_by_their_token_ids_input() -> None:
    head = _head("MatMul", [1, 16, 512], "logits")
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 16])
    head.graph.input.append(ids)
    choice = detect_task(head, {"logits": np.zeros((1, 16, 512), np.float32)})
    assert choice.task == "language-model" and "token ids" in choice.why
    # the same output without a token-id input stays per-position classes
    plain = _head("Identity", [1, 200, 300], "logits")
    assert detect_task(plain, {"logits": np.zeros((1, 200, 300), np.float32)}).task == "tokens"


def test_next_token_figures_equal_a_hand_computation() -> None:
    # Two positions over a 6-token vocabulary. Position 0: the same most likely token;
    # position 1: the quantized model prefers token 2 over the float's token 4.
    ref = np.log(np.array([[[0.5, 0.1, 0.1, 0.1, 0.1, 0.1], [0.05, 0.05, 0.3, 0.05, 0.5, 0.05]]]))
    test = np.log(np.array([[[0.4, 0.2, 0.1, 0.1, 0.1, 0.1], [0.05, 0.05, 0.5, 0.05, 0.3, 0.05]]]))
    meter = TaskMeter(TaskChoice("language-model", "logits", "test"))
    meter.add(ref + 3.0, test - 1.0)  # logits: any shift gives the same distribution
    figures = {f.key: f.value for f in meter.result().figures}
    p, q = np.exp(ref[0]), np.exp(test[0])
    kl = [sum(p[t, k] * np.log(p[t, k] / q[t, k]) for k in range(6)) for t in range(2)]
    assert figures["next_token_agreement"] == pytest.approx(0.5)
    assert figures["next_token_kl"] == pytest.approx(np.mean(kl), rel=1e-9)
    assert figures["next_token_top5"] == pytest.approx(1.0)  # token 4 is in the top 5 of both
    assert "2 positions over 1 sequence" in meter.result().note


def test_ctc_with_a_dictionary_that_lists_the_blank_spells_from_index_0() -> None:
    # a CRNN's charset.json: ["", "a", "b", …] — the blank is listed, indices are positions
    meter = TaskMeter(
        TaskChoice("ctc", "y", "test"), alphabet=["", *"abcdefghij"], spelled_by="charset.json"
    )
    f, r = [0, 1, 0, 2, 2, 0, 3], [0, 1, 0, 4, 0, 3, 0]  # "abc" and "adc"
    meter.add(_one_hot(f, 11), _one_hot(r, 11))
    result = meter.result()
    assert result.examples == ["line 0: 'abc' → 'adc'"]
    assert "spelled with charset.json" in result.note


def test_the_dictionary_is_found_beside_the_model_or_given(tmp_path: Path) -> None:
    from edgestudio.core.quant.alphabets import find_alphabet

    model = models.ctc_recogniser()
    path = tmp_path / "rec.onnx"
    assert find_alphabet(model, path) == (None, "")
    (tmp_path / "other_keys.txt").write_text("x\ny\n", encoding="utf-8")
    (tmp_path / "rec_dict.txt").write_text("a\nb\n \n", encoding="utf-8")
    assert find_alphabet(model, path) == (["a", "b", " "], "rec_dict.txt")  # its own first
    given = tmp_path / "charset.json"
    given.write_text('["", "é", "ß"]', encoding="utf-8")
    assert find_alphabet(model, path, str(given)) == (["", "é", "ß"], "charset.json")
    with pytest.raises(ValueError, match="cannot be read"):
        find_alphabet(model, path, str(tmp_path / "missing.txt"))
    model.metadata_props.add(key="character", value="p\nq")  # PaddleOCR's own, before files
    assert find_alphabet(model, path) == (["p", "q"], "the model's metadata")


def test_per_frame_multi_label_figures_equal_a_hand_computation() -> None:
    meter = TaskMeter(TaskChoice("multilabel", "y", "test"))
    f = np.array([[[0.9, 0.1, 0.6], [0.2, 0.2, 0.2], [0.7, 0.8, 0.1], [0.4, 0.6, 0.9]]])
    q = np.array([[[0.8, 0.1, 0.4], [0.2, 0.3, 0.2], [0.7, 0.6, 0.6], [0.4, 0.7, 0.9]]])
    meter.add(f, q)
    # float says yes 6 times; quantized: 5 of them (misses frame 0 class 2), plus 1 new
    # (frame 2 class 2): tp 5, fn 1, fp 1 → F1 = 10 / 12; frames 1 and 3 agree fully
    figures = {fig.key: fig.value for fig in meter.result().figures}
    assert figures["frame_agreement"] == 0.5
    assert figures["f1"] == pytest.approx(10 / 12)
    assert [fig.key for fig in meter.result().figures] == ["frame_agreement", "f1"]


def test_a_sigmoid_at_every_frame_is_detected_as_multi_label() -> None:
    model = models.frame_tagger(frames=50, classes=4)
    choice = detect_task(model, {"y": np.full((1, 50, 4), 0.5, np.float32)})
    assert choice.task == "multilabel" and "50 time steps" in choice.why


def test_mask_figures_equal_a_hand_computation() -> None:
    meter = TaskMeter(TaskChoice("mask", "y", "test"))
    f = np.array([[[[0.9, 0.8, 0.1], [0.6, 0.2, 0.1]]]])  # 3 of 6 pixels marked
    q = np.array([[[[0.7, 0.4, 0.6], [0.6, 0.1, 0.2]]]])  # keeps 2, loses 1, adds 1
    meter.add(f, q)
    meter.add(f, f)  # a second map decided identically: tp 3, nothing else
    # tp 2 + 3, fp 1, fn 1 → IoU 5 / 7; 12 pixels, 10 decided alike
    figures = {fig.key: fig.value for fig in meter.result().figures}
    assert figures["mask_iou"] == pytest.approx(5 / 7)
    assert figures["pixel_agreement"] == pytest.approx(10 / 12)
    assert "12 pixels over 2 sample(s)" in meter.result().note


def test_a_mean_of_frame_probabilities_is_judged_by_its_decision() -> None:
    # Silero VAD: Sigmoid per frame → ReduceMean over frames → Unsqueeze → output [1, 1]
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    graph = helper.make_graph(
        [
            helper.make_node("Sigmoid", ["x"], ["p"], name="frames"),
            helper.make_node("ReduceMean", ["p"], ["m"], name="mean", axes=[1], keepdims=0),
            helper.make_node("Unsqueeze", ["m", "axes"], ["y"], name="shape"),
        ],
        "vad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
        [axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    choice = detect_task(model, {"y": np.full((1, 1), 0.3, np.float32)})
    assert choice.task == "classification" and "decision at 0.5" in choice.why


def test_an_if_branch_passing_on_an_outer_probability_is_followed() -> None:
    # Silero VAD (opset 15): the 16 kHz branch squeezes a Sigmoid its enclosing graph computed
    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("Identity", ["p"], [f"{name}_y"], name=f"{name}_pass")],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [1, 1])],
        )

    graph = helper.make_graph(
        [
            helper.make_node("Sigmoid", ["x"], ["p"], name="decoder"),
            helper.make_node(
                "If",
                ["c"],
                ["y"],
                name="rate",
                then_branch=branch("then"),
                else_branch=branch("else"),
            ),
        ],
        "vad",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    choice = detect_task(model, {"y": np.full((1, 1), 0.3, np.float32)})
    assert choice.task == "classification"


def test_data_on_which_the_float_model_never_changes_its_mind_is_said() -> None:
    # Silero VAD fed windows without their stream's state says "no speech" to every one
    meter = TaskMeter(TaskChoice("classification", "y", "test"))
    for p in (0.1, 0.05, 0.2):
        meter.add(np.array([[p]]), np.array([[p / 2]]))
    result = meter.result()
    assert result.figures[0].value == 1.0
    assert "Both models give class 0 on all 3 samples" in result.note and result.one_sided
    verdict = analysis_verdict(_outputs(45.0), None, [], data=REAL, task=result)
    assert verdict.level is None and verdict.label == "Not judged"
    assert "decides both ways" in verdict.why
    assert "top-1 agreement 100.0 %" in " ".join(verdict.reasons)


def test_regions_are_labelled_and_found_again_by_iou() -> None:
    from edgestudio.core.quant.mask_regions import label_regions, regions_found

    m = np.zeros((6, 8), bool)
    m[0, 0:3] = m[1, 2] = True  # an L, 4-connected
    m[3:5, 5:8] = True  # a block
    m[5, 0] = m[4, 1] = True  # diagonal neighbours are two regions
    labels = label_regions(m)
    assert len(np.unique(labels[m])) == 4 and (labels[~m] == 0).all()
    assert len(np.unique(labels[0:2, 0:3][m[0:2, 0:3]])) == 1

    ref = np.zeros((40, 60), bool)
    ref[2:8, 2:30] = True  # line 1: 168 pixels
    ref[12:18, 2:40] = True  # line 2: 228 pixels
    ref[25:31, 5:25] = True  # line 3: 120 pixels
    test = ref.copy()
    test[12:18, 20:40] = False  # line 2 lost more than half: IoU 108 / 228 < 0.5
    test[25:31, 25:35] = True  # line 3 grown: IoU 120 / 180 ≥ 0.5, still found
    test[35:39, 50:58] = True  # a new region of 32 pixels
    test[0, 59] = True  # a speck: not a region
    assert regions_found(ref, test) == (3, 4, 2)

    meter = TaskMeter(TaskChoice("mask", "y", "test"))
    meter.add(ref[None, None].astype(np.float64), test[None, None].astype(np.float64))
    figures = {fig.key: fig.value for fig in meter.result().figures}
    assert figures["region_f1"] == pytest.approx(2 * 2 / (3 + 4))
    assert "in 3 region(s) (the quantized one: 4, 2 of float's found again)" in (
        meter.result().note
    )


def test_a_mask_is_judged_by_its_regions_and_its_pixels_are_shown_beside() -> None:
    ref = np.zeros((40, 60), bool)
    ref[2:8, 2:30] = ref[12:18, 2:40] = True
    test = ref.copy()
    test[8, 2:30] = test[18, 2:40] = True  # every line a pixel taller: regions found, IoU 86 %
    meter = TaskMeter(TaskChoice("mask", "y", "test"))
    meter.add(ref[None, None].astype(np.float64), test[None, None].astype(np.float64))
    result = meter.result()
    assert [f.key for f in result.figures if f.deciding] == ["region_f1"]
    verdict = analysis_verdict(_outputs(45.0), None, [], data=REAL, task=result)
    assert verdict.level == "good"
    assert any(d.startswith("IoU of the pixels over 0.5") for d in verdict.diagnostics)
    assert "not deciding" in result.figures[1].bounds_text()
