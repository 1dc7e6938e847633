"""What differs between two models: float vs its quantized run, original vs converted, v1 vs v2.

Nodes are matched by name first, then — for renamed or unnamed nodes — by op type and the
tensors they read and write. Each side's leftovers are *inserted* (only in B: the Q/DQ pairs of
a quantization, a Cast of a conversion) or *removed* (only in A: nodes a fusion replaced);
matched nodes are *changed* when their op type, attributes or the weights they read differ.
Graph inputs/outputs, opsets and weights are compared too. Pure Python + onnx; the models are
read with the project's loader and their weights with its reader, so the external-data policy
holds here as everywhere.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.model.model_io import load_model
from edgestudio.core.model.summary import value_spec
from edgestudio.core.model.weights import read_weight

QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})
# What optimisers and quantizers merge into the layer before them (Conv + Relu, …).
FUSABLE_AFTER = frozenset(
    {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "BatchNormalization"}
)
LAYERS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})


class Change(enum.Enum):
    """How a node or a property of the model differs."""

    INSERTED = "inserted"  # only in B
    REMOVED = "removed"  # only in A
    FUSED = "fused"  # only in A, its work taken over by the node that fed it
    CHANGED = "changed"  # in both, different


@dataclass(frozen=True)
class Difference:
    """One difference: what, where (node names on each side), and in words."""

    change: Change
    kind: str  # "node", "attribute", "weight", "input", "output", "opset"
    text: str
    node_a: str | None = None
    node_b: str | None = None
    op_type: str = ""


@dataclass
class ModelDiff:
    """Every difference between model A and model B, and the node matching behind them."""

    a: str
    b: str
    differences: list[Difference] = field(default_factory=list)
    matched: dict[str, str] = field(default_factory=dict)  # node in A -> node in B

    def counts(self) -> dict[str, int]:
        """How many differences of each change and kind (``"inserted node"``: 12, …)."""
        return dict(Counter(f"{d.change.value} {d.kind}" for d in self.differences))

    def summary(self) -> str:
        """One line: the counts, inserted Q/DQ nodes said as such."""
        if not self.differences:
            return "The models have the same graph, attributes and weights."
        qdq = sum(
            1 for d in self.differences if d.change is Change.INSERTED and d.op_type in QDQ_OPS
        )
        parts = [f"{n} {what}{'s' if n > 1 else ''}" for what, n in self.counts().items()]
        return ", ".join(parts) + (
            f" ({qdq} of the inserted nodes quantize or dequantize)" if qdq else ""
        )

    def node_changes(self, side: str) -> dict[str, Change]:
        """Node name -> how it differs, for the graph of side ``"a"`` or ``"b"``."""
        marks: dict[str, Change] = {}
        for d in self.differences:
            name = d.node_a if side == "a" else d.node_b
            if d.change is Change.FUSED and side == "b":
                continue  # B's node is the one it was fused into: not a difference of its own
            if name is not None and name not in marks:
                marks[name] = d.change
        return marks


def _names(graph: onnx.GraphProto) -> list[str]:
    return [n.name or f"{n.op_type}_{i}" for i, n in enumerate(graph.node)]


def _attributes(node: onnx.NodeProto, opset: int) -> dict[str, str]:
    """The node's attributes, with the operator's defaults filled in: an attribute written out
    at its default value (as onnxruntime's pre-processing does) is no change."""
    values: dict[str, str] = {}
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        for name, attr in schema.attributes.items():
            if attr.default_value.name:  # (unnamed: no default)
                values[name] = str(onnx.helper.get_attribute_value(attr.default_value))
    except onnx.defs.SchemaError:
        pass  # a custom op: only what the node says
    values.update((a.name, str(onnx.helper.get_attribute_value(a))) for a in node.attribute)
    return values


def match_nodes(a: onnx.GraphProto, b: onnx.GraphProto) -> dict[int, int]:
    """Node index in A -> node index in B: same name, else same op and the same tensors."""
    names_b = {name: j for j, name in enumerate(_names(b))}
    matched: dict[int, int] = {}
    taken: set[int] = set()
    for i, name in enumerate(_names(a)):
        j = names_b.get(name)
        if j is not None and a.node[i].op_type == b.node[j].op_type:
            matched[i] = j
            taken.add(j)
    signature: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[int]] = {}
    for j, node in enumerate(b.node):
        if j not in taken:
            key = (node.op_type, tuple(node.input), tuple(node.output))
            signature.setdefault(key, []).append(j)
    for i, node in enumerate(a.node):
        if i in matched:
            continue
        candidates = signature.get((node.op_type, tuple(node.input), tuple(node.output)))
        if candidates:
            matched[i] = candidates.pop(0)
    return matched


