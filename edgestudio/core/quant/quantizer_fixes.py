"""Known failures of onnxruntime's quantizer on real models, and the retry that gets past each.

Each was seen on a real pretrained model; each retry is one onnxruntime option or one
exact graph edit, and the job says which it used:

- per-channel ``ValueError: The truth value of an array … is ambiguous`` in
  ``_adjust_weight_scale_for_int32_bias`` (a Gemm bias stored as ``[1, N]``): onnxruntime's own
  ``QDQDisableWeightAdjustForInt32Bias``;
- ``Unable to find data type for weight_name=…`` (skl2onnx pipelines, operators of another
  domain): onnxruntime's own ``DefaultTensorType`` = float;
- numpy's ``operands could not be broadcast together`` under per-channel: per-tensor weights;
- float16 weights behind a Cast (Keras mixed-precision exports: ``Expected … to be an
  initializer``) never reach the quantizer: :func:`fold_weight_casts` stores them as float32
  first (exact: every float16 value is a float32 value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import onnx

from edgestudio.core.model.opsets import iter_nodes

_FLOAT_TYPES = {
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.BFLOAT16: None,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT: np.float32,
}


def fold_weight_casts(model: onnx.ModelProto) -> list[str]:
    """Replace every Cast of a stored float weight (to float32) by the cast weight itself, in
    place; returns the Casts' names. The quantizer quantizes initializers only: a float16
    weight cast at run time stays float (QDQ) or fails it (dynamic, QOperator)."""
    graph = model.graph
    stored = {t.name: t for t in graph.initializer}
    inputs = {v.name for v in graph.input}
    folded, kept, sources = [], [], set()
    for node in graph.node:
        source = node.input[0] if node.op_type == "Cast" and node.input else ""
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        tensor = stored.get(source)
        if (
            tensor is None
            or source in inputs
            or to != onnx.TensorProto.FLOAT
            or _FLOAT_TYPES.get(tensor.data_type) is None
        ):
            kept.append(node)
            continue
        array = onnx.numpy_helper.to_array(tensor).astype(np.float32)
        graph.initializer.append(onnx.numpy_helper.from_array(array, node.output[0]))
        folded.append(node.name or node.output[0])
        sources.add(source)
    if folded:
        del graph.node[:]
        graph.node.extend(kept)
        still_read = {t for n in iter_nodes(graph) for t in n.input} | {
            o.name for o in graph.output
        }
        unread = [t for t in graph.initializer if t.name in sources - still_read]
        for t in unread:
            graph.initializer.remove(t)
    return folded


@dataclass(frozen=True)
class QuantizerFailure:
    """What onnxruntime's quantizer raised: ``cause`` ("ValueError: …") and the innermost of
    its own functions it was in (``where``)."""

    cause: str
    where: str = ""
    node: str = ""  # the node it was quantizing, when its frames say

    @classmethod
    def of(cls, exc: BaseException) -> QuantizerFailure:
        """The failure ``exc`` describes, with the quantizer function it came from and the
        node that function was quantizing (read from its frames: an operator quantizer holds
        its node as ``self.node``)."""
        where, node = "", ""
        tb: TracebackType | None = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if "onnxruntime" in code.co_filename:
                where = f"{Path(code.co_filename).stem}.{code.co_name}"
                node = _node_in(tb.tb_frame.f_locals) or node
            tb = tb.tb_next
        return cls(f"{type(exc).__name__}: {exc}", where, node)


def _node_in(frame_locals: dict[str, Any]) -> str:
    """The name of the node a quantizer frame works on (``self.node`` or ``node``)."""
    for candidate in (getattr(frame_locals.get("self"), "node", None), frame_locals.get("node")):
        if isinstance(candidate, onnx.NodeProto) and candidate.name:
            return candidate.name
    return ""


@dataclass(frozen=True)
class Workaround:
    """A retry: recipe field changes and onnxruntime extra options, and the note that says so."""

    key: str  # each is tried once
    note: str
    changes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()  # nodes to keep in float


# How many nodes the quantizer failed on may be kept in float, one retry each.
MAX_NODES_KEPT = 4


_NO_TYPE = re.compile(r"Unable to find data type for weight_name='([^']*)'")


def workaround_for(
    failure: QuantizerFailure, per_channel: bool, tried: set[str]
) -> Workaround | None:
    """The retry that gets past ``failure`` (one not in ``tried``), or None."""
    cause = failure.cause if len(failure.cause) < 200 else failure.cause[:200] + "…"
    found: Workaround | None = None
    if "int32_bias" in failure.where or "truth value of an array" in failure.cause:
        found = Workaround(
            "bias-adjust",
            "onnxruntime's quantizer failed adjusting weight scales so that "
            f"int32 biases fit ({cause}); quantized without that adjustment "
            "(QDQDisableWeightAdjustForInt32Bias), which onnxruntime offers for this.",
            extra={"QDQDisableWeightAdjustForInt32Bias": True},
        )
    elif match := _NO_TYPE.search(failure.cause):
        found = Workaround(
            "default-type",
            f"onnxruntime's shape inference gave no type for "
            f"'{match.group(1)}' (an operator of another domain computes it); quantized with "
            "float as its type (DefaultTensorType), which onnxruntime offers for this.",
            extra={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    elif per_channel and "could not be broadcast" in failure.cause:
        found = Workaround(
            "per-tensor",
            f"onnxruntime's per-channel quantizer failed ({cause}, in "
            f"{failure.where or 'its quantizer'}); the weights were quantized per-tensor "
            "instead. The recipe's --per-channel was not used.",
            changes={"per_channel": False},
        )
    if (
        (found is None or found.key in tried)
        and failure.node
        and len([t for t in tried if t.startswith("keep ")]) < MAX_NODES_KEPT
    ):
        found = Workaround(
            f"keep {failure.node}",
            f"onnxruntime's quantizer failed on node "
            f"'{failure.node}' ({cause}, in {failure.where}): that node was kept in float, "
            "the rest quantized.",
            exclude=(failure.node,),
        )
    return found if found is not None and found.key not in tried else None
