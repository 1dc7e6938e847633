"""4-bit weight-only quantization (MatMulNBits) one weight at a time.

onnxruntime's ``MatMulNBitsQuantizer`` loads every weight into memory, looks each MatMul's
weight up by scanning the initializer list and removes the replaced weights one ``remove`` at a
time: its time grows faster than the model (a scan per node) and its memory is the whole model.
This writes the same model — the same nodes, names, attributes, initializers in the same order,
packed by the same C++ kernel (``quantize_matmul_4bits``) — reading one weight at a time from its
file (memory-mapped when it is external data) and writing each packed weight as it is made, so
time is linear and memory is one layer's weight plus the output being written.

It handles what the default (RTN) configuration does to a main graph of float32 weights —
MatMul weights into MatMulNBits and, when asked, embedding tables (a Gather of a constant) into
GatherBlockQuantized — and finds the language-model head for those who keep it in float;
anything else (subgraphs, N-D MatMul or non-float32 weights) is left to onnxruntime's quantizer,
which :func:`streamable` says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.paths import atomic_target

ProgressFn = Callable[[int, int, str], None]  # (weights done, weights in all, node name)
EXTERNAL_ABOVE = 1_800_000_000  # bytes of weights above which the result keeps external data


class NotStreamableError(ValueError):
    """The model needs onnxruntime's own quantizer; the message says why."""


@dataclass(frozen=True)
class Int4Options:
    """onnxruntime's default weight-only configuration, as ``MatMulNBitsQuantizer`` takes it."""

    block_size: int = 128
    symmetric: bool = False
    accuracy_level: int | None = None
    exclude: frozenset[str] = frozenset()
    gather: bool = False  # embedding tables too (op_types_to_quantize MatMul and Gather)

    def op_types(self) -> tuple[str, ...]:
        """onnxruntime's ``op_types_to_quantize`` for these options."""
        return ("MatMul", "Gather") if self.gather else ("MatMul",)


INT4_TYPE_OPSET, INT4_TYPE_IR = 21, 10  # the first opset and IR version with int4 tensors
GATHER_QUANT_AXIS = 1  # onnxruntime's default quant_axes for Gather: blocks along the hidden axis


def _weight_input(node: onnx.NodeProto) -> str:
    """The input holding the weight the quantizer replaces: a MatMul's B, a Gather's data."""
    if node.op_type == "Gather":
        return str(node.input[0])
    return str(node.input[1]) if len(node.input) > 1 else ""


def _weights_to_pack(
    graph: onnx.GraphProto, options: Int4Options
) -> tuple[dict[str, TensorProto], list[int]]:
    """The graph's initializers by name (the first of a name, as onnxruntime finds them) and
    the nodes onnxruntime's default quantizer replaces, in node order."""
    first: dict[str, TensorProto] = {}
    for tensor in graph.initializer:
        first.setdefault(tensor.name, tensor)
    types = options.op_types()
    chosen = [
        i
        for i, node in enumerate(graph.node)
        if node.op_type in types
        and node.name not in options.exclude
        and _weight_input(node) in first
    ]
    return first, chosen


def lm_head(graph: onnx.GraphProto) -> str:
    """The name of the language-model head: of the MatMuls with a constant 2-D weight whose
    output reaches a graph output through no other MatMul or Gemm, the widest (the vocabulary
    is the widest projection; a KV-cache output also reaches an output that way, from a narrow
    k/v projection). "" when there is none, or the widest is not wider than the rest."""
    constants = {t.name: t for t in graph.initializer}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    outputs = {value.name for value in graph.output}

    def reaches_output(tensor: str) -> bool:
        seen, frontier = set(), [tensor]
        while frontier:
            name = frontier.pop()
            if name in outputs:
                return True
            for node in readers.get(name, []):
                if node.op_type not in ("MatMul", "Gemm", "MatMulNBits") and node.name not in seen:
                    seen.add(node.name)
                    frontier.extend(node.output)
        return False

    heads = [
        (int(constants[n.input[1]].dims[1]), str(n.name))
        for n in graph.node
        if n.op_type == "MatMul"
        and len(n.input) > 1
        and n.input[1] in constants
        and len(constants[n.input[1]].dims) == 2
        and n.name
        and reaches_output(n.output[0])
    ]
    if not heads:
        return ""
    heads.sort(reverse=True)
    if len(heads) > 1 and heads[1][0] == heads[0][0]:
        return ""  # two equally wide candidates: no head to tell apart
    return heads[0][1]


