"""A model that declares its outputs wrongly: said before converting, named in a conversion
error, and fixed on request (the result declares what the model produces, and passes its check)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from edgestudio.core.convert.convert_recipes import ConvertRecipe
from edgestudio.core.convert.output_shapes import declare_produced_shapes, output_shape_mismatches
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models


def test_mismatches_are_found_and_declared_as_produced() -> None:
    model = models.wrong_output_declaration()
    mismatches = output_shape_mismatches(model, {"y": (4, 1, 2)})
    assert [m.text() for m in mismatches] == [
        "'y' declares [1, seqlen] but the model produces [4, 1, 2]"
    ]
    assert output_shape_mismatches(model, {"y": (1, 5)}) == []  # a symbolic dim may be 5
    declare_produced_shapes(model, mismatches)
    dims = model.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["y_dim0", "y_dim1", "y_dim2"]


@pytest.mark.e2e
def test_the_wrong_declaration_is_said_before_converting_and_fixed_on_request(
    tmp_path: Path,
) -> None:
    src = models.save(models.wrong_output_declaration(), tmp_path / "m.onnx")
    plain = run_job(
        ConvertRecipe(model=str(src), output=str(tmp_path / "a.onnx"), opset=17), timeout=300
    )
    said = " ".join(plain.warnings) + str(plain.error)
    assert "declares [1, seqlen] but the model produces [4, 1, 2]" in said
    assert "--fix-output-shapes" in said
    fixed_out = tmp_path / "b.onnx"
    fixed = run_job(
        ConvertRecipe(model=str(src), output=str(fixed_out), opset=17, fix_output_shapes=True),
        timeout=300,
    )
    assert fixed.state is JobState.SUCCEEDED, fixed.error
    assert fixed.report is not None and fixed.report.check is not None
    assert fixed.report.check.passed
    dims = onnx.load(str(fixed_out)).graph.output[0].type.tensor_type.shape.dim
    assert len(dims) == 3
    assert "--fix-output-shapes" in fixed.recipe.command_line()


@pytest.mark.e2e
def test_constant_weights_and_a_rank_0_declaration_convert_with_the_fix(tmp_path: Path) -> None:
    """Weights as Constant nodes and an output declared rank-0: onnx's shape inference fails
    on the result; the job converts again declaring what the model produces, and says so."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["W"],
            name="cW",
            value=numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32)),
        ),
        helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    src = models.save(model, tmp_path / "m.onnx")
    out = tmp_path / "o.onnx"
    job = run_job(ConvertRecipe(model=str(src), output=str(out), opset=17), timeout=300)
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.check is not None and job.report.check.passed
    assert "Converted again with the outputs declared" in job.report.warnings[0]
    assert "'y' declares [] but the model produces [2, 3]" in job.report.warnings[0]
    assert len(onnx.load(str(out)).graph.output[0].type.tensor_type.shape.dim) == 2
