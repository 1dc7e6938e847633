"""The input specification: derived from the graph, run until it works, overridable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgestudio.core.inputs.grammar import InputOverrides
from edgestudio.core.inputs.input_derivation import derive_candidates
from edgestudio.core.inputs.input_probe import resolve_inputs
from edgestudio.core.inputs.input_spec import InputSpecError, InputSpecification
from edgestudio.core.serialise import from_json, to_json
from tests import models


def _resolve(model, tmp_path: Path, **kw) -> InputSpecification:  # type: ignore[no-untyped-def]
    return resolve_inputs(models.save(model, tmp_path / "m.onnx"), **kw).spec


def test_state_input_keeps_its_fixed_first_axis(tmp_path: Path) -> None:
    spec = _resolve(models.state_input(), tmp_path)
    state = spec.entry("state")
    assert state.shape == (2, 1, 128) and state.domain.kind == "zeros"
    assert spec.entry("x").shape == (1, 16) and spec.verified
    assert not spec.feeds()["state"].any()


def test_scalar_input_stays_scalar_and_takes_the_compared_constant(tmp_path: Path) -> None:
    spec = _resolve(models.scalar_rate(), tmp_path)
    sr = spec.entry("sr")
    assert sr.shape == () and sr.domain.values == (16000.0,)
    assert spec.feeds()["sr"].shape == () and int(spec.feeds()["sr"]) == 16000


def test_embedding_ids_stay_below_their_table(tmp_path: Path) -> None:
    spec = _resolve(models.embedding_encoder(rows=30, types=2), tmp_path)
    feeds = spec.with_batch(4).feeds(seed=5)
    assert feeds["ids"].shape[0] == 4 and feeds["ids"].max() < 30 and feeds["ids"].min() >= 0
    assert set(np.unique(feeds["type_ids"])) <= {0, 1}
    assert (feeds["mask"] == 1).all()
    assert "30 rows" in spec.entry("ids").reason


def test_a_pad_that_needs_a_longer_sequence_gets_one(tmp_path: Path) -> None:
    spec = _resolve(models.reflect_pad(pad=8), tmp_path)
    assert spec.entry("x").shape[1] > 8


def test_recurrent_sequence_lengths_match_the_time_axis(tmp_path: Path) -> None:
    spec = _resolve(models.gru_model(), tmp_path)
    feeds = spec.feeds()
    assert feeds["sequence_lens"].tolist() == [feeds["x"].shape[0]]
    assert spec.entry("h0").domain.kind == "zeros"


def test_no_candidate_runs_names_the_input_and_an_override_fixes_it(tmp_path: Path) -> None:
    path = models.save(models.odd_length(37), tmp_path / "m.onnx")
    with pytest.raises(InputSpecError, match=r"x float32 \['batch', 'n'\].*--shape"):
        resolve_inputs(path, use_cache=False)
    spec = resolve_inputs(path, overrides=InputOverrides(shapes=("x=1x37",))).spec
    assert spec.entry("x").shape == (1, 37) and spec.entry("x").user_set


def test_overrides_are_checked_against_the_model() -> None:
    model = models.embedding_encoder()
    with pytest.raises(InputSpecError, match="No input called nope"):
        next(derive_candidates(model, InputOverrides(shapes=("nope=1x2",))))
    with pytest.raises(InputSpecError, match="does not fit the declared shape"):
        next(derive_candidates(model, InputOverrides(shapes=("ids=1x2x3",))))
    with pytest.raises(InputSpecError, match="HIGH must be above LOW"):
        next(derive_candidates(model, InputOverrides(ranges=("ids=5:1",))))
    spec = next(derive_candidates(model, InputOverrides(ranges=("ids=3:4",))))
    assert (spec.feeds()["ids"] == 3).all()


def test_spec_is_cached_per_model_and_overrides(tmp_path: Path) -> None:
    path = models.save(models.embedding_encoder(), tmp_path / "m.onnx")
    first = resolve_inputs(path)
    again = resolve_inputs(path)
    assert not first.from_cache and again.from_cache
    assert again.spec == first.spec
    other = resolve_inputs(path, overrides=InputOverrides(shapes=("ids=1x4",)))
    assert not other.from_cache and other.spec.entry("ids").shape == (1, 4)


def test_spec_round_trips_through_json(tmp_path: Path) -> None:
    spec = _resolve(models.gru_model(), tmp_path)
    again = from_json(InputSpecification, to_json(spec))
    assert again == spec
    for name, array in spec.feeds(3).items():
        assert np.array_equal(again.feeds(3)[name], array)


def test_string_and_byte_image_inputs_get_values_of_their_kind(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("Identity", ["text"], ["t"]),
            helper.make_node("Cast", ["pixels"], ["p"], to=TensorProto.FLOAT),
        ],
        "kinds",
        [
            helper.make_tensor_value_info("text", TensorProto.STRING, ["batch"]),
            helper.make_tensor_value_info("pixels", TensorProto.UINT8, [1, 8, 8, 3]),
        ],
        [
            helper.make_tensor_value_info("t", TensorProto.STRING, ["batch"]),
            helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 8, 8, 3]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    spec = _resolve(model, tmp_path)
    feeds = spec.feeds()
    assert feeds["text"].dtype == object and feeds["text"].shape == (1,)
    assert spec.entry("text").domain.kind == "text"
    assert spec.entry("pixels").domain.high == 256 and feeds["pixels"].max() > 1


def test_unnamed_dims_show_as_question_marks() -> None:
    from edgestudio.core.inputs.input_spec import InputEntry

    entry = InputEntry("x", "float32", (1, 3, 224, 224), declared=("x:0", 3, "?", "?"))
    assert entry.declared_text() == "[?, 3, ?, ?]"


def test_a_feature_width_comes_from_the_weights_it_meets(tmp_path: Path) -> None:
    spec = _resolve(models.feature_matrix(width=80), tmp_path)
    assert spec.entry("x").shape == (1, 80) and spec.note == "derived from the graph"
    assert "MatMul 'fc1' (80 rows)" in spec.entry("x").reason


def test_frames_a_convolution_slides_over_are_no_batch(tmp_path: Path) -> None:
    # Before: axis 0 was taken for a batch of 1, shorter than the 7-frame kernel, and every
    # candidate failed ("Invalid input shape"); the band width was a guess.
    spec = _resolve(models.convolved_features(bands=80, kernel=7), tmp_path, use_cache=False)
    frames, bands, channels = spec.entry("x").shape
    assert frames >= 7 and (bands, channels) == (80, 3)
    assert spec.note == "derived from the graph"  # the first candidate runs
    assert "[80x3] constant of Mul 'band_scale'" in spec.entry("x").reason
    assert f"frames = {frames}, at least 7 for the 7-wide window of Conv 'conv'" in (
        spec.entry("x").reason
    )
    assert spec.batch_symbols == ()


@pytest.mark.parametrize(
    ("build", "kernels"),
    [
        (lambda: models.feature_matrix(width=80), {"MatMulInteger"}),
        (lambda: models.convolved_features(bands=80, kernel=7), {"ConvInteger"}),
        (lambda: models.lstm_with_state(features=20, hidden=12), {"DynamicQuantizeLSTM"}),
    ],
)
def test_a_dynamically_quantized_model_reads_its_inputs_as_its_original(
    build, kernels, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # Found on madmom's networks: their dynamic int8 results (MatMulInteger, ConvInteger,
    # DynamicQuantizeLSTM) ran in the job's check, on the original's inputs, but opened on
    # their own no candidate ran: the weights' widths and windows were not read through them.
    import onnx
    from onnxruntime.quantization import quantize_dynamic

    original = models.save(build(), tmp_path / "float.onnx")
    quantized = tmp_path / "int8.onnx"
    quantize_dynamic(original, quantized, op_types_to_quantize=["MatMul", "Conv", "LSTM"])
    assert kernels <= {n.op_type for n in onnx.load(quantized).graph.node}
    before = resolve_inputs(original, use_cache=False).spec
    after = resolve_inputs(quantized, use_cache=False).spec
    assert [e.shape for e in after.inputs] == [e.shape for e in before.inputs]
    assert after.note == "derived from the graph"


def test_a_qdq_model_reads_its_widths_behind_dequantize(tmp_path: Path) -> None:
    # madmom's onset CNN quantized to QDQ: its per-band scale sits behind a DequantizeLinear,
    # and the width it fixes was lost (every candidate failed on the result).
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, quantize_static

    original = models.save(models.convolved_features(bands=80, kernel=7), tmp_path / "f.onnx")
    before = resolve_inputs(original, use_cache=False).spec
    samples = iter([before.feeds(seed=k) for k in range(2)])

    class Reader(CalibrationDataReader):
        def get_next(self):  # type: ignore[no-untyped-def]
            return next(samples, None)

    quantized = tmp_path / "qdq.onnx"
    quantize_static(original, quantized, Reader(), op_types_to_quantize=["Conv", "Mul"])
    scale = next(n for n in onnx.load(quantized).graph.node if n.op_type == "Mul")
    assert "DequantizeLinear" in {
        n.op_type for n in onnx.load(quantized).graph.node if set(n.output) & set(scale.input)
    }
    after = resolve_inputs(quantized, use_cache=False).spec
    assert after.entry("x").shape == before.entry("x").shape
    assert after.note == "derived from the graph"


@pytest.mark.parametrize("reshape", [False, True])
def test_a_width_only_a_flatten_fixes_is_solved(tmp_path: Path, reshape: bool) -> None:
    # madmom's key CNN reshapes [1, 24, W] to [-1, 2520]: W = 105, which no guess holds;
    # every candidate failed ("The input tensor cannot be reshaped to the requested shape").
    spec = _resolve(models.flatten_classifier(width=40, reshape=reshape), tmp_path)
    assert spec.entry("x").shape == (1, 1, 28, 40)
    node = "Reshape 'to_rows'" if reshape else "Flatten 'flatten'"
    assert f"w = 40, so that {node} gives rows of 3952 values" in spec.note
    assert "(w - 2)" in spec.entry("x").reason


def test_solving_a_flatten_writes_nothing_where_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # onnxruntime's SymbolicShapeInference.infer_shapes saves the whole model (weights as a
    # .data file beside it) into the working folder whenever a graph has an op it cannot
    # follow; two such files, 100 MB, were found in the checkout. Nothing is written now, and
    # what it followed still solves the width.
    from onnx import TensorProto, helper

    from edgestudio.core.inputs.flatten_widths import solve_flatten_widths

    model = models.flatten_classifier(width=40)
    model.graph.node.append(helper.make_node("Opaque", ["y"], ["z"], domain="test.opaque"))
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    model.opset_import.append(helper.make_opsetid("test.opaque", 1))
    monkeypatch.chdir(tmp_path)
    solved = solve_flatten_widths(model, next(derive_candidates(model)))
    assert [(s.symbol, s.size) for s in solved] == [("w", 40)]
    assert list(tmp_path.iterdir()) == []


def test_a_dynamic_int8_result_solves_its_flatten_as_its_original(tmp_path: Path) -> None:
    from onnxruntime.quantization import quantize_dynamic

    original = models.save(models.flatten_classifier(width=40), tmp_path / "f.onnx")
    quantized = tmp_path / "q.onnx"
    quantize_dynamic(original, quantized, op_types_to_quantize=["Conv", "Gemm", "MatMul"])
    assert resolve_inputs(quantized, use_cache=False).spec.entry("x").shape == (1, 1, 28, 40)


def test_guesses_too_big_to_run_are_not_tried() -> None:
    # Two unknown signal dims: the lockstep guess 16000 × 16000 is a 1 GB input (its Conv
    # took 24 GB on a madmom network and the machine killed the process).
    from onnx import TensorProto, helper

    from edgestudio.core.inputs.input_derivation import MAX_GUESSED_VALUES

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "two_signals",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "a", "b"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "a", "b"])],
    )
    shapes = [spec.entry("x").shape for spec in derive_candidates(helper.make_model(graph))]
    assert (1, 4096, 4096) in shapes and (1, 16000, 16000) not in shapes
    assert all(int(np.prod(s)) <= MAX_GUESSED_VALUES for s in shapes)
    pinned = InputOverrides(shapes=("x=1x16000x16000",))  # the user's own sizes are kept
    assert next(derive_candidates(helper.make_model(graph), pinned)).entry("x").shape == (
        1,
        16000,
        16000,
    )


def test_recurrent_state_takes_the_sizes_its_weights_imply(tmp_path: Path) -> None:
    spec = _resolve(models.lstm_with_state(features=20, hidden=12), tmp_path)
    assert spec.note == "derived from the graph"  # the first candidate runs
    assert spec.entry("x").shape[2] == 20
    assert spec.entry("h0").shape == spec.entry("c0").shape == (2, 1, 12)
    assert "hidden size 12" in spec.entry("h0").reason
    three = spec.with_batch(3)  # the batch axes agree: the LSTM's and its states'
    assert three.entry("h0").shape == (2, 3, 12) and three.entry("x").shape[1] == 3
    assert three.entry("x").shape[2] == 20


def test_one_hot_and_ranges_of_constants_give_their_whole_range(tmp_path: Path) -> None:
    spec = _resolve(models.class_codes(depth=300, codes=256), tmp_path)
    label, byte = spec.entry("label").domain, spec.entry("byte").domain
    assert (label.kind, label.low, label.high) == ("integers", 0, 300)
    assert (byte.kind, byte.low, byte.high) == ("integers", 0, 256)
    feeds = spec.with_batch(2000).feeds()
    assert feeds["label"].max() > 200 and feeds["byte"].max() > 200


def test_a_unet_gets_sizes_in_multiples_of_its_stride(tmp_path: Path) -> None:
    spec = _resolve(models.unet(stages=7), tmp_path)
    height, width = spec.entry("x").shape[2:]
    assert height % 128 == 0 and width % 128 == 0
    assert spec.note == "derived from the graph"  # 224 and 320 are not tried first


def test_nothing_runs_names_the_dims_the_tries_and_the_node(tmp_path: Path) -> None:
    path = models.save(models.odd_length(37), tmp_path / "m.onnx")
    with pytest.raises(InputSpecError) as caught:
        resolve_inputs(path, use_cache=False)
    message = str(caught.value)
    assert "--shape x=1xN (N = n; tried 512, 1024" in message
    assert "input specification(s) derived from its graph (tried x 1x512; x 1x1024; x 1x16000;" in (
        message
    )
    # onnxruntime's cause, whole, without its codes, source paths and C++ signatures
    assert "Reshape node 'fixed_reshape':" in message and "requested shape:{1,37}" in message
    assert "onnxruntime_src" not in message and "[ONNXRuntimeError]" not in message


def test_only_a_float_input_all_zeros_is_said_to_collapse_its_ranges(tmp_path: Path) -> None:
    from edgestudio.core.inputs.calib_data import open_samples
    from edgestudio.core.inputs.data_source import DataSource

    model = models.embedding_encoder()
    data = tmp_path / "d.npz"
    ids = np.ones((3, 5), np.int64)
    np.savez(data, ids=ids, type_ids=np.zeros((3, 5), np.int64), mask=ids)
    assert open_samples(DataSource("npz", str(data)), model).validate() == []  # an index of 0
    images = tmp_path / "i.npz"
    np.savez(images, x=np.zeros((2, 3, 8, 8), np.float32))
    said = open_samples(DataSource("npz", str(images)), models.conv_relu_gemm()).validate()
    assert any("all zeros" in w for w in said)


def test_a_sample_one_axis_off_says_which_axis_to_drop_or_add() -> None:
    from edgestudio.core.inputs.calib_data import axis_hint

    dropped = axis_hint((1, 1, 256), (1, 256))
    assert "extra axis of size 1 (axis 1" in dropped and "np.squeeze(x, axis=1)" in dropped
    added = axis_hint((1, 256), ("batch", 1, 256))
    assert "np.expand_dims(x, axis=1)" in added
    assert axis_hint((1, 3, 256), (1, 256)) == ""  # not one size-1 axis: no guess


def test_tf2onnx_unknown_dims_past_the_first_are_sides_not_batches(tmp_path: Path) -> None:
    """tf2onnx names every unknown dim ``unk__N``: only axis 0 is a batch. An NHWC
    encoder–decoder had its height and width made 1 too, and its skip Concat failed."""
    spec = _resolve(models.tf2onnx_nhwc_unet(), tmp_path, use_cache=False)
    batch, height, width, channels = spec.entry("x").shape
    assert batch == 1 and channels == 3
    assert height >= 32 and height % 4 == 0 and width % 4 == 0