def streamable(model: onnx.ModelProto, options: Int4Options) -> str:
    """Why this model needs onnxruntime's own quantizer ("" when it can be streamed)."""
    graph = model.graph
    if any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for node in graph.node
        for a in node.attribute
    ):
        return "the graph has subgraphs (If/Loop/Scan)"
    initializers, chosen = _weights_to_pack(graph, options)
    for i in chosen:
        node = graph.node[i]
        weight = initializers[_weight_input(node)]
        if weight.data_type != TensorProto.FLOAT:
            return f"{weight.name} is not float32"
        if node.op_type == "MatMul" and len(weight.dims) != 2:
            return f"{weight.name} is not 2-D"
        if node.op_type == "Gather" and len(weight.dims) <= GATHER_QUANT_AXIS:
            return f"{weight.name} has no axis {GATHER_QUANT_AXIS} to quantize along"
    return ""


class _WeightReader:
    """Reads initializers, inline or external, one at a time.

    External tensors are read into memory of their own that is freed with them, not
    memory-mapped: every page of a mapping that was read stays in the process's resident set
    until the mapping closes, so a mapped 5 GB file made the peak the whole model again."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def raw(self, tensor: TensorProto) -> bytes | np.ndarray:
        """The tensor's bytes as stored (an external tensor's in a writable array: onnxruntime's
        packing kernel copies a read-only one first, which doubled the memory)."""
        if tensor.data_location != TensorProto.EXTERNAL:
            return (
                tensor.raw_data
                if tensor.HasField("raw_data")
                else numpy_helper.to_array(tensor).tobytes()
            )
        entries = {e.key: e.value for e in tensor.external_data}
        path = self.folder / entries["location"]
        offset = int(entries.get("offset", 0))
        length = int(entries.get("length", 0)) or path.stat().st_size - offset
        data = np.empty(length, dtype=np.uint8)
        with path.open("rb") as file:
            file.seek(offset)
            got = file.readinto(data.data)
        if got != length:
            raise ValueError(
                f"{tensor.name}: {path.name} holds {got} of its {length} bytes "
                "(a truncated data file)"
            )
        return data

    def array(self, tensor: TensorProto) -> np.ndarray:
        """A float32 weight as an array."""
        raw = self.raw(tensor)
        data = (
            raw.view(np.float32)
            if isinstance(raw, np.ndarray)
            else np.frombuffer(raw, dtype=np.float32)
        )
        return data.reshape(tuple(tensor.dims))


class _DataWriter:
    """Appends tensors' bytes to one external-data file (aligned, as onnx writes them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: BinaryIO = path.open("wb")

    def put(self, tensor: TensorProto, data: bytes | np.ndarray) -> TensorProto:
        """Store ``data`` for ``tensor`` in the file and point the tensor at it; returns a
        copy of the tensor to keep instead: protobuf keeps a cleared field's bytes in the
        message's arena for the message's life, so each packed weight kept its bytes in
        memory (1.3 MB a weight, the whole output by the end)."""
        offset = self.file.tell()
        pad = (-offset) % 4096 if len(data) > 4096 else 0  # onnx aligns big tensors to pages
        if pad:
            self.file.write(b"\0" * pad)
            offset += pad
        self.file.write(data if isinstance(data, bytes) else data.data)
        tensor.ClearField("raw_data")
        del tensor.external_data[:]
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (
            ("location", self.path.name),
            ("offset", str(offset)),
            ("length", str(len(data))),
        ):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        slim = TensorProto()
        slim.CopyFrom(tensor)
        return slim

    def close(self) -> None:
        """Flush and close the file."""
        self.file.close()


