"""Indexed stand-ins for onnxruntime's quadratic quantization helpers, from outside ORT.

``onnxruntime.quantization`` (1.32) scans the whole graph for every tensor or node it touches:
name lookups walk every initializer (``find_by_name``, ``ONNXModel.get_initializer``), input
rewiring walks every node per quantized tensor (``replace_input_of_all_nodes``), producer and
consumer maps are rebuilt per call, and calibration inserts two nodes per tensor by scanning for
the first consumer. On a few thousand nodes that is minutes; here each becomes a lookup in an
index that is checked on every use, with ORT's exact semantics (first occurrence, graph order),
so the quantized model is byte-identical (tests compare the serialised models).

:func:`accelerated` patches them for the duration of one quantization and restores them after.
It refuses — and the job runs stock ORT, saying why — on any onnxruntime version other than the
one this was written and tested against, or when a replaced function's source changed.
``EDGESTUDIO_QUANT_CROSSCHECK=1`` checks every indexed answer against ORT's own scan.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import onnx

from edgestudio.core.quant.accel import calibration as quant_calibration
from edgestudio.core.quant.accel import model_steps as quant_model_steps
from edgestudio.core.quant.accel import ort_guard
from edgestudio.core.quant.accel.graph_index import Indexes, MapView, NodeIndex

CROSSCHECK_ENV = "EDGESTUDIO_QUANT_CROSSCHECK"


_TensorProto = onnx.TensorProto
_FLOAT8E4M3FN = onnx.TensorProto.FLOAT8E4M3FN


class CrossCheckError(AssertionError):
    """An indexed answer differed from onnxruntime's own scan (debug mode only)."""


# ----- name lookups ------------------------------------------------------------------------------


# ----- producer / consumer maps ----------------------------------------------------------------


# ----- the stand-ins -----------------------------------------------------------------------------


