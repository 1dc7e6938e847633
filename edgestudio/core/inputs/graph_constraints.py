"""What a graph's weights and strides say about its inputs' sizes (pure Python + onnx).

A feature matrix ``[frames, features]`` whose features meet a MatMul's weights can only be as
wide as those weights are tall; an LSTM's initial state is as big as its hidden size; a U-Net
whose skip connections meet again after five stride-2 stages runs only on sizes divisible by
32. :mod:`edgestudio.core.inputs.input_derivation` uses these facts for its candidates, and
names them when nothing runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import onnx

# Ops whose output has the input's axes, in order (a feature axis stays the feature axis).
_SAME_AXES = frozenset(
    {
        "Cast",
        "Identity",
        "Relu",
        "LeakyRelu",
        "Sigmoid",
        "Tanh",
        "Neg",
        "Abs",
        "Sqrt",
        "Exp",
        "Log",
        "Clip",
        "Dropout",
        "BatchNormalization",
        "InstanceNormalization",
        "LayerNormalization",
        "Softmax",
        "LogSoftmax",
        "Erf",
        "Gelu",
        "HardSigmoid",
        "HardSwish",
        "Elu",
        "Selu",
        "Softplus",
        "Reciprocal",
        "QuantizeLinear",
        "DequantizeLinear",
        "Floor",
        "Ceil",
        "Round",
        "PRelu",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Max",
        "Min",
        "DynamicQuantizeLinear",
    }
)
_RECURRENT = frozenset({"RNN", "GRU", "LSTM", "DynamicQuantizeLSTM"})
# Quantized kernels read their input and weights as the float op does (a model the app
# quantized must be as readable as its original): the float op each stands for, and where its
# weights are.
_AS_FLOAT = {
    "MatMulInteger": "MatMul",
    "QLinearMatMul": "MatMul",
    "ConvInteger": "Conv",
    "QLinearConv": "Conv",
    "DynamicQuantizeLSTM": "LSTM",
}


def _weight_index(node: onnx.NodeProto) -> int:
    return 3 if node.op_type.startswith("QLinear") else 1


# A weight reaches its layer through these (a quantized model's DequantizeLinear, fp16 Casts).
_WEIGHT_CHAIN = frozenset({"Cast", "Identity", "DequantizeLinear", "Transpose"})
_DOWNSAMPLING = frozenset(
    {"Conv", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool"}
)
_WINDOWED = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"})
_BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div"})
MAX_STRIDE = 256  # beyond this a "stride" is a global reduction, not a size constraint


@dataclass(frozen=True)
class AxisSize:
    """One input axis whose size the graph fixes, and what fixes it."""

    input: str
    axis: int
    size: int
    reason: str  # "the weights of MatMul 'fc1' (80 rows)"


def _int(node: onnx.NodeProto, name: str, default: int = 0) -> int:
    """An int attribute of ``node`` (``default`` when absent)."""
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _ints(node: onnx.NodeProto, name: str) -> list[int] | None:
    """An ints attribute of ``node`` (None when absent)."""
    return next(([int(v) for v in a.ints] for a in node.attribute if a.name == name), None)


def weight_dims(
    tensor: str, producers: Mapping[str, onnx.NodeProto], consts: Mapping[str, onnx.TensorProto]
) -> list[int] | None:
    """The dims of the stored weight behind ``tensor`` (through de-quantization and casts;
    a Transpose permutes them)."""
    for _ in range(6):
        if tensor in consts:
            return [int(d) for d in consts[tensor].dims]
        node = producers.get(tensor)
        if node is None or node.op_type not in _WEIGHT_CHAIN or not node.input:
            return None
        if node.op_type == "Transpose":
            dims = weight_dims(node.input[0], producers, consts)
            if dims is None:
                return None
            perm = _ints(node, "perm") or list(reversed(range(len(dims))))
            return [dims[p] for p in perm]
        tensor = node.input[0]
    return None


def _unsqueeze_axes(node: onnx.NodeProto, consts: Mapping[str, onnx.TensorProto]) -> list[int]:
    axes = _ints(node, "axes")
    if axes is None and len(node.input) > 1 and node.input[1] in consts:
        axes = [int(a) for a in onnx.numpy_helper.to_array(consts[node.input[1]]).reshape(-1)]
    return axes or []


def _next_axes(
    node: onnx.NodeProto,
    tensor: str,
    axes: tuple[int | None, ...],
    consts: Mapping[str, onnx.TensorProto],
) -> tuple[int | None, ...] | None:
    """The input axes behind each axis of ``node``'s output (None: not an input axis), or
    None when the op moves axes in a way not followed (Reshape, Flatten, Concat...)."""
    op = node.op_type
    if op in _SAME_AXES:
        if node.input[0] != tensor and op not in ("Add", "Mul", "Max", "Min"):
            return None  # the divisor or exponent: its axes do not carry on
        others = [t for t in node.input if t and t != tensor]
        ranks = [len(consts[t].dims) for t in others if t in consts]
        extra = max([*ranks, len(axes)]) - len(axes)  # a higher-rank constant broadcasts it
        return (None,) * extra + axes
    if op == "Transpose":
        perm = _ints(node, "perm") or list(reversed(range(len(axes))))
        return tuple(axes[p] for p in perm)
    if op == "Unsqueeze":
        added = _unsqueeze_axes(node, consts)
        rank = len(axes) + len(added)
        where = {a % rank for a in added}
        if not added or len(where) != len(added):
            return None
        rest = iter(axes)
        return tuple(None if i in where else next(rest) for i in range(rank))
    return None


def _consumer_sizes(
    node: onnx.NodeProto,
    tensor: str,
    axes: tuple[int | None, ...],
    producers: Mapping[str, onnx.NodeProto],
    consts: Mapping[str, onnx.TensorProto],
) -> list[tuple[int | None, int, str]]:
    """(input axis, size, reason) for each axis of ``tensor`` that ``node``'s weights fix."""
    op, name = _AS_FLOAT.get(node.op_type, node.op_type), node.name or node.output[0]
    inputs = list(node.input)
    weights = inputs[_weight_index(node)] if len(inputs) > _weight_index(node) else ""
    found: list[tuple[int | None, int, str]] = []
    if op == "MatMul" and len(axes) >= 1:
        if inputs[0] == tensor and (w := weight_dims(weights, producers, consts)):
            k = w[-2] if len(w) >= 2 else w[0]
            found.append((axes[-1], k, f"the weights of MatMul '{name}' ({k} rows)"))
        elif (
            weights == inputs[1]
            and inputs[1] == tensor
            and len(axes) >= 2
            and (w := weight_dims(inputs[0], producers, consts))
        ):
            found.append((axes[-2], w[-1], f"the weights of MatMul '{name}' ({w[-1]} columns)"))
    elif (
        op == "Gemm"
        and inputs[0] == tensor
        and len(axes) == 2
        and (w := weight_dims(inputs[1], producers, consts))
        and len(w) == 2
    ):
        k = w[1] if _int(node, "transB") else w[0]
        axis = axes[0] if _int(node, "transA") else axes[1]
        found.append((axis, k, f"the weights of Gemm '{name}' ({k} inputs)"))
    elif (
        op in ("Conv", "ConvTranspose")
        and inputs[0] == tensor
        and len(axes) >= 3
        and (w := weight_dims(weights, producers, consts))
        and len(w) >= 3
    ):
        group = _int(node, "group", 1)
        channels = w[1] * group if op == "Conv" else w[0]
        found.append(
            (axes[1], channels, f"the weights of {op} '{name}' ({channels} input channels)")
        )
    elif op in _BROADCASTING and len(inputs) == 2 and tensor in inputs:
        # A per-feature scale or offset ([80, 3] against [frames, 80, 3]): every one of its
        # dims over 1 must be the input's, aligned from the right.
        other = inputs[1] if inputs[0] == tensor else inputs[0]
        dims = weight_dims(other, producers, consts) or []  # a QDQ model's behind its DQ
        if 0 < len(dims) <= len(axes):
            aligned = axes[len(axes) - len(dims) :]
            shown = "x".join(map(str, dims))
            found.extend(
                (axis, size, f"the [{shown}] constant of {op} '{name}'")
                for axis, size in zip(aligned, dims, strict=True)
                if size > 1
            )
    elif (
        op in _RECURRENT
        and inputs
        and (w := weight_dims(inputs[1], producers, consts))
        and len(w) == 3
    ):
        index = inputs.index(tensor)
        hidden, layout = _int(node, "hidden_size"), _int(node, "layout")
        # onnxruntime's dynamically quantized LSTM stores W as [directions, input, 4·hidden]
        width = w[1] if node.op_type == "DynamicQuantizeLSTM" else w[2]
        if index == 0 and len(axes) == 3:
            found.append((axes[2], width, f"the weights of {op} '{name}' (input size {width})"))
        elif index in (5, 6) and len(axes) == 3 and hidden:
            directions, state = (axes[1], axes[2]) if layout else (axes[0], axes[2])
            found.append((directions, w[0], f"{op} '{name}' runs {w[0]} direction(s)"))
            found.append((state, hidden, f"{op} '{name}' has hidden size {hidden}"))
    return found


