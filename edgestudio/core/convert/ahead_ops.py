"""Operators a model uses before its opset defines them: onnxruntime's optimiser writes its own
``LayerNormalization`` (ONNX's only from opset 17) into an opset-12 graph, and onnxruntime runs
it. onnx's version converter stops at such a node ("No Adapter From Version 16 for
LayerNormalization"); converted while set aside in a domain of their own, they come back
unchanged — from the opset that defines them on, as the standard operator they already were
(same name, attributes and meaning).
"""

from __future__ import annotations

import onnx
from onnx import defs

from edgestudio.core.convert.conversion_plan import model_opset
from edgestudio.core.model.opsets import iter_nodes

HOLD_DOMAIN = "edgestudio.held"  # where those nodes wait while the converter runs


def ahead_of_opset(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The default-domain nodes whose operator the model's opset does not define yet."""
    opset = model_opset(model)
    if opset is None:
        return []
    ahead = []
    for node in iter_nodes(model.graph):
        if node.domain not in ("", "ai.onnx") or not defs.has(node.op_type):
            continue
        try:
            defs.get_schema(node.op_type, opset)
        except defs.SchemaError:
            ahead.append(node)
    return ahead


def convert_version(model: onnx.ModelProto, target: int) -> tuple[onnx.ModelProto, list[str]]:
    """onnx's version converter to ``target``, those nodes set aside; the result and the
    operator types set aside (for the job's note)."""
    held = ahead_of_opset(model)
    for node in held:
        node.domain = HOLD_DOMAIN
    if held:
        model.opset_import.append(onnx.helper.make_opsetid(HOLD_DOMAIN, 1))
    converted = onnx.version_converter.convert_version(model, target)
    for node in iter_nodes(converted.graph):
        if node.domain == HOLD_DOMAIN:
            node.domain = ""
    kept = [o for o in converted.opset_import if o.domain != HOLD_DOMAIN]
    del converted.opset_import[:]
    converted.opset_import.extend(kept)
    return converted, sorted({node.op_type for node in held})