def _pack(weight: np.ndarray, options: Int4Options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The packed 4-bit blocks, scales and zero points of a [K, N] weight: onnxruntime's
    ``DefaultWeightOnlyQuantizer.qbits_block_quant`` for the QOperator format, same kernel."""
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits

    rows, cols = weight.shape
    block = options.block_size
    k_blocks = (rows + block - 1) // block
    blob = (block + 1) // 2
    if k_blocks * block != rows:
        weight = np.pad(weight, ((0, k_blocks * block - rows), (0, 0)), "constant")
    packed = np.zeros((cols, k_blocks, blob), dtype="uint8")
    zero_point = np.zeros((cols, (k_blocks + 1) // 2), dtype="uint8")
    scales = np.zeros((cols, k_blocks), dtype=weight.dtype)
    quantize_matmul_4bits(
        packed,
        np.ascontiguousarray(weight),
        scales,
        zero_point,
        block,
        cols,
        rows,
        options.symmetric,
    )
    return packed, scales, zero_point


def _matmul_nbits(
    node: onnx.NodeProto, weight_tensor: TensorProto, weight: np.ndarray, options: Int4Options
) -> tuple[onnx.NodeProto, list[TensorProto]]:
    """The MatMulNBits node and its new initializers for a MatMul (``quantize_matmul``)."""
    packed, scales, zero_points = _pack(weight, options)
    rows, cols = weight.shape
    b_quant = _tensor(packed, weight_tensor.name + "_Q4")
    scales_tensor = _tensor(scales, weight_tensor.name + "_scales")
    names = [node.input[0], b_quant.name, scales_tensor.name]
    fresh = [b_quant, scales_tensor]
    if not options.symmetric:
        zp_tensor = numpy_helper.from_array(zero_points, weight_tensor.name + "_zero_points")
        names.append(zp_tensor.name)
        fresh.append(zp_tensor)
    kwargs: dict[str, object] = {"K": rows, "N": cols, "bits": 4, "block_size": options.block_size}
    if options.accuracy_level:
        kwargs["accuracy_level"] = options.accuracy_level
    return helper.make_node(
        "MatMulNBits",
        inputs=names,
        outputs=[node.output[0]],
        name=node.name + "_Q4" if node.name else "",
        domain="com.microsoft",
        **kwargs,  # type: ignore[arg-type]
    ), fresh


def _gather_block_quantized(
    node: onnx.NodeProto,
    weight_tensor: TensorProto,
    weight: np.ndarray,
    options: Int4Options,
) -> tuple[onnx.NodeProto, list[TensorProto]]:
    """The GatherBlockQuantized node and its new initializers for a Gather of a constant
    table (``quantize_gather``: the same numpy blocks, the same tensor constructors)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantizer

    qtype = TensorProto.INT4 if options.symmetric else TensorProto.UINT4
    data, scales, zero_points = DefaultWeightOnlyQuantizer.quantize_ndarray(
        weight, GATHER_QUANT_AXIS, options.block_size, options.symmetric
    )
    quantized = helper.make_tensor(
        weight_tensor.name + "_Q4", qtype, weight.shape, data.tobytes(), True
    )
    scales_tensor = numpy_helper.from_array(scales, weight_tensor.name + "_scales")
    names = [quantized.name, node.input[1], scales_tensor.name]
    fresh = [quantized, scales_tensor]
    if not options.symmetric:
        assert zero_points is not None
        zp_tensor = helper.make_tensor(
            weight_tensor.name + "_zero_points", qtype, scales.shape, zero_points.tobytes(), True
        )
        names.append(zp_tensor.name)
        fresh.append(zp_tensor)
    gather_axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    return helper.make_node(
        "GatherBlockQuantized",
        inputs=names,
        outputs=[node.output[0]],
        name=node.name + "_Q4" if node.name else "",
        domain="com.microsoft",
        gather_axis=gather_axis,
        quantize_axis=GATHER_QUANT_AXIS,
        block_size=options.block_size,
    ), fresh


def _tensor(array: np.ndarray, name: str) -> TensorProto:
    """A tensor as onnxruntime's quantizer serialises its new initializers (onnx_ir)."""
    import onnx_ir as ir

    return ir.serde.serialize_tensor(ir.Tensor(array, name=name))


def quantize_int4_streamed(
    source: Path, output: Path, options: Int4Options, progress: ProgressFn | None = None
) -> list[str]:
    """Write ``source`` quantized to 4 bits (MatMulNBits, GatherBlockQuantized when
    ``options.gather``) as ``output``; returns the file names
    written (the model, and its ``.data`` file when the weights are kept external: when the
    source's were, or when they are too big for one protobuf).

    Raises
    ------
    NotStreamableError
        When :func:`streamable` says the model needs onnxruntime's own quantizer (nothing is
        written).
    """
    model = onnx.load(str(source), load_external_data=False)
    why = streamable(model, options)
    if why:
        raise NotStreamableError(why)
    graph = model.graph
    reader = _WeightReader(source.parent)
    external = any(t.data_location == TensorProto.EXTERNAL for t in graph.initializer)
    initializers, chosen = _weights_to_pack(graph, options)
    big = (
        sum(int(np.prod(initializers[_weight_input(graph.node[i])].dims)) for i in chosen) * 4
        > EXTERNAL_ABOVE
    )
    writer = _DataWriter(output.with_name(output.name + ".data")) if external or big else None

    # As MatMulNBitsQuantizer.process: the contrib domain first, then each node in order.
    for opset in model.opset_import:
        if opset.domain == "com.microsoft":
            opset.version = 1
            break
    else:
        model.opset_import.extend([helper.make_opsetid("com.microsoft", 1)])
    if options.gather:
        # As onnxruntime does for int4 tables: the int4 type needs opset 21 and IR 10; it
        # raises the numbers without converting (the result's proof run says if that holds).
        for opset in model.opset_import:
            if opset.domain in ("", "ai.onnx") and opset.version < INT4_TYPE_OPSET:
                opset.version = INT4_TYPE_OPSET
        model.ir_version = max(model.ir_version, INT4_TYPE_IR)
    inputs_by_name = {value.name: value for value in graph.input}
    new_nodes: list[onnx.NodeProto] = []
    added: list[TensorProto] = []
    chosen_set = set(chosen)
    done = 0
    try:
        for i, node in enumerate(graph.node):
            if i not in chosen_set:
                new_nodes.append(node)
                continue
            weight_tensor = initializers[_weight_input(node)]
            if weight_tensor.name in inputs_by_name:  # a weight also listed as a graph input
                graph.input.remove(inputs_by_name.pop(weight_tensor.name))
            make = _gather_block_quantized if node.op_type == "Gather" else _matmul_nbits
            replacement, fresh = make(node, weight_tensor, reader.array(weight_tensor), options)
            new_nodes.append(replacement)
            if writer is not None:  # written now: memory holds one layer's result at a time
                fresh = [writer.put(tensor, tensor.raw_data) for tensor in fresh]
            added += fresh
            done += 1
            if progress is not None:
                progress(done, len(chosen), node.name)
        graph.ClearField("node")
        graph.node.extend(new_nodes)
        _keep_used(graph, added, reader, writer)
    finally:
        if writer is not None:
            writer.close()
    with atomic_target(output) as tmp:
        onnx.save(model, str(tmp))
    return [output.name] + ([writer.path.name] if writer is not None else [])


def _keep_used(
    graph: onnx.GraphProto,
    added: list[TensorProto],
    reader: _WeightReader,
    writer: _DataWriter | None,
) -> None:
    """The initializers the graph still reads, in onnxruntime's order (the original ones, then
    the new), each name once, as ``ONNXModel.clean_initializers`` leaves them; their graph
    inputs go with the dropped ones. Kept external weights are copied into the new data file."""
    wanted = {t for node in graph.node for t in node.input if t}
    wanted.update(value.name for value in graph.output if value.name)
    wanted.difference_update(t for node in graph.node for t in node.output)
    kept: list[TensorProto] = []
    dropped: set[str] = set()
    originals = len(graph.initializer)
    for k, tensor in enumerate([*graph.initializer, *added]):
        if tensor.name in wanted:
            wanted.discard(tensor.name)
            if (
                writer is not None
                and k < originals
                and tensor.data_location == TensorProto.EXTERNAL
            ):
                writer.put(tensor, reader.raw(tensor))  # the new ones were written as made
            kept.append(tensor)
        else:
            dropped.add(tensor.name)
    graph.ClearField("initializer")
    graph.initializer.extend(kept)
    remaining = [value for value in graph.input if value.name not in dropped]
    if len(remaining) != len(graph.input):
        graph.ClearField("input")
        graph.input.extend(remaining)