def _reached(
    name: str,
    rank: int,
    consumers: Mapping[str, list[onnx.NodeProto]],
    consts: Mapping[str, onnx.TensorProto],
) -> Iterator[tuple[onnx.NodeProto, str, tuple[int | None, ...]]]:
    """Each node that reads input ``name`` (followed through ops that keep or permute its
    axes), with the tensor it reads and the input axis behind each of that tensor's axes."""
    frontier = [(name, tuple[int | None, ...](range(rank)))]
    seen = {name}
    while frontier:
        tensor, axes = frontier.pop()
        for node in consumers.get(tensor, []):
            yield node, tensor, axes
            after = _next_axes(node, tensor, axes, consts)
            if after is not None and node.output and node.output[0] not in seen and len(seen) < 64:
                seen.add(node.output[0])
                frontier.append((node.output[0], after))


def weight_fixed_axes(
    input_ranks: Mapping[str, int],
    consumers: Mapping[str, list[onnx.NodeProto]],
    producers: Mapping[str, onnx.NodeProto],
    consts: Mapping[str, onnx.TensorProto],
) -> dict[tuple[str, int], AxisSize]:
    """Each input axis whose size the weights of the first layer it meets fix, followed
    through ops that keep or permute axes (``input_ranks``: the inputs to look at)."""
    fixed: dict[tuple[str, int], AxisSize] = {}
    for name, rank in input_ranks.items():
        for node, tensor, axes in _reached(name, rank, consumers, consts):
            for axis, size, reason in _consumer_sizes(node, tensor, axes, producers, consts):
                if axis is not None and size > 0:
                    fixed.setdefault((name, axis), AxisSize(name, axis, size, reason))
    return fixed