def _make_standins(
    stock: dict[str, Callable[..., Any]], idx: Indexes
) -> dict[str, Callable[..., Any]]:
    stock_find = stock["quant_utils.find_by_name"]

    def find_by_name(item_name: str, item_list: Any) -> Any:
        # Protobuf fields and ORT's long-lived lists (the quantizer's new nodes) are indexed;
        # short or other sequences are cheap to scan (and may be temporaries).
        if not (hasattr(item_list, "add") or isinstance(item_list, list)) or len(item_list) < 32:
            return stock_find(item_name, item_list)
        found = idx.names_of(item_list).find(item_name)
        if idx.crosscheck and found is not stock_find(item_name, item_list):
            raise CrossCheckError(f"find_by_name({item_name!r}) differs")
        return found

    def get_initializer(self: Any, name: str) -> Any:
        return find_by_name(name, self.model.graph.initializer)

    def find_node_by_name(self: Any, node_name: str, new_nodes_list: Any, graph: Any) -> Any:
        found = find_by_name(node_name, graph.node)
        if found is None:  # the quantizer's own, long-lived list of new nodes: index it too
            found = idx.names_of(new_nodes_list).find(node_name)
        if idx.crosscheck and found is not stock["ONNXModel.find_node_by_name"](
            self, node_name, new_nodes_list, graph
        ):
            raise CrossCheckError(f"find_node_by_name({node_name!r}) differs")
        return found

    def rename(
        model: Any, side: str, old: str, new: str, only: Callable[[Any], bool] | None = None
    ) -> None:
        """Rename tensor ``old`` to ``new`` among the inputs (``side="input"``) or outputs of
        the nodes of ``model`` (those ``only`` accepts), through the index."""
        assert isinstance(old, str) and isinstance(new, str)
        index = idx.nodes_of(model.model.graph)
        if side == "input":
            index.move(index.consumers, old, new, lambda n: n.input, only)
        else:
            index.move(index.producers, old, new, lambda n: n.output, only)
        if idx.crosscheck:
            _crosscheck_maps(model, index, stock)

    def replace_input_of_all_nodes(self: Any, old_input_name: str, new_input_name: str) -> None:
        rename(self, "input", old_input_name, new_input_name)

    def replace_output_of_all_nodes(self: Any, old_output_name: str, new_output_name: str) -> None:
        rename(self, "output", old_output_name, new_output_name)

    def initializer_extend(self: Any, inits: Any) -> None:
        if len(inits) == 0:
            raise ValueError("Can add an empty list.")
        # ORT re-checks every existing initializer on each call; only FLOAT8E4M3FN tensors
        # can fail that check, so only those are looked at again.
        for init in idx.names_of(self.model.graph.initializer).float8_items():
            self._check_init(init, "gain")
        for init in inits:
            self._check_init(init)
            self.model.graph.initializer.append(init)

    def remove_initializer(self: Any, tensor: Any) -> None:
        graph = self.model.graph
        if idx.names_of(graph.initializer).remove_equal(tensor):
            inputs = idx.names_of(graph.input)
            listed = inputs.find(tensor.name)
            if listed is not None:
                inputs.remove_equal(listed)

    def remove_node(self: Any, node: Any) -> None:
        idx.nodes_of(self.model.graph).remove_equal(node)
        if idx.crosscheck:
            _crosscheck_maps(self, idx.nodes_of(self.model.graph), stock)

    def replace_input_of_nodes(
        self: Any, old_input_name: str, new_input_name: str, node_names_set: Any
    ) -> None:
        rename(self, "input", old_input_name, new_input_name, lambda n: n.name in node_names_set)

    def replace_output_of_nodes(
        self: Any, old_output_name: str, new_output_name: str, node_names_set: Any
    ) -> None:
        rename(self, "output", old_output_name, new_output_name, lambda n: n.name in node_names_set)

    def rename_in_node(node: Any, side: str, old: str, new: str) -> None:
        """ORT's static replace_node_input/output: through the index of the graph holding
        ``node``, or directly for a node of no indexed graph (a new node, a copy)."""
        assert isinstance(old, str) and isinstance(new, str)
        index = idx.holding(node)
        if index is None:
            stock[f"ONNXModel.replace_node_{side}"](node, old, new)
        elif side == "input":
            index.move(index.consumers, old, new, lambda n: n.input, lambda n: n is node)
        else:
            index.move(index.producers, old, new, lambda n: n.output, lambda n: n is node)

    def replace_node_input(node: Any, old_input_name: str, new_input_name: str) -> None:
        rename_in_node(node, "input", old_input_name, new_input_name)

    def replace_node_output(node: Any, old_output_name: str, new_output_name: str) -> None:
        rename_in_node(node, "output", old_output_name, new_output_name)

    def input_name_to_nodes(self: Any) -> Mapping[str, list[Any]]:
        index = idx.nodes_of(self.model.graph)
        result = MapView(index, index.consumers, last=False)
        if idx.crosscheck:
            _same_map(result, stock["ONNXModel.input_name_to_nodes"](self), "consumers")
        return result

    def save_and_reload(model: Any) -> Any:
        return quant_model_steps.save_and_reload_model_with_shape_infer(
            model, stock["quant_utils.save_and_reload_model_with_shape_infer"]
        )

    def output_name_to_node(self: Any) -> Mapping[str, Any]:
        index = idx.nodes_of(self.model.graph)
        result = MapView(index, index.producers, last=True)
        if idx.crosscheck:
            want = stock["ONNXModel.output_name_to_node"](self)
            if set(result.keys()) != set(want.keys()) or any(
                result[k] is not want[k] for k in want
            ):
                raise CrossCheckError("output_name_to_node differs")
        return result

    return {
        "quant_utils.find_by_name": find_by_name,
        "ONNXModel.get_initializer": get_initializer,
        "ONNXModel.find_node_by_name": find_node_by_name,
        "ONNXModel.initializer_extend": initializer_extend,
        "ONNXModel.remove_initializer": remove_initializer,
        "ONNXModel.remove_node": remove_node,
        "ONNXModel.replace_input_of_all_nodes": replace_input_of_all_nodes,
        "ONNXModel.replace_output_of_all_nodes": replace_output_of_all_nodes,
        "ONNXModel.replace_input_of_nodes": replace_input_of_nodes,
        "ONNXModel.replace_output_of_nodes": replace_output_of_nodes,
        "ONNXModel.replace_node_input": staticmethod(replace_node_input),
        "ONNXModel.replace_node_output": staticmethod(replace_node_output),
        "ONNXModel.input_name_to_nodes": input_name_to_nodes,
        "ONNXModel.output_name_to_node": output_name_to_node,
        "MinMaxCalibrater.augment_graph": quant_calibration.augment_graph,
        "MinMaxCalibrater.collect_data": quant_calibration.streaming_minmax(
            stock["MinMaxCalibrater.collect_data"]
        ),
        "HistogramCalibrater.collect_data": quant_calibration.streaming_histograms(
            stock["HistogramCalibrater.collect_data"]
        ),
        "CalibraterBase.create_inference_session": quant_calibration.calibration_session,
        "onnx_model._clean_initializers_helper": _clean_initializers_helper,
        "quant_utils.save_and_reload_model_with_shape_infer": save_and_reload,
        "ONNXModel.topological_sort": quant_model_steps.topological_sort,
    }


