"""The summary's numbers, checked against models whose contents we know by construction."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from edgestudio.core.model.runtime_info import RuntimeInfo, runtime_info
from edgestudio.core.model.summary import summarize_file
from tests import models
from tests.bad_models import CASES

FAKE_RUNTIME = RuntimeInfo(version="9.9", providers=("CPUExecutionProvider",), max_opset=21)


def test_conv_model_numbers(conv_model: Path) -> None:
    s = summarize_file(conv_model, FAKE_RUNTIME)
    assert s.nodes == 4 and s.nodes_in_subgraphs == 0
    assert s.op_types == {"Conv": 1, "Relu": 1, "Flatten": 1, "Gemm": 1}
    assert s.parameters == 4 * 3 * 3 * 3 + 4 + 10 * 256 + 10 == 2682
    assert s.parameter_bytes == 2682 * 4
    assert s.initializers == 4
    assert s.opset_imports == {"ai.onnx": 17}
    assert s.default_opset == 17
    assert (s.producer_name, s.producer_version, s.graph_name) == ("tests", "1.0", "conv_relu_gemm")
    assert s.ir_version == 8
    assert s.metadata == {"author": "tests", "task": "toy"}
    assert [(t.name, t.dtype, t.shape) for t in s.inputs] == [("x", "float32", ["batch", 3, 8, 8])]
    assert [(t.name, t.dtype, t.shape) for t in s.outputs] == [("y", "float32", ["batch", 10])]
    assert s.inputs[0].shape_text() == "[batch, 3, 8, 8]"
    assert s.file_size == conv_model.stat().st_size
    assert s.min_opset_required == 1  # Conv, Relu, Flatten, Gemm all exist since opset 1
    assert s.max_runtime_opset == 21
    assert s.problems == []


def test_external_data_counted_from_metadata(tmp_path: Path) -> None:
    path = models.external_weights(tmp_path)
    s = summarize_file(path)
    assert s.parameters == 2682
    assert s.parameter_bytes == 2682 * 4
    assert len(s.external_data) == 1
    ext = s.external_data[0]
    assert ext.location == "weights.bin"
    assert ext.size_bytes == (tmp_path / "weights.bin").stat().st_size
    assert ext.tensor_count == 4
    assert s.file_size < 1000  # the .onnx itself holds only the graph


def test_subgraph_nodes_are_counted(tmp_path: Path) -> None:
    s = summarize_file(models.save(models.with_if_subgraph(), tmp_path / "if.onnx"))
    assert s.nodes == 1
    assert s.nodes_in_subgraphs == 2
    assert s.op_types == {"If": 1, "Identity": 1, "Neg": 1}
    assert s.inputs[0].shape == []  # a scalar: rank 0, not unknown
    assert s.min_opset_required == 1  # If, Identity and Neg all exist since opset 1


def test_opset_beyond_runtime_is_a_problem(tmp_path: Path) -> None:
    s = summarize_file(models.save(models.relu_only(opset=25), tmp_path / "m.onnx"), FAKE_RUNTIME)
    assert len(s.problems) == 1
    assert "opset 25" in s.problems[0] and "up to 21" in s.problems[0]


def test_opset_unknown_to_onnx_is_a_problem(tmp_path: Path) -> None:
    s = summarize_file(models.save(models.relu_only(opset=99), tmp_path / "m.onnx"), FAKE_RUNTIME)
    assert any("opset 99" in p and "newer tool" in p for p in s.problems)


def test_unknown_domain_is_a_problem(tmp_path: Path) -> None:
    path = models.save(models.relu_only(domain="com.example.custom"), tmp_path / "m.onnx")
    s = summarize_file(path)
    assert any("com.example.custom" in p for p in s.problems)
    assert s.op_types == {"com.example.custom.Relu": 1}


def test_real_runtime_probe_reports_installed_onnxruntime() -> None:
    import onnxruntime

    info = runtime_info()
    assert info is not None
    assert info.version == onnxruntime.__version__
    assert "CPUExecutionProvider" in info.providers
    assert info.max_opset >= 21


def test_sample_model_summary(sample_model: Path) -> None:
    s = summarize_file(sample_model)
    assert s.inputs[0].name == "image" and s.inputs[0].shape == ["batch", 1, 8, 8]
    assert s.outputs[0].shape == ["batch", 10]
    assert s.op_types["Conv"] == 3
    assert s.default_opset == 17
    assert float(s.metadata["heldout_top1"]) > 0.95


def test_every_node_suite_model_summarizes(node_suite_models: list[Path]) -> None:
    assert len(node_suite_models) > 1500
    info = runtime_info()
    failures = {}
    for path in node_suite_models:
        try:
            summary = summarize_file(path, info)
        except Exception as exc:  # collect all, report together
            failures[path.parent.name] = repr(exc)
            continue
        assert summary.nodes >= 1
    assert failures == {}


def test_min_opset_is_the_newest_operator_introduction(tmp_path: Path) -> None:
    model = models.relu_only(opset=21)
    gelu = model.graph.node.add()
    gelu.CopyFrom(onnx.helper.make_node("Gelu", ["y"], ["z"]))  # Gelu appeared in opset 20
    model.graph.output[0].name = "z"
    s = summarize_file(models.save(model, tmp_path / "gelu.onnx"))
    assert s.min_opset_required == 20


@pytest.mark.parametrize(("op", "introduced"), [("Celu", 12), ("HardSwish", 14), ("Mish", 18)])
def test_min_opset_is_the_opset_that_introduced_the_newest_op(
    tmp_path: Path, op: str, introduced: int
) -> None:
    model = models.relu_only(opset=21)  # declared well above what its operators need
    extra = model.graph.node.add()
    extra.CopyFrom(onnx.helper.make_node(op, ["y"], ["z"]))
    model.graph.output[0].name = "z"
    s = summarize_file(models.save(model, tmp_path / "m.onnx"))
    assert s.min_opset_required == introduced


def test_cycle_names_the_nodes_in_it(tmp_path: Path) -> None:
    s = summarize_file(CASES["cycle"].build(tmp_path))
    cycle = [p for p in s.problems if "cycle" in p]
    assert len(cycle) == 1 and "(through first, second)" in cycle[0]  # not 'out', fed by it


def test_summary_counts_the_nodes_that_only_compute_constants(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import onnx

    from edgestudio.core.model.summary import summarize_model
    from tests.core.model.test_graph_ir import _model

    path = tmp_path / "consts.onnx"
    onnx.save(_model(), path)
    s = summarize_model(onnx.load(path), path)
    assert s.nodes == 9 and s.constant_nodes == 3
    assert sum(s.op_types.values()) == s.nodes + s.nodes_in_subgraphs
