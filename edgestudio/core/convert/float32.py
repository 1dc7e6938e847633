"""Upcasting a float16 model to float32: every float16 weight, constant and computation.

onnxruntime's quantizer quantizes float32 tensors only: a model that computes in float16
fails static quantization (``QuantizeLinear`` refuses a float16 input) and dynamic
quantization skips its weights. Upcasting is exact for the weights (every float16 value is a
float32 value); the computation becomes more precise than the original's, so the result agrees
with it to float16's precision, not bit for bit. The model's interface is kept: a float16 input
is cast to float32 where it enters, a float16 output cast back where it leaves, so whatever
feeds the original feeds the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from edgestudio.core.job_api.recipe import Tolerance
from edgestudio.core.model.model_files import nested_graphs

FLOAT16 = TensorProto.FLOAT16
FLOAT = TensorProto.FLOAT
# float16 carries 11 significant bits: a float32 computation of the same graph differs from
# it by a few float16 ulps per layer, so the check allows float16's precision, not float32's.
FLOAT16_TOLERANCE = Tolerance(atol=1e-2, rtol=1e-2)
_DTYPE_ATTRIBUTES = ("to", "dtype")  # Cast's target; RandomNormal's, EyeLike's, … output type


@dataclass
class Upcast:
    """What upcasting changed: weights and constants stored anew, Casts retargeted, the
    interface's float16 inputs and outputs (kept float16, cast at the border), no-op Casts
    removed."""

    weights: int = 0
    constants: int = 0
    retargeted: int = 0
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    removed_casts: int = 0

    def __bool__(self) -> bool:
        return bool(self.weights or self.constants or self.retargeted or self.inputs)

    def text(self) -> str:
        """One sentence saying what changed."""
        parts = [f"{self.weights} float16 weight(s)"]
        if self.constants:
            parts.append(f"{self.constants} constant(s)")
        if self.retargeted:
            parts.append(f"{self.retargeted} cast(s) and typed operator(s)")
        said = ", ".join(parts) + " made float32"
        if self.inputs or self.outputs:
            said += (
                f"; the float16 interface kept ({len(self.inputs)} input(s) cast to float32 "
                f"where they enter, {len(self.outputs)} output(s) cast back to float16)"
            )
        if self.removed_casts:
            said += (
                f"; {self.removed_casts} cast(s) between the two precisions, now no-ops, removed"
            )
        return said + "."


def computes_in_float16(model: onnx.ModelProto) -> bool:
    """True when the model stores float16 weights or constants, or casts to float16 inside the
    graph (a float16 output's own Cast aside): what onnxruntime's quantizer cannot quantize."""
    graphs = list(_graphs(model.graph))
    if any(t.data_type == FLOAT16 for g in graphs for t in g.initializer):
        return True
    interface = {o.name for o in model.graph.output}  # a float16 output cast at the border
    for g in graphs:
        for node in g.node:
            for attr in node.attribute:
                if attr.name in _DTYPE_ATTRIBUTES and attr.i == FLOAT16:
                    if node.op_type == "Cast" and node.output[0] in interface:
                        continue
                    return True
                if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == FLOAT16:
                    return True
    return False


def upcast_float16(model: onnx.ModelProto) -> Upcast:
    """Make ``model`` compute in float32, in place (see the module's docstring)."""
    typed = _typed_floats(model)  # read before the retyping below erases float16
    done = Upcast()
    for graph in _graphs(model.graph):
        _upcast_graph(graph, done)
    _cast_interface(model.graph, typed[FLOAT16], done)
    done.removed_casts = _drop_noop_casts(model.graph, typed[FLOAT16] | typed[FLOAT])
    return done


def _typed_floats(model: onnx.ModelProto) -> dict[int, set[str]]:
    """The main graph's float16 and float32 tensors, by name: typed by onnx's shape inference
    where it works, else by what the model declares."""
    try:
        typed = onnx.shape_inference.infer_shapes(model, strict_mode=False).graph
    except Exception:  # a model onnx cannot infer: what is declared is all there is
        typed = model.graph
    found: dict[int, set[str]] = {FLOAT16: set(), FLOAT: set()}
    for v in [*typed.input, *typed.output, *typed.value_info]:
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type in found:
            found[v.type.tensor_type.elem_type].add(v.name)
    for t in typed.initializer:
        if t.data_type in found:
            found[t.data_type].add(t.name)
    return found


def _graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """``graph`` and every subgraph (Loop/Scan/If bodies), nested ones included."""
    return [graph, *nested_graphs(graph)]


def _float32_tensor(tensor: onnx.TensorProto) -> onnx.TensorProto:
    return numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float32), tensor.name)


