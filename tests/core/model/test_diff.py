"""Model differences: matching, inserted/fused/removed/changed, and the CLI twin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.model.diff import Change, diff_models
from edgestudio.resources import SAMPLE_MODEL
from tests.models import quantized_sample


def test_a_model_equals_itself(tmp_path: Path) -> None:
    result = diff_models(SAMPLE_MODEL, SAMPLE_MODEL)
    assert result.differences == [] and len(result.matched) == 11
    assert "same" in result.summary()


def test_attribute_weight_and_opset_changes(tmp_path: Path) -> None:
    model = onnx.load(SAMPLE_MODEL)
    conv = model.graph.node[0]
    for attr in conv.attribute:
        if attr.name == "pads":
            del attr.ints[:]
            attr.ints.extend([0, 0, 0, 0])
    weight = next(t for t in model.graph.initializer if t.name == conv.input[1])
    values = numpy_helper.to_array(weight).copy()
    values.flat[0] += 0.5
    weight.CopyFrom(numpy_helper.from_array(values, weight.name))
    converted = onnx.version_converter.convert_version(model, 18)
    path = tmp_path / "changed.onnx"
    onnx.save(converted, path)
    result = diff_models(SAMPLE_MODEL, path)
    kinds = {(d.change, d.kind) for d in result.differences}
    assert (Change.CHANGED, "attribute") in kinds and (Change.CHANGED, "opset") in kinds
    weight_change = next(d for d in result.differences if d.kind == "weight")
    assert "max abs 0.5" in weight_change.text and weight_change.node_a == conv.name
    assert result.node_changes("a")[conv.name] is Change.CHANGED


def test_a_quantized_model_shows_inserted_qdq_and_fused_nodes(tmp_path: Path) -> None:
    out = quantized_sample(tmp_path)
    result = diff_models(SAMPLE_MODEL, out)
    inserted = [d for d in result.differences if d.change is Change.INSERTED]
    assert inserted and all(d.op_type in ("QuantizeLinear", "DequantizeLinear") for d in inserted)
    assert "quantize or dequantize" in result.summary()
    fused = [d for d in result.differences if d.change is Change.FUSED]
    assert fused and all(d.op_type == "Relu" and " fused into " in d.text for d in fused)
    marks_b = result.node_changes("b")
    assert all(marks_b[d.node_b] is Change.INSERTED for d in inserted if d.node_b)

    done = subprocess.run(
        [sys.executable, "-m", "edgestudio", "diff", str(SAMPLE_MODEL), str(out), "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    data_json = json.loads(done.stdout)
    assert data_json["counts"] == result.counts()
    same = subprocess.run(
        [sys.executable, "-m", "edgestudio", "diff", str(SAMPLE_MODEL), str(SAMPLE_MODEL)],
        capture_output=True,
        text=True,
    )
    assert same.returncode == 0 and "same" in same.stdout


def test_an_opset_converted_twin_lists_exactly_the_changed_nodes(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[2], keepdims=1),
        helper.make_node("Relu", ["m"], ["r"], name="relu"),
        helper.make_node("Split", ["r", "sp"], ["a", "b"], name="split", axis=1),
        helper.make_node("Add", ["a", "b"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array([2, 2], np.int64), "sp")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    a, b = tmp_path / "a13.onnx", tmp_path / "b18.onnx"
    onnx.save(model, a)
    onnx.save(onnx.version_converter.convert_version(model, 18), b)
    result = diff_models(a, b)
    node_level = [
        d
        for d in result.differences
        if (d.node_a or d.node_b) and d.kind not in ("input", "output")
    ]
    assert {d.node_a for d in node_level} == {"mean"}  # ReduceMean's axes became an input
    assert not any(d.change is Change.INSERTED for d in result.differences)
    assert any(d.kind == "opset" for d in result.differences)


def test_a_qdq_twin_says_weights_are_stored_quantized_on_their_dequantize_nodes(
    tmp_path: Path,
) -> None:
    from onnxruntime.quantization import QuantType

    out = quantized_sample(tmp_path, op_types_to_quantize=["Conv"], weight_type=QuantType.QInt8)
    result = diff_models(SAMPLE_MODEL, out)
    kinds = {(d.change, d.kind) for d in result.differences}
    assert (Change.CHANGED, "weight") not in kinds  # said on the inserted DequantizeLinear
    assert any("stores weight" in d.text for d in result.differences if d.change is Change.INSERTED)
    assert all(
        d.op_type in ("QuantizeLinear", "DequantizeLinear", "Relu") for d in result.differences
    )


def test_defaults_spelled_out_and_folded_constants_are_not_listed_node_by_node(
    tmp_path: Path,
) -> None:
    from onnx import TensorProto, helper

    def model(explicit: bool) -> onnx.ModelProto:
        keep = {"keepdims": 1} if explicit else {}
        shift = numpy_helper.from_array(np.array([1.0], np.float32), "shift")
        nodes = [
            helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[1], **keep),
            helper.make_node("Add", ["m", "shift"], ["y"], name="add"),
        ]
        if not explicit:  # the shift as a Constant node; the other side stores it as a weight
            nodes.insert(0, helper.make_node("Constant", [], ["shift"], name="c", value=shift))
        graph = helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            initializer=[shift] if explicit else [],
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])

    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(model(False), a)
    onnx.save(model(True), b)
    result = diff_models(a, b)
    assert [(d.change, d.kind) for d in result.differences] == [(Change.CHANGED, "constants")]