def windowed_axes(
    input_ranks: Mapping[str, int],
    consumers: Mapping[str, list[onnx.NodeProto]],
    producers: Mapping[str, onnx.NodeProto],
    consts: Mapping[str, onnx.TensorProto],
) -> dict[tuple[str, int], AxisSize]:
    """Each input axis a convolution or pooling window slides along, with the least size its
    widest window fits in (and that window, named). Such an axis is a length (frames, pixels),
    never a batch, even at axis 0 of an input ``[frames, features]`` to which the graph adds
    its own batch axis."""
    found: dict[tuple[str, int], AxisSize] = {}
    for name, rank in input_ranks.items():
        for node, tensor, axes in _reached(name, rank, consumers, consts):
            op = _AS_FLOAT.get(node.op_type, node.op_type)
            if op not in _WINDOWED or node.input[0] != tensor or len(axes) < 3:
                continue
            kernel = _ints(node, "kernel_shape")
            if kernel is None and len(node.input) > _weight_index(node):
                weights = weight_dims(node.input[_weight_index(node)], producers, consts)
                kernel = weights[2:] if weights else None
            if not kernel or len(kernel) != len(axes) - 2:
                continue
            dilations = _ints(node, "dilations") or [1] * len(kernel)
            for axis, size, dilation in zip(axes[2:], kernel, dilations, strict=False):
                extent = dilation * (size - 1) + 1
                known = found.get((name, axis)) if axis is not None else None
                if axis is not None and (known is None or extent > known.size):
                    where = f"the {extent}-wide window of {node.op_type} '{node.name or op}'"
                    found[(name, axis)] = AxisSize(name, axis, extent, where)
    return found


