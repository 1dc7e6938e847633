"""Reading a model file for display: protobuf parse only, weights left on disk.

``onnx.load(..., load_external_data=False)`` is fast and safe enough to run in the app process
(docs/ARCHITECTURE.md); everything that enters heavier native code (checker, shape inference,
onnxruntime) runs in a job worker instead. Every failure becomes a :class:`ModelLoadError` in a
user's words.
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError, Message
from onnx import TensorProto

from edgestudio.core.errors import ModelLoadError
from edgestudio.core.model.graph_ir import SUBGRAPH_OPS, NodeTable
from edgestudio.core.model.opsets import iter_nodes

PROTOBUF_LIMIT = 2**31  # a single protobuf message cannot exceed 2 GiB

# Magic bytes of formats people mistake for ONNX, with what to tell them.
_FOREIGN_FORMATS: list[tuple[int, bytes, str]] = [
    (
        0,
        b"PK\x03\x04",
        "a ZIP archive (PyTorch .pt/.pt2 files are ZIP archives: export it to ONNX "
        "first with Tools › Export from PyTorch or `edgestudio export`)",
    ),
    (0, b"\x89HDF", "an HDF5 file (a Keras model?): convert it to ONNX first, e.g. with tf2onnx"),
    (4, b"TFL3", "a TensorFlow Lite model: convert it to ONNX first, e.g. with tf2onnx"),
    (0, b"\x80\x02", "a Python pickle (a legacy PyTorch checkpoint?): export it to ONNX first"),
    (0, b"\x89PNG", "a PNG image"),
    (0, b"\xff\xd8\xff", "a JPEG image"),
    (0, b"%PDF", "a PDF document"),
]


def _foreign_format(head: bytes) -> str | None:
    for offset, magic, what in _FOREIGN_FORMATS:
        if head[offset : offset + len(magic)] == magic:
            return what
    try:
        text = head[:512].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text and all(c.isprintable() or c in "\r\n\t" for c in text):
        return "a text file"
    return None


_TENSOR_MESSAGE = "{name} holds an ONNX tensor (like input_0.pb), not a model."


def _looks_like_tensor(data: bytes) -> bool:
    tensor = TensorProto()
    try:
        tensor.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError):
        return False
    return (
        bool(tensor.dims)
        and tensor.data_type != 0
        and (bool(tensor.raw_data) or len(tensor.float_data) > 0 or len(tensor.int64_data) > 0)
    )


def load_model(path: str | Path, check_text: bool = True) -> onnx.ModelProto:
    """Parse ``path`` as an ONNX model without loading external weights (``check_text``
    False: the caller runs :func:`check_names` itself, with the nodes it reads anyway).

    Raises
    ------
    ModelLoadError
        With a message that says what is wrong with the file.
    """
    path = Path(path)
    if not path.exists():
        raise ModelLoadError(f"{path} does not exist.", "missing")
    if path.is_dir():
        raise ModelLoadError(f"{path} is a folder, not a model file.", "not_a_file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ModelLoadError(f"{path.name} cannot be read: {exc.strerror}.", "unreadable") from exc
    if size == 0:
        raise ModelLoadError(f"{path.name} is empty (0 bytes): it is not an ONNX model.", "empty")
    if size >= PROTOBUF_LIMIT:
        raise ModelLoadError(
            f"{path.name} is {size / 2**30:.1f} GiB, over the 2 GiB limit of a single ONNX "
            "(protobuf) file. Models this large must keep their weights in external data files; "
            "re-export with external data (e.g. onnx.save(..., save_as_external_data=True)).",
            "too_large",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelLoadError(f"{path.name} cannot be read: {exc.strerror}.", "unreadable") from exc

    foreign = _foreign_format(data[:512])
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as exc:
        if foreign:
            raise ModelLoadError(
                f"{path.name} is not an ONNX model: it looks like {foreign}.", "foreign_format"
            ) from exc
        if _looks_like_tensor(data):  # input_0.pb files from the ONNX test layout
            raise ModelLoadError(_TENSOR_MESSAGE.format(name=path.name), "not_a_model") from exc
        raise ModelLoadError(
            f"{path.name} could not be read as an ONNX model: the data is corrupt or truncated "
            "(it is not a valid ONNX protobuf).",
            "not_protobuf",
        ) from exc

    if not model.HasField("graph"):
        if foreign:
            raise ModelLoadError(
                f"{path.name} is not an ONNX model: it looks like {foreign}.", "foreign_format"
            )
        if _looks_like_tensor(data):
            raise ModelLoadError(_TENSOR_MESSAGE.format(name=path.name), "not_a_model")
        raise ModelLoadError(
            f"{path.name} is not an ONNX model: it parsed, but holds no graph.", "not_a_model"
        )
    if model.ir_version <= 0:
        raise ModelLoadError(
            f"{path.name} is not a valid ONNX model: it has no IR version.", "not_a_model"
        )
    if check_text:
        check_names(model, path.name)
    return model


def check_names(model: onnx.ModelProto, name: str, table: NodeTable | None = None) -> None:
    """Refuse names that are not UTF-8 text (protobuf then hands out bytes, not str), saying
    which; ``table``: the main graph's nodes, when already read (reading 50k nodes' strings
    out of protobuf costs 0.3 s, out of the table 10 ms)."""
    graph = model.graph

    def refuse(what: str) -> None:
        raise ModelLoadError(
            f"{name} has a {what} that is not valid UTF-8 text: the file is corrupt.", "bad_text"
        )

    if not isinstance(graph.name, str):
        refuse("graph name")
    for what, values in (
        ("tensor name", [*graph.input, *graph.output, *graph.value_info]),
        ("weight name", graph.initializer),
    ):
        if not all(isinstance(v.name, str) for v in values):
            refuse(what)
    if not all(isinstance(o.domain, str) for o in model.opset_import):
        refuse("opset domain")
    # Checked in bulk, the type of every string gathered in C; the node is named only once
    # one is found.
    table = table or NodeTable.of(graph)
    nested = [  # the nodes of Loop/If/Scan bodies
        n
        for i, op in enumerate(table.ops)
        if op in SUBGRAPH_OPS
        for a in graph.node[i].attribute
        for body in [*([a.g] if a.HasField("g") else []), *a.graphs]
        for n in iter_nodes(body)
    ]
    strings = chain(
        table.ops,
        table.names,
        chain.from_iterable(table.inputs),
        chain.from_iterable(table.outputs),
        (n.name for n in nested),
        (n.op_type for n in nested),
        chain.from_iterable(n.input for n in nested),
        chain.from_iterable(n.output for n in nested),
        (n.domain for n in [*graph.node, *nested]),
    )
    if set(map(type, strings)) <= {str}:
        return
    for i, node in enumerate(iter_nodes(graph)):
        for what, value in (
            ("name", node.name),
            ("op type", node.op_type),
            ("domain", node.domain),
        ):
            if not isinstance(value, str):
                refuse(f"node #{i} {what}")
        if not all(isinstance(t, str) for t in node.input) or not all(
            isinstance(t, str) for t in node.output
        ):
            refuse(f"node #{i} tensor name")


# A node whose attributes hold more values than this keeps data in them (a tree ensemble's
# 2.5 million node ids), not options; of such a node, attributes longer than OPTION_ATTRIBUTE
# are its data. Nothing that reads a model's structure needs them.
LARGE_ATTRIBUTE = 100_000
OPTION_ATTRIBUTE = 1_000


# Marks a copy made by :func:`structure_only` (in memory only: such a copy is never saved or
# given to onnxruntime, which would miss its data).
STRUCTURE_ONLY_KEY = "edgestudio.structure_only"


def is_structure_only(model: onnx.ModelProto) -> bool:
    """True for a copy made by :func:`structure_only`: sessions open from the file instead."""
    return any(p.key == STRUCTURE_ONLY_KEY for p in model.metadata_props)


def _attribute_size(attr: onnx.AttributeProto) -> int:
    return len(attr.ints) + len(attr.floats) + len(attr.strings)


def has_large_attributes(model: onnx.ModelProto) -> bool:
    """True when some top-level node keeps data (over :data:`LARGE_ATTRIBUTE` values) in its
    attributes, as tree ensembles and other ai.onnx.ml operators do."""
    return any(_holds_data(n) for n in model.graph.node)


def _holds_data(node: onnx.NodeProto) -> bool:
    return sum(_attribute_size(a) for a in node.attribute) > LARGE_ATTRIBUTE


def structure_only(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` without its large attributes (see :func:`has_large_attributes`).

    Parsed, a 200 MB tree ensemble takes 1.4 GB and its onnxruntime session 2.4 GB more: a job
    that needs the structure (inputs, outputs, which node reads what) and a session keeps this
    copy instead, so the two never add up. Every other field is copied as it is; the copy is
    marked (:func:`is_structure_only`).
    """
    skeleton = onnx.ModelProto()
    _copy_fields(model, skeleton, skip="graph")
    skeleton.metadata_props.add(key=STRUCTURE_ONLY_KEY, value="1")
    graph, source = skeleton.graph, model.graph
    _copy_fields(source, graph, skip="node")
    for node in source.node:
        copy = graph.node.add()
        _copy_fields(node, copy, skip="attribute")
        copy.attribute.extend(
            a
            for a in node.attribute
            if not _holds_data(node) or _attribute_size(a) <= OPTION_ATTRIBUTE
        )
    return skeleton


def _copy_fields(source: Message, target: Message, skip: str) -> None:
    """Copy every set field of ``source`` into ``target`` except ``skip``."""
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)
