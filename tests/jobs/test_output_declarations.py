"""A model that declares its outputs wrongly: said before converting, named in a conversion
error, and fixed on request (the result declares what the model produces, and passes its check)."""

from __future__ import annotations

from pathlib import Path

import onnx

from edgestudio.core.convert.convert_recipes import ConvertRecipe
from edgestudio.core.convert.output_shapes import declare_produced_shapes, output_shape_mismatches
from edgestudio.jobs.runner import JobState, run_job
from tests import models


def test_mismatches_are_found_and_declared_as_produced() -> None:
    model = models.wrong_output_declaration()
    mismatches = output_shape_mismatches(model, {"y": (4, 1, 2)})
    assert [m.text() for m in mismatches] == [
        "'y' declares [1, seqlen] but the model produces [4, 1, 2]"]
    assert output_shape_mismatches(model, {"y": (1, 5)}) == []  # a symbolic dim may be 5
    declare_produced_shapes(model, mismatches)
    dims = model.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["y_dim0", "y_dim1", "y_dim2"]


def test_the_wrong_declaration_is_said_before_converting_and_fixed_on_request(
        tmp_path: Path) -> None:
    src = models.save(models.wrong_output_declaration(), tmp_path / "m.onnx")
    plain = run_job(ConvertRecipe(model=str(src), output=str(tmp_path / "a.onnx"), opset=17),
                    timeout=300)
    said = " ".join(plain.warnings) + str(plain.error)
    assert "declares [1, seqlen] but the model produces [4, 1, 2]" in said
    assert "--fix-output-shapes" in said
    fixed_out = tmp_path / "b.onnx"
    fixed = run_job(ConvertRecipe(model=str(src), output=str(fixed_out), opset=17,
                                  fix_output_shapes=True), timeout=300)
    assert fixed.state is JobState.SUCCEEDED, fixed.error
    assert fixed.report is not None and fixed.report.check is not None
    assert fixed.report.check.passed
    dims = onnx.load(str(fixed_out)).graph.output[0].type.tensor_type.shape.dim
    assert len(dims) == 3
    assert "--fix-output-shapes" in fixed.recipe.command_line()