def _same_map(got: Mapping[str, list[Any]], want: dict[str, list[Any]], what: str) -> None:
    if set(got.keys()) != set(want.keys()) or any(
        len(got[k]) != len(want[k]) or any(a is not b for a, b in zip(got[k], want[k], strict=True))
        for k in want
    ):
        raise CrossCheckError(f"{what} differ from onnxruntime's scan")


def _crosscheck_maps(model: Any, index: NodeIndex, stock: dict[str, Callable[..., Any]]) -> None:
    got = {k: v for k, v in index.consumers.items() if v}
    _same_map(got, stock["ONNXModel.input_name_to_nodes"](model), "consumers")
    producers = {k: v for k, v in index.producers.items() if v}
    want: dict[str, list[Any]] = {}
    for node in model.model.graph.node:
        for name in node.output:
            if name:
                want.setdefault(name, []).append(node)
    _same_map(producers, want, "producers")


def _clean_initializers_helper(graph: Any, model: Any) -> tuple[Any, set[str]]:
    """ORT's _clean_initializers_helper, removing the unused initializers (and their graph
    inputs) in one pass instead of one ``RepeatedField.remove`` — a scan comparing whole
    tensors — per initializer. What remains, and in what order, is the same."""
    from onnx import AttributeProto
    from onnx import helper as onnx_helper
    from onnxruntime.quantization.quant_utils import attribute_to_kwarg

    # Every node's input and output names in one walk (each field read once: on tens of
    # thousands of nodes, walking the protobuf list is most of this function's time).
    requesting: set[str] = set()
    outputs: set[str] = set()
    nodes = list(graph.node)
    for node in nodes:
        requesting.update(node.input)
        outputs.update(node.output)
    requesting.discard("")
    requesting.update(g_out.name for g_out in graph.output if g_out.name)
    new_nodes = []
    for node in nodes:
        new_node = node
        if node.attribute and any(
            a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute
        ):
            kwargs: dict[str, Any] = {}
            for attr in node.attribute:
                if attr.type == AttributeProto.GRAPH:
                    cleaned, sub_requesting = _clean_initializers_helper(attr.g, model)
                    kwargs[attr.name] = cleaned
                    requesting.update(sub_requesting)
                elif attr.type == AttributeProto.GRAPHS:
                    graphs = []
                    for subgraph in attr.graphs:
                        cleaned, sub_requesting = _clean_initializers_helper(subgraph, model)
                        graphs.append(cleaned)
                        requesting.update(sub_requesting)
                    kwargs[attr.name] = graphs
                else:
                    kwargs.update(attribute_to_kwarg(attr))
            new_node = onnx_helper.make_node(
                node.op_type, node.input, node.output, name=node.name, **kwargs
            )
        new_nodes.append(new_node)
    graph.ClearField("node")
    graph.node.extend(new_nodes)
    requesting.difference_update(outputs)  # the new nodes have the same outputs
    unused: list[Any] = []
    kept: list[Any] = []
    for initializer in graph.initializer:
        if initializer.name in requesting:
            requesting.remove(initializer.name)
            kept.append(initializer)
        else:
            unused.append(initializer)
    if unused:
        unused_names = {i.name for i in unused}
        name_to_input = {i.name: i for i in graph.input}
        dropped_inputs = {id(name_to_input[n]) for n in unused_names if n in name_to_input}
        inputs = [i for i in graph.input if id(i) not in dropped_inputs]
        kept_copies = [_copy(i) for i in kept]
        input_copies = [_copy(i) for i in inputs]
        graph.ClearField("initializer")
        graph.initializer.extend(kept_copies)
        graph.ClearField("input")
        graph.input.extend(input_copies)
    requesting.difference_update(i.name for i in graph.input)
    return graph, requesting


def _copy(message: Any) -> Any:
    twin = type(message)()
    twin.CopyFrom(message)
    return twin


# ----- patching ----------------------------------------------------------------------------------


