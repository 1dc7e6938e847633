"""Widths a fixed-size flatten decides: the input size that hands a ``Reshape`` to ``[-1, K]``
(or a ``Flatten`` before a K-row dense layer) exactly K values per row.

A CNN whose convolutions end in a Reshape (or Flatten) into a dense layer runs on one input
width only, fixed by no weight the first layer meets: madmom's key CNN reshapes its
``[1, 24, W]`` features to ``[-1, 2520]`` (so W is 105), its note CNN ``[frames, 10, W − 38]``
to ``[-1, 1060]`` (W is 144). No list of guesses holds such sizes. Here each unknown size of a
candidate that failed is made a symbol, onnxruntime's symbolic shape inference carries it
through the graph, and the size is solved from the rows a constant Reshape asks for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx

from edgestudio.core.inputs.graph_constraints import weight_dims
from edgestudio.core.inputs.input_spec import InputSpecification

MAX_SIZE = 16384  # sizes tried for a symbol (a spectrogram's bins, an image side)
_AS_FLOAT = {"ConvInteger": "Conv", "MatMulInteger": "MatMul"}
_SYMBOL = "edgestudio_solved"


@dataclass(frozen=True)
class SolvedWidth:
    """A size solved from a Reshape, and what a person reads about it."""

    symbol: str
    size: int
    reason: str


def solve_flatten_widths(
    model: onnx.ModelProto, candidate: InputSpecification
) -> list[SolvedWidth]:
    """Sizes for ``candidate``'s symbols (one at a time, the others as the candidate has them)
    that give a constant-shape Reshape ``[-1, t1…tk]`` exactly ``t1·…·tk`` values per row."""
    try:
        import sympy
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference  # noqa: F401
    except ImportError:  # a build without them: nothing is solved, the failure is said as before
        return []
    found = []
    for symbol, size in candidate.sizes:
        if symbol in candidate.batch_symbols:
            continue
        shapes = _symbolic_shapes(model, candidate, symbol)
        if shapes is None:
            continue
        solved = _solve(model, shapes, sympy.Symbol(_SYMBOL, integer=True, positive=True), symbol)
        if solved is not None and solved[0] != size:
            found.append(SolvedWidth(symbol, solved[0], f"{symbol} = {solved[0]}, {solved[1]}"))
    return found


def _symbolic_shapes(
    model: onnx.ModelProto, candidate: InputSpecification, symbol: str
) -> dict[str, list[int | str]] | None:
    """Every tensor's shape with ``symbol`` left symbolic (the candidate's sizes elsewhere), or
    None when onnxruntime's symbolic inference cannot follow the graph."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    # onnxruntime's inference does not follow its integer kernels: for shapes they are the
    # float op they stand for (a dynamic int8 result must solve as its original does)
    for node in probe.graph.node:
        if node.op_type in _AS_FLOAT:
            node.op_type = _AS_FLOAT[node.op_type]
            del node.input[2:]
    entries = {e.name: e for e in candidate.inputs}
    for value in probe.graph.input:
        entry = entries.get(value.name)
        if entry is None or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        for axis, dim in enumerate(dims):
            if axis < len(entry.declared) and entry.declared[axis] == symbol:
                dim.dim_param = _SYMBOL
            elif axis < len(entry.shape):
                dim.dim_value = entry.shape[axis]
    # SymbolicShapeInference.infer_shapes saves the model into the working folder
    # (sym_shape_infer_temp.onnx and its weights: 100 MB for a recogniser) whenever it cannot
    # follow a whole graph. Its steps are driven here instead: nothing is written, and what
    # it did follow is used.
    inference = SymbolicShapeInference(2**31 - 1, True, False, 0)
    try:
        inference._preprocess(probe)
        while inference.run_:
            inference._infer_impl()
        inference._update_output_from_vi()
    except Exception:  # the inference is a help here; a graph it cannot follow is left alone
        return None
    inferred = inference.out_mp_
    return {
        v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in [*inferred.graph.value_info, *inferred.graph.output]
        if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape")
    }


def _rows_asked(model: onnx.ModelProto) -> list[tuple[onnx.NodeProto, int, int]]:
    """(node, first axis of a row, values per row) for each fixed-width flatten: a Reshape to
    a constant ``[-1, t1…tk]``, or a Flatten whose rows meet a MatMul/Gemm weight of K rows."""
    consts = {t.name: t for t in model.graph.initializer}
    producers = {out: n for n in model.graph.node for out in n.output}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    asked = []
    for node in model.graph.node:
        if node.op_type == "Reshape" and len(node.input) > 1 and node.input[1] in consts:
            target = onnx.numpy_helper.to_array(consts[node.input[1]]).reshape(-1).tolist()
            if len(target) >= 2 and target[0] == -1 and all(t > 0 for t in target[1:]):
                asked.append((node, 1, math.prod(int(t) for t in target[1:])))
        elif node.op_type == "Flatten":
            axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
            for reader in _dense_readers(node.output[0], readers):
                weight = weight_dims(reader.input[1], producers, consts)
                if weight is None or len(weight) != 2:
                    continue
                trans_b = any(a.name == "transB" and a.i for a in reader.attribute)
                asked.append((node, axis, weight[1] if trans_b else weight[0]))
    return asked


# What stands between a flatten and its dense layer in a quantized model (the activation's
# quantization).
_PASSING = frozenset({"DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "Cast"})
_DENSE = frozenset({"MatMul", "Gemm", "MatMulInteger"})


def _dense_readers(
    tensor: str, readers: dict[str, list[onnx.NodeProto]], depth: int = 3
) -> list[onnx.NodeProto]:
    """The MatMul/Gemm layers that read ``tensor`` as their data, through quantization ops."""
    found = []
    for reader in readers.get(tensor, []):
        if reader.op_type in _DENSE and reader.input[0] == tensor and len(reader.input) > 1:
            found.append(reader)
        elif reader.op_type in _PASSING and depth > 0:
            found += _dense_readers(reader.output[0], readers, depth - 1)
    return found


def _solve(
    model: onnx.ModelProto, shapes: dict[str, list[int | str]], unknown: object, symbol: str
) -> tuple[int, str] | None:
    """The smallest size for which a flatten's rows hold what the layer after it asks, and
    why in words."""
    import sympy

    for node, axis, wanted in _rows_asked(model):
        dims = shapes.get(node.input[0])
        if not dims or axis >= len(dims):
            continue
        row = sympy.Integer(1)
        for d in dims[axis:]:
            row *= sympy.sympify(d, locals={_SYMBOL: unknown}) if isinstance(d, str) else d
        if unknown not in row.free_symbols:
            continue
        values = sympy.lambdify(unknown, row, "numpy")(np.arange(1, MAX_SIZE + 1))
        hits = np.flatnonzero(np.asarray(values) == wanted)
        if hits.size:
            size = int(hits[0]) + 1
            shown = [str(d).replace(_SYMBOL, symbol) for d in dims[axis:]]
            row_text = " × ".join(f"({d})" if " " in d else d for d in shown)
            return size, (
                f"so that {node.op_type} '{node.name}' gives rows of {wanted} values "
                f"({row_text} = {wanted})"
            )
    return None
