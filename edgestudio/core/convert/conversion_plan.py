"""Checks made before a conversion runs: what cannot work, and what might break.

Pure protobuf inspection, cheap enough for a form to call on every edit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.model.opsets import (
    DEFAULT_DOMAIN,
    iter_nodes,
    normalise_domain,
    op_introduced_in,
)


@dataclass
class Plan:
    """Findings for one planned conversion: ``blockers`` stop it, ``warnings`` are shown."""

    blockers: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing blocks the conversion."""
        return not self.blockers


def model_opset(model: onnx.ModelProto) -> int | None:
    """The model's default-domain opset."""
    for entry in model.opset_import:
        if normalise_domain(entry.domain) == DEFAULT_DOMAIN:
            return int(entry.version)
    return None


def _changed_between(op: str, low: int, high: int) -> bool:
    """True when ``op``'s definition changed at some opset in (low, high]."""
    for version in range(high, low, -1):
        try:
            schema = onnx.defs.get_schema(op, version, "")
        except onnx.defs.SchemaError:
            return False
        if schema.since_version > low:
            return True
        break
    return False


def plan_opset_conversion(
    model: onnx.ModelProto, target: int, max_runtime_opset: int | None = None
) -> Plan:
    """Flag known-impossible or risky conversions of ``model`` to opset ``target``."""
    plan = Plan()
    current = model_opset(model)
    newest = int(onnx.defs.onnx_opset_version())
    if current is None:
        domains = sorted({d.domain for d in model.opset_import if d.domain})
        plan.blockers.append(
            "The model declares no ai.onnx opset to convert from"
            + (
                f": its operators come from {', '.join(domains)}, whose versions onnx's "
                "converter does not change; it runs as it is (inspect, benchmark and profile "
                "apply to it)."
                if domains
                else ": add one (onnx.helper.make_opsetid('', N)) before converting."
            )
        )
        return plan
    if target > newest:
        plan.blockers.append(f"The installed onnx knows opsets up to {newest}.")
    if max_runtime_opset is not None and target > max_runtime_opset:
        plan.warnings.append(
            f"onnxruntime runs opsets up to {max_runtime_opset}: the result could not be checked "
            "or run here."
        )
    ops = sorted(
        {n.op_type for n in iter_nodes(model.graph) if normalise_domain(n.domain) == DEFAULT_DOMAIN}
    )
    too_new = [
        f"{op} (opset {v})" for op in ops if (v := op_introduced_in(op)) is not None and v > target
    ]
    if too_new:
        plan.blockers.append(
            f"These operators do not exist in opset {target}: {', '.join(too_new)}."
        )
    if target < current and not too_new:
        changed = [op for op in ops if _changed_between(op, target, current)]
        if changed:
            plan.warnings.append(
                f"Downgrading {current} → {target} needs onnx's down-conversion adapters for "
                f"{', '.join(changed)}; several do not exist, so this often fails."
            )
        else:
            plan.warnings.append(
                f"Downgrade {current} → {target}: no operator changed in between, so only the "
                "opset number changes."
            )
    if target == current:
        plan.warnings.append(f"The model is already at opset {target}.")
    return plan


def io_dims(model: onnx.ModelProto) -> dict[str, list[int | str | None]]:
    """Return the dims of every graph input (not initializers) and output, by tensor name."""
    inits = {t.name for t in model.graph.initializer}
    dims: dict[str, list[int | str | None]] = {}
    for value in [*model.graph.input, *model.graph.output]:
        if value.name in inits or not value.type.HasField("tensor_type"):
            continue
        shape = value.type.tensor_type.shape
        dims[value.name] = [
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in shape.dim
        ]
    return dims


def _shape_constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    consts: dict[str, np.ndarray] = {}
    for t in model.graph.initializer:
        if t.data_type == onnx.TensorProto.INT64 and t.data_location != onnx.TensorProto.EXTERNAL:
            consts[t.name] = numpy_helper.to_array(t)
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_type == onnx.TensorProto.INT64:
                    consts[node.output[0]] = numpy_helper.to_array(attr.t)
    return consts


def plan_dim_changes(model: onnx.ModelProto, changes: list[DimChange]) -> Plan:
    """Validate dim changes and warn where a fixed size is baked into Reshape/Expand shapes."""
    plan = Plan()
    dims = io_dims(model)
    consts = _shape_constants(model)
    for change in changes:
        if change.tensor not in dims:
            plan.blockers.append(
                f"'{change.tensor}' is not a graph input or output (they are: "
                f"{', '.join(dims) or 'none'})."
            )
            continue
        rank = len(dims[change.tensor])
        if not 0 <= change.axis < rank:
            plan.blockers.append(f"'{change.tensor}' has rank {rank}: no axis {change.axis}.")
            continue
        if isinstance(change.value, int) and change.value < 1:
            plan.blockers.append(f"A fixed size must be ≥ 1 (got {change.value}).")
        if isinstance(change.value, str) and not change.value.isidentifier():
            plan.blockers.append(f"'{change.value}' is not a valid dim name (use e.g. 'batch').")
        current = dims[change.tensor][change.axis]
        if isinstance(change.value, str) and isinstance(current, int) and current > 1:
            for node in model.graph.node:
                if node.op_type not in ("Reshape", "Expand") or len(node.input) < 2:
                    continue
                shape = consts.get(node.input[1])
                if shape is not None and current in shape.tolist():
                    plan.warnings.append(
                        f"{node.op_type} '{node.name or node.output[0]}' has the size {current} "
                        f"baked into its shape {shape.tolist()}: making {change.tensor} axis "
                        f"{change.axis} dynamic may break at other sizes."
                    )
        if isinstance(change.value, str) and current == 1:
            for node in model.graph.node:
                if node.op_type in ("Reshape", "Expand") and len(node.input) > 1:
                    shape = consts.get(node.input[1])
                    if shape is not None and shape.size and int(shape.flat[0]) == 1:
                        plan.warnings.append(
                            f"{node.op_type} '{node.name or node.output[0]}' fixes its first dim "
                            f"to 1 ({shape.tolist()}): a dynamic batch may break there."
                        )
    return plan


def apply_dim_changes(model: onnx.ModelProto, changes: list[DimChange]) -> None:
    """Set the dims of graph inputs/outputs in place and drop stale intermediate shapes."""
    values = {v.name: v for v in [*model.graph.input, *model.graph.output]}
    for change in changes:
        dim = values[change.tensor].type.tensor_type.shape.dim[change.axis]
        if isinstance(change.value, str):
            dim.ClearField("dim_value")
            dim.dim_param = change.value
        else:
            dim.ClearField("dim_param")
            dim.dim_value = change.value
    # Inferred shapes of intermediate tensors may contradict the new dims: infer them anew.
    del model.graph.value_info[:]