def recurrent_batch_axes(
    input_ranks: Mapping[str, int],
    consumers: Mapping[str, list[onnx.NodeProto]],
    consts: Mapping[str, onnx.TensorProto],
) -> set[tuple[str, int]]:
    """The input axes an RNN/GRU/LSTM reads as its batch (axis 1 of its data and state in
    the default layout, axis 0 with ``layout=1``): they must agree, so they are all batch."""
    found: set[tuple[str, int]] = set()
    for name, rank in input_ranks.items():
        for node, tensor, axes in _reached(name, rank, consumers, consts):
            if node.op_type in _RECURRENT and len(axes) == 3:
                index = list(node.input).index(tensor)
                if index in (0, 5, 6):
                    axis = axes[0] if _int(node, "layout") else axes[1]
                    if axis is not None:
                        found.add((name, axis))
    return found


def _node_stride(node: onnx.NodeProto, consts: Mapping[str, onnx.TensorProto]) -> float:
    op = node.op_type
    if op in _DOWNSAMPLING:
        return float(max(_ints(node, "strides") or [1]))
    if op == "ConvTranspose":
        return 1.0 / float(max(_ints(node, "strides") or [1]))
    if op in ("SpaceToDepth", "DepthToSpace"):
        block = float(_int(node, "blocksize", 1))
        return block if op == "SpaceToDepth" else 1.0 / block
    if op == "Slice" and len(node.input) > 4 and node.input[4] in consts:
        steps = onnx.numpy_helper.to_array(consts[node.input[4]]).reshape(-1)
        return float(max(abs(int(s)) for s in steps)) if steps.size else 1.0
    if op in ("Resize", "Upsample"):
        index = 2 if op == "Resize" else 1
        if len(node.input) > index and node.input[index] in consts:
            scales = onnx.numpy_helper.to_array(consts[node.input[index]]).reshape(-1)
            if scales.size and scales.max() > 0:
                return 1.0 / float(scales.max())
    return 1.0


def total_stride(model: onnx.ModelProto, consts: Mapping[str, onnx.TensorProto]) -> int:
    """The biggest factor by which the graph shrinks a spatial (or time) axis before its
    features meet again: sizes that are multiples of it keep every stage's halves whole
    (1 when nothing downsamples, or when the graph never upsamples to merge scales)."""
    stride: dict[str, float] = {}
    biggest, merges = 1.0, False
    for node in model.graph.node:  # ONNX lists nodes in topological order
        before = max((stride.get(t, 1.0) for t in node.input if t), default=1.0)
        factor = _node_stride(node, consts)
        after = before * factor
        if factor < 1.0:
            merges = True  # an upsampling: a decoder that meets the encoder's skips
        for out in node.output:
            stride[out] = after
        biggest = max(biggest, after)
    if not merges or biggest > MAX_STRIDE:
        return 1
    return int(2 ** math.ceil(math.log2(biggest))) if biggest > 1 else 1


def multiples_of(sizes: tuple[int, ...], stride: int) -> tuple[int, ...]:
    """``sizes`` rounded up to multiples of ``stride``, in order, without repeats."""
    if stride <= 1:
        return sizes
    return tuple(dict.fromkeys(-(-s // stride) * stride for s in sizes))