def _slots() -> dict[str, tuple[Any, str]]:
    """Where each replaced function lives (owner object, attribute)."""
    import importlib

    from onnxruntime.quantization import calibrate, onnx_model

    slots: dict[str, tuple[Any, str]] = {
        name: (onnx_model.ONNXModel, name.split(".", 1)[1])
        for name in ort_guard.EXPECTED_SOURCE
        if name.startswith("ONNXModel.")
    }
    slots["MinMaxCalibrater.augment_graph"] = (calibrate.MinMaxCalibrater, "augment_graph")
    slots["MinMaxCalibrater.collect_data"] = (calibrate.MinMaxCalibrater, "collect_data")
    slots["HistogramCalibrater.collect_data"] = (calibrate.HistogramCalibrater, "collect_data")
    slots["onnx_model._clean_initializers_helper"] = (onnx_model, "_clean_initializers_helper")
    slots["CalibraterBase.create_inference_session"] = (
        calibrate.CalibraterBase,
        "create_inference_session",
    )
    for module in ort_guard.FIND_BY_NAME_USERS:
        owner = importlib.import_module(f"onnxruntime.quantization.{module}")
        if hasattr(owner, "find_by_name"):
            slots[f"find_by_name@{module}"] = (owner, "find_by_name")
    reload = "save_and_reload_model_with_shape_infer"
    for module in ort_guard.RELOAD_USERS:
        owner = importlib.import_module(f"onnxruntime.quantization.{module}")
        if hasattr(owner, reload):
            slots[f"quant_utils.{reload}@{module}"] = (owner, reload)
    return slots


def _with_progress(
    create: Callable[..., Any], progress: Callable[[float], None]
) -> Callable[..., Any]:
    """ORT's per-node quantizer factory, reporting how far through the graph the node is.

    ORT walks the graph's node list without changing it while it creates these, so each
    node's place is looked up in a map made once per list (it holds the list and the nodes
    it maps, so their ids stay theirs)."""
    places: dict[int, tuple[Any, list[Any], dict[int, int]]] = {}

    def create_and_report(quantizer: Any, node: Any) -> Any:
        nodes = quantizer.model.model.graph.node
        held = places.get(id(nodes))
        if held is None or held[0] is not nodes or len(held[1]) != len(nodes):
            listed = list(nodes)
            held = places[id(nodes)] = (nodes, listed, {id(n): k for k, n in enumerate(listed)})
        number = held[2].get(id(node))
        if number is not None:
            progress(number / len(held[1]))
        return create(quantizer, node)

    return create_and_report


@contextlib.contextmanager
def accelerated(
    log: Callable[[str], None] | None = None, progress: Callable[[float], None] | None = None
) -> Iterator[bool]:
    """Patch onnxruntime's quadratic helpers for the body of the ``with``; yields whether the
    accelerated path is in use (False: stock ORT, the reason logged). ``progress`` hears how
    far quantization has gone through the graph (0–1)."""
    reason = ort_guard.unsupported_reason()
    if reason is not None:
        if log:
            log(
                f"Quantizing with stock onnxruntime (slower on big graphs): the accelerated path "
                f"is off because {reason}."
            )
        yield False
        return
    stock = ort_guard.replaced_functions()
    indexes = Indexes(os.environ.get(CROSSCHECK_ENV) == "1")
    standins = _make_standins(stock, indexes)
    saved: list[tuple[Any, str, Any]] = []
    if progress is not None:
        from onnxruntime.quantization import onnx_quantizer, qdq_quantizer

        for owner, attr in (
            (qdq_quantizer, "CreateQDQQuantizer"),
            (onnx_quantizer, "CreateOpQuantizer"),
        ):
            saved.append((owner, attr, owner.__dict__[attr]))
            setattr(owner, attr, _with_progress(owner.__dict__[attr], progress))
    try:
        for name, (owner, attr) in _slots().items():
            key = (
                "quant_utils.find_by_name"
                if name.startswith("find_by_name@")
                else name.split("@", 1)[0]
            )
            if key not in standins:
                continue
            saved.append((owner, attr, owner.__dict__[attr]))
            setattr(owner, attr, standins[key])
        if log:
            log(
                f"Quantizing with the accelerated path (indexed helpers; the same bytes as "
                f"onnxruntime {ort_guard.SUPPORTED_VERSION}'s own quantizer)."
            )
        yield True
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)