def _weights_differ(
    x: onnx.TensorProto, y: onnx.TensorProto, folder_a: Path, folder_b: Path
) -> str | None:
    """Why two weights differ (None when they are equal)."""
    if x.data_type != y.data_type or list(x.dims) != list(y.dims):
        return (
            f"{onnx.helper.tensor_dtype_to_np_dtype(x.data_type)}{list(x.dims)} → "
            f"{onnx.helper.tensor_dtype_to_np_dtype(y.data_type)}{list(y.dims)}"
        )
    va, vb = read_weight(x, folder_a), read_weight(y, folder_b)
    if np.array_equal(va, vb, equal_nan=True):
        return None
    diff = np.abs(va.astype(np.float64) - vb.astype(np.float64))
    return f"values differ (max abs {float(diff.max()):.3g})"


def diff_models(
    path_a: str | Path,
    path_b: str | Path,
    models: tuple[onnx.ModelProto, onnx.ModelProto] | None = None,
) -> ModelDiff:
    """Compare two model files (main graphs); ``models`` are the files already parsed."""
    path_a, path_b = Path(path_a), Path(path_b)
    model_a, model_b = models or (load_model(path_a), load_model(path_b))
    a, b = model_a.graph, model_b.graph
    result = ModelDiff(str(path_a), str(path_b))
    add = result.differences.append

    opsets_a = {o.domain or "ai.onnx": o.version for o in model_a.opset_import}
    opsets_b = {o.domain or "ai.onnx": o.version for o in model_b.opset_import}
    used = {n.domain or "ai.onnx" for n in [*a.node, *b.node]}
    for domain in sorted((set(opsets_a) | set(opsets_b)) & used):  # imports nothing uses: noise
        if opsets_a.get(domain) != opsets_b.get(domain):
            add(
                Difference(
                    Change.CHANGED,
                    "opset",
                    f"{domain}: {opsets_a.get(domain, '—')} → {opsets_b.get(domain, '—')}",
                )
            )
    inits_a = {t.name for t in a.initializer}
    inits_b = {t.name for t in b.initializer}
    for side, values_a, values_b in (
        (
            "input",
            [v for v in a.input if v.name not in inits_a],
            [v for v in b.input if v.name not in inits_b],
        ),
        ("output", list(a.output), list(b.output)),
    ):
        specs_a = {v.name: value_spec(v) for v in values_a}
        specs_b = {v.name: value_spec(v) for v in values_b}
        for name in sorted(specs_a.keys() - specs_b.keys()):
            add(
                Difference(
                    Change.REMOVED, side, f"{side} {name} {specs_a[name].shape_text()}", name
                )
            )  # the graph draws an input or output as a node of its name
        for name in sorted(specs_b.keys() - specs_a.keys()):
            add(
                Difference(
                    Change.INSERTED, side, f"{side} {name} {specs_b[name].shape_text()}", None, name
                )
            )
        for name in sorted(specs_a.keys() & specs_b.keys()):
            ta = f"{specs_a[name].dtype} {specs_a[name].shape_text()}"
            tb = f"{specs_b[name].dtype} {specs_b[name].shape_text()}"
            if ta != tb:
                add(Difference(Change.CHANGED, side, f"{side} {name}: {ta} → {tb}", name, name))

    matched = match_nodes(a, b)
    names_a, names_b = _names(a), _names(b)
    result.matched = {names_a[i]: names_b[j] for i, j in matched.items()}
    weights_a = {t.name: t for t in a.initializer}
    weights_b = {t.name: t for t in b.initializer}
    compared: set[str] = set()
    dequantizes: dict[int, str] = {}  # inserted DequantizeLinear -> the weight it restores
    absorbed: set[int] = set()  # inserted Constants that only feed a changed node's new input
    producers_a = {t: k for k, n in enumerate(a.node) for t in n.output}
    producers_b = {t: k for k, n in enumerate(b.node) for t in n.output}
    kept_b = set(matched.values())
    for i, j in sorted(matched.items()):
        na, nb = a.node[i], b.node[j]
        attrs_a = _attributes(na, opsets_a.get(na.domain or "ai.onnx", 1))
        attrs_b = _attributes(nb, opsets_b.get(nb.domain or "ai.onnx", 1))
        for key in sorted(attrs_a.keys() | attrs_b.keys()):
            if attrs_a.get(key) != attrs_b.get(key):
                add(
                    Difference(
                        Change.CHANGED,
                        "attribute",
                        f"{names_a[i]}: {key} {attrs_a.get(key, '—')} → {attrs_b.get(key, '—')}",
                        names_a[i],
                        names_b[j],
                        na.op_type,
                    )
                )
        for extra in list(nb.input)[len(na.input) :]:  # e.g. an attribute become an input
            made_by = producers_b.get(extra)
            if (
                made_by is not None
                and made_by not in kept_b
                and b.node[made_by].op_type == "Constant"
            ):
                absorbed.add(made_by)  # the new input's Constant is part of this change
            add(
                Difference(
                    Change.CHANGED,
                    "input",
                    f"{names_a[i]}: new input {extra}"
                    + (" (a Constant)" if made_by in absorbed else ""),
                    names_a[i],
                    names_b[j],
                    na.op_type,
                )
            )
        for ta, tb in zip(na.input, nb.input, strict=False):
            if ta in weights_a and tb in weights_b and ta not in compared:
                compared.add(ta)
                why = _weights_differ(weights_a[ta], weights_b[tb], path_a.parent, path_b.parent)
                if why:
                    add(
                        Difference(
                            Change.CHANGED,
                            "weight",
                            f"{names_a[i]}: weight {ta} {why}",
                            names_a[i],
                            names_b[j],
                            na.op_type,
                        )
                    )
            elif ta in weights_a and tb not in weights_b and tb in producers_b:
                made_by = producers_b[tb]
                if b.node[made_by].op_type == "DequantizeLinear":
                    # part of the inserted Q/DQ pair: said there, not as a change of its own
                    dequantizes[made_by] = f"weight {ta} of {names_a[i]}"
                    continue
                add(
                    Difference(
                        Change.CHANGED,
                        "weight",
                        f"{names_a[i]}: weight {ta} computed "
                        f"by {b.node[made_by].op_type} {names_b[made_by]}",
                        names_a[i],
                        names_b[j],
                        na.op_type,
                    )
                )
    folded = 0  # Constant nodes gone: stored as weights, or folded into what used them
    for i, node in enumerate(a.node):
        if i in matched:
            continue
        if node.op_type == "Constant":  # no data flows through it: one line for them all
            folded += 1
            continue
        data = [t for t in node.input if t and t not in weights_a]
        feeder = producers_a.get(data[0]) if len(data) == 1 else None
        if (
            feeder is not None
            and feeder in matched
            and node.op_type in FUSABLE_AFTER
            and a.node[feeder].op_type in LAYERS
        ):  # e.g. a Relu merged into its Conv
            add(
                Difference(
                    Change.FUSED,
                    "node",
                    f"{node.op_type} {names_a[i]} fused into "
                    f"{a.node[feeder].op_type} {names_b[matched[feeder]]}",
                    names_a[i],
                    names_b[matched[feeder]],
                    node.op_type,
                )
            )
        else:
            add(
                Difference(
                    Change.REMOVED,
                    "node",
                    f"{node.op_type} {names_a[i]}",
                    names_a[i],
                    None,
                    node.op_type,
                )
            )
    if folded:
        add(
            Difference(
                Change.CHANGED,
                "constants",
                f"{folded} Constant node(s) gone: stored "
                "as weights or folded into what used them (constant folding)",
            )
        )
    for j, node in enumerate(b.node):
        if j not in kept_b and j not in absorbed:
            what = f" (stores {dequantizes[j]} quantized)" if j in dequantizes else ""
            add(
                Difference(
                    Change.INSERTED,
                    "node",
                    f"{node.op_type} {names_b[j]}{what}",
                    None,
                    names_b[j],
                    node.op_type,
                )
            )
    return result
