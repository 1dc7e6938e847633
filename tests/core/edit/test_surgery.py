"""Model surgery on models built in code: each edit exact, each refusal clear and harmless."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from edgestudio.core.edit.surgery import EditError, add_outputs, bypass, extract, rename
from tests import models


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


X = {"x": np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)}


def test_extract_keeps_exactly_the_part_between_the_tensors() -> None:
    model = models.conv_relu_gemm()
    part = extract(model, ["r"], ["y"])
    assert [n.name for n in part.graph.node] == ["flatten", "fc"]
    assert [v.name for v in part.graph.input] == ["r"]
    assert {t.name for t in part.graph.initializer} == {"fc.w", "fc.b"}  # only what it reads
    full = model.graph.output
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend([onnx.ValueInfoProto(name="r")])
    original = _run(probe, X)
    got = _run(part, {"r": original["r"]})
    np.testing.assert_allclose(got["y"], original[full[0].name], rtol=1e-6)


def test_rename_changes_every_reference_and_refuses_clashes() -> None:
    model = models.conv_relu_gemm()
    rename(model, {"x": "pixels", "y": "scores"})
    assert [v.name for v in model.graph.input] == ["pixels"]
    assert model.graph.node[0].input[0] == "pixels" and model.graph.node[-1].output[0] == "scores"
    assert "scores" in _run(model, {"pixels": X["x"]})
    with pytest.raises(EditError, match="not a graph input or output"):
        rename(model, {"r": "relu_out"})
    with pytest.raises(EditError, match="already a tensor"):
        rename(model, {"pixels": "r"})


def test_add_output_exposes_a_typed_intermediate_tensor() -> None:
    model = models.conv_relu_gemm()
    add_outputs(model, ["r"])
    out = model.graph.output[-1]
    assert out.name == "r" and out.type.tensor_type.elem_type == TensorProto.FLOAT
    assert _run(model, X)["r"].shape == (2, 4, 8, 8)
    with pytest.raises(EditError, match="No tensor called 'nope'"):
        add_outputs(model, ["nope"])


def test_bypass_removes_pass_through_nodes_and_refuses_shape_changes() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["a"], name="relu"),
            helper.make_node("Identity", ["a"], ["b"], name="copy"),
            helper.make_node("Dropout", ["b"], ["c"], name="drop"),
            helper.make_node("Flatten", ["c"], ["y"], name="flat"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    before = _run(model, {"x": X["x"][:, 0, :3, :4]})
    bypass(model, "copy")
    bypass(model, "drop")
    assert [n.name for n in model.graph.node] == ["relu", "flat"]
    np.testing.assert_array_equal(_run(model, {"x": X["x"][:, 0, :3, :4]})["y"], before["y"])
    with pytest.raises(EditError, match="changes what flows through it"):
        bypass(model, "flat")
    assert len(model.graph.node) == 2  # a refused edit leaves the model as it was
    with pytest.raises(EditError, match="No node called"):
        bypass(model, "missing")


def test_bypassing_the_node_that_writes_an_output_keeps_the_output_name() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["a"], name="relu"),
            helper.make_node("Identity", ["a"], ["y"], name="last"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    bypass(model, "last")
    assert [n.name for n in model.graph.node] == ["relu"] and model.graph.node[0].output[0] == "y"
    assert _run(model, {"x": np.array([-1, 2, -3, 4], np.float32)})["y"].tolist() == [0, 2, 0, 4]


def test_an_original_too_big_to_run_beside_the_edit_leaves_it_unchecked_but_run(
    tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from edgestudio.core.edit import edit_job
    from edgestudio.core.edit.edit_recipe import EditRecipe
    from edgestudio.core.progress import RecordingReporter
    from tests.graph_builders import llama_decoder

    monkeypatch.setattr(edit_job, "COMPARE_LIMIT", 0)  # as if the weights were 4 GB
    src = llama_decoder(tmp_path, layers=3, hidden=32, intermediate=64, vocab=64)
    staging = tmp_path / "staging"
    staging.mkdir()
    report = edit_job.run_edit(
        EditRecipe(
            model=str(src), output=str(tmp_path / "cut.onnx"), outputs=("layers.0/mlp_residual",)
        ),
        RecordingReporter(),
        staging,
    )
    assert report.result.streamed and report.outcome == "unchecked"
    case = report.check.cases[0]  # type: ignore[union-attr]
    assert case.skipped is not None and case.skipped.startswith("runs; not compared")
    assert sorted(p.name for p in staging.iterdir()) == ["cut.onnx", "cut.onnx.data"]
