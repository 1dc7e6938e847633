"""onnx's shape inference, cheap on big models: run on a copy whose big weights are declared
graph inputs (their shapes, no data), since inference needs their shapes only."""

from __future__ import annotations

import numpy as np
import onnx

# Initializers above this many elements are declared, not stored, in the copy inferred (small
# ones are kept: inference reads shape constants' values).
INFERENCE_DATA_LIMIT = 4096


def inferred_dims(model: onnx.ModelProto) -> dict[str, list[str | int | None]]:
    """Every tensor's dims as onnx's shape inference finds them (symbols carried through
    MatMul, Gemm, ...), on a copy whose big weights are declared inputs: cheap on big models.
    Empty when inference fails."""
    light = declared_weights(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(light, data_prop=True)
    except Exception:  # onnx raises several classes; no shapes is an answer
        return {}
    found: dict[str, list[str | int | None]] = {}
    graph = inferred.graph
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor = value.type.tensor_type
        if tensor.HasField("shape"):
            found[value.name] = [
                d.dim_param or (d.dim_value if d.HasField("dim_value") else None)
                for d in tensor.shape.dim
            ]
    for init in graph.initializer:
        found.setdefault(init.name, [int(d) for d in init.dims])
    return found


def declared_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its big initializers as declared graph inputs (their shapes, no data);
    local functions and value infos kept, as inference needs them."""
    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)  # torch.export writes local functions
    graph = light.graph
    graph.name = model.graph.name
    graph.node.extend(model.graph.node)
    graph.input.extend(model.graph.input)
    graph.output.extend(model.graph.output)
    graph.value_info.extend(model.graph.value_info)
    names = {v.name for v in model.graph.input}
    for init in model.graph.initializer:
        if int(np.prod(init.dims)) <= INFERENCE_DATA_LIMIT:
            graph.initializer.append(init)
        elif init.name not in names:
            graph.input.append(
                onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    return light
