"""Shape inference for display: every tensor's type and shape, from onnx's shape inference.

Runs in a worker (onnx's inference is native code with public crash reports). The graph view
uses the result to label edges.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.graph_ir import collect_tensor_info
from edgestudio.core.model.model_io import load_model
from edgestudio.core.model.tensor_shapes import Shapes, ShapesRecipe, TensorShapes
from edgestudio.core.progress import Reporter


def run_infer_shapes(recipe: ShapesRecipe, reporter: Reporter, staging: Path) -> JobReport[Shapes]:
    """Infer shapes of ``recipe.model``'s main graph: every tensor's ``(dtype, shape)``."""
    reporter.stage("Reading the model", 0.0)
    model = load_model(recipe.model)
    reporter.stage("Inferring shapes", 0.2)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as exc:
        reporter.warn(
            f"Shape inference failed ({type(exc).__name__}: {exc}); showing the shapes "
            "the model declares."
        )
        inferred = model
    info = collect_tensor_info(inferred.graph)
    shapes: TensorShapes = {
        name: (ti.dtype, None if ti.shape is None else list(ti.shape)) for name, ti in info.items()
    }
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, result=Shapes(shapes))
