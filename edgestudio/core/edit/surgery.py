"""Model surgery on an ``onnx.ModelProto``, in place: extract, rename, add outputs, bypass.

Each edit says what is wrong in words (an :class:`EditError`) before touching anything, so a
refused edit leaves the model as it was. The edit job (:mod:`edgestudio.core.edit.edit_job`)
checks the result against the original, tensor by tensor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

import onnx

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.model.opsets import iter_nodes

# Ops that hand their (first) input on unchanged: removable without asking about shapes.
PASS_THROUGH = frozenset({"Identity", "Dropout"})


class EditError(EdgeStudioError):
    """An edit that does not fit the model (a name that is not there, a node that is not
    one-in one-out, shapes that differ)."""


def tensor_names(model: onnx.ModelProto) -> set[str]:
    """Every tensor name of the main graph: inputs, initializers, node outputs."""
    graph = model.graph
    return (
        {v.name for v in graph.input}
        | {t.name for t in graph.initializer}
        | {o for n in graph.node for o in n.output if o}
    )


def _require(model: onnx.ModelProto, names: Iterable[str], what: str) -> None:
    known = tensor_names(model)
    missing = [n for n in names if n not in known]
    if missing:
        raise EditError(
            f"No tensor called {', '.join(repr(m) for m in missing)} in the model "
            f"({what}); names are as the graph view's search finds them."
        )


def extract(model: onnx.ModelProto, inputs: list[str], outputs: list[str]) -> onnx.ModelProto:
    """The subgraph that computes ``outputs`` from ``inputs`` (onnx's own Extractor): the
    nodes between them, the weights they read, declared types and shapes kept."""
    _require(model, [*inputs, *outputs], "--inputs / --outputs")
    from onnx.utils import Extractor

    # the Extractor types the new inputs and outputs from the model's value infos (the
    # tensors inference could not type are named below)
    with contextlib.suppress(Exception):
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    typed = {v.name for v in (*model.graph.value_info, *model.graph.input, *model.graph.output)} | {
        t.name for t in model.graph.initializer
    }
    untyped = [t for t in [*inputs, *outputs] if t not in typed]
    if untyped:
        raise EditError(
            f"onnx's shape inference cannot tell the type of "
            f"{', '.join(repr(t) for t in untyped)}, so the part cannot declare "
            "it; cut at a neighbouring tensor."
        )
    try:
        extractor = Extractor(model)
        return extractor.extract_model(inputs, outputs)
    except Exception as exc:  # onnx raises several classes for a cut that does not close
        raise EditError(
            f"The subgraph from {', '.join(inputs)} to {', '.join(outputs)} cannot "
            f"be cut out: {exc}"
        ) from exc


def rename(model: onnx.ModelProto, renames: Mapping[str, str]) -> None:
    """Rename graph inputs and outputs (``{old: new}``) everywhere they are read or written,
    subgraphs included."""
    graph = model.graph
    io = {v.name for v in (*graph.input, *graph.output)}
    unknown = [old for old in renames if old not in io]
    if unknown:
        raise EditError(
            f"{', '.join(repr(u) for u in unknown)} is not a graph input or output "
            f"(they are: {', '.join(sorted(io))})."
        )
    taken = tensor_names(model) - set(renames)
    clashes = [new for new in renames.values() if new in taken]
    if clashes or len(set(renames.values())) != len(renames):
        raise EditError(
            f"The new name {', '.join(repr(c) for c in clashes) or 'given twice'} is "
            "already a tensor of the model."
        )
    _rename_tensors(model, renames)


def _rename_tensors(model: onnx.ModelProto, renames: Mapping[str, str]) -> None:
    graph = model.graph
    for value in (*graph.input, *graph.output, *graph.value_info):
        value.name = renames.get(value.name, value.name)
    for tensor in graph.initializer:
        tensor.name = renames.get(tensor.name, tensor.name)
    for node in iter_nodes(graph):
        for i, name in enumerate(node.input):
            node.input[i] = renames.get(name, name)
        for i, name in enumerate(node.output):
            node.output[i] = renames.get(name, name)


def add_outputs(model: onnx.ModelProto, tensors: list[str]) -> None:
    """Make intermediate ``tensors`` graph outputs (typed as shape inference finds them)."""
    _require(model, tensors, "--add-output")
    present = {o.name for o in model.graph.output}
    known = {v.name: v for v in (*model.graph.value_info, *model.graph.input)}
    if any(t not in known for t in tensors):
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
            known.update({v.name: v for v in inferred.graph.value_info})
        except Exception:  # typed as far as inference gets; the rest by name only
            pass
    for t in tensors:
        if t in present:
            continue
        value = onnx.ValueInfoProto()
        if t in known:
            value.CopyFrom(known[t])
        else:
            value.name = t
        model.graph.output.append(value)


def bypass(model: onnx.ModelProto, node_name: str) -> str:
    """Remove node ``node_name``, wiring its (first) input to where its output went; returns
    what was done, in words. A pass-through op (Identity, Dropout, a Cast to the type it
    already has) goes at once; any other one-in one-out node only where inference shows its
    input and output of the same type and shape."""
    graph = model.graph
    node = next((n for n in graph.node if n.name == node_name), None)
    if node is None:
        raise EditError(f"No node called '{node_name}' in the main graph.")
    data = [t for t in node.input if t]
    outputs = [o for o in node.output if o]
    if node.op_type == "Dropout":
        outputs = outputs[:1]  # its mask output is optional; a reader of it blocks below
    if not data or len(outputs) != 1:
        raise EditError(
            f"{node.op_type} '{node_name}' is not one-in one-out: it has "
            f"{len(data)} input(s) and {len(outputs)} output(s)."
        )
    source, target = data[0], outputs[0]
    if node.op_type not in PASS_THROUGH and not _same_type_and_shape(model, source, target):
        raise EditError(
            f"{node.op_type} '{node_name}' changes what flows through it (its input "
            f"'{source}' and output '{target}' differ in type or shape, or inference "
            "cannot tell): bypassing it would change the model's meaning."
        )
    readers = [n for n in iter_nodes(graph) if target in n.input and n is not node]
    if len(node.output) > 1 and any(
        o and o != target and any(o in n.input for n in iter_nodes(graph)) for o in node.output[1:]
    ):
        raise EditError(f"{node.op_type} '{node_name}' has a second output that other nodes read.")
    graph_outputs = {o.name for o in graph.output}
    graph_inputs = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    if target in graph_outputs:
        if source in graph_inputs or source in graph_outputs:
            raise EditError(
                f"'{node_name}' passes a graph input (or output) straight to the "
                f"graph output '{target}': removing it would leave the output "
                "without a node."
            )
        graph.node.remove(node)
        _rename_tensors(model, {source: target})  # the producer writes the output itself
        return f"{node.op_type} '{node_name}' removed; its input now is the output '{target}'"
    for reader in readers:
        for i, name in enumerate(reader.input):
            if name == target:
                reader.input[i] = source
    graph.node.remove(node)
    return f"{node.op_type} '{node_name}' removed; its {len(readers)} reader(s) read '{source}'"


def _same_type_and_shape(model: onnx.ModelProto, a: str, b: str) -> bool:
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        return False
    values = {
        v.name: v.type
        for v in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output)
    }
    return (
        a in values
        and b in values
        and values[a] == values[b]
        and values[a].tensor_type.HasField("shape")
    )