def _upcast_graph(graph: onnx.GraphProto, done: Upcast) -> None:
    for i, t in enumerate(graph.initializer):
        if t.data_type == FLOAT16:
            graph.initializer[i].CopyFrom(_float32_tensor(t))
            done.weights += 1
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == FLOAT16:
                attr.t.CopyFrom(_float32_tensor(attr.t))
                done.constants += 1
            elif attr.name in _DTYPE_ATTRIBUTES and attr.i == FLOAT16:
                attr.i = FLOAT
                done.retargeted += 1
    for value in [*graph.value_info, *graph.input, *graph.output]:
        _retype(value)


def _retype(value: onnx.ValueInfoProto) -> None:
    if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type == FLOAT16:
        value.type.tensor_type.elem_type = FLOAT


def _cast_interface(graph: onnx.GraphProto, half: set[str], done: Upcast) -> None:
    """The main graph's inputs and outputs that were float16 (``half``) stay so:
    ``_upcast_graph`` made them float32, so they are declared float16 again and cast at the
    border."""
    stored = {t.name for t in graph.initializer}
    entering = [v for v in graph.input if v.name not in stored and v.name in half]
    leaving = [v for v in graph.output if v.name in half]
    casts: list[onnx.NodeProto] = []
    for value in entering:
        inner = _fresh(graph, f"{value.name}_float32")
        _rename_uses(graph, value.name, inner)
        casts.append(
            onnx.helper.make_node("Cast", [value.name], [inner], name=inner + "_cast", to=FLOAT)
        )
        value.type.tensor_type.elem_type = FLOAT16
        done.inputs.append(value.name)
    if casts:
        rest = list(graph.node)
        del graph.node[:]
        graph.node.extend([*casts, *rest])
    for value in leaving:
        inner = _fresh(graph, f"{value.name}_float32")
        for node in graph.node:
            node.output[:] = [inner if o == value.name else o for o in node.output]
        _rename_uses(graph, value.name, inner)
        graph.node.append(
            onnx.helper.make_node("Cast", [inner], [value.name], name=inner + "_cast", to=FLOAT16)
        )
        value.type.tensor_type.elem_type = FLOAT16
        done.outputs.append(value.name)


def _fresh(graph: onnx.GraphProto, wanted: str) -> str:
    taken = {t for n in graph.node for t in [*n.input, *n.output]} | {
        v.name for v in [*graph.input, *graph.output, *graph.initializer]
    }
    name, k = wanted, 1
    while name in taken:
        name, k = f"{wanted}_{k}", k + 1
    return name


def _rename_uses(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Every node that reads ``old`` (in subgraphs too, which read outer names) reads ``new``."""
    for g in _graphs(graph):
        for node in g.node:
            node.input[:] = [new if i == old else i for i in node.input]


def _drop_noop_casts(graph: onnx.GraphProto, floats: set[str]) -> int:
    """Remove the main graph's Casts to float32 of what was float16 or float32 (``floats``):
    after the upcast they cast float32 to float32. A Cast whose output is a graph output, and
    the interface's own Casts, stay."""
    outputs = {o.name for o in graph.output}
    removed = []
    for node in graph.node:
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        if (
            node.op_type == "Cast"
            and to == FLOAT
            and node.input
            and node.input[0] in floats
            and node.output[0] not in outputs
            and not node.name.endswith("_float32_cast")
        ):
            removed.append(node)
    for node in removed:
        graph.node.remove(node)
        _rename_uses(graph, node.output[0], node.input[0])
    return len(removed)
