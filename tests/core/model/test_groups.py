"""Name-scope groups: the tree, the first view, closed groups drawn as one node."""

from __future__ import annotations

import onnx

from edgestudio.core.model.graph_ir import GraphIR, build_graph_ir
from edgestudio.core.model.groups import FIRST_VIEW_UNITS, GROUP_OP, GroupTree, grouped_ir
from tests.graph_builders import transformer_like


def test_blocks_become_groups_and_close_into_one_node_each() -> None:
    ir = build_graph_ir(transformer_like(2_000).graph)
    tree = GroupTree.build(ir)
    blocks = tree.groups[""].children
    assert len(blocks) > 50 and all(tree.groups[b].size > 10 for b in blocks)
    assert tree.groups[""].size == sum(1 for k in ir.kinds if k == 0)
    opened = tree.first_view()
    assert opened == {""}  # too many blocks to open on the first view
    grouped = grouped_ir(ir, tree, opened)
    assert grouped.node_count < ir.node_count / 10
    first = grouped.names.index(blocks[0])
    assert grouped.op_types[first] == GROUP_OP and grouped.is_group(first)
    assert grouped.onnx_node(first) is None
    # every operator inside is found on its group; edges between groups are merged
    member = grouped.members[first][3]
    assert grouped.index_of(member) == first
    pairs = list(zip(grouped.edge_src.tolist(), grouped.edge_dst.tolist(), strict=True))
    assert len(pairs) == len(set(pairs)) and all(a != b for a, b in pairs)
    # opening a block shows its operators again
    opened_one = grouped_ir(ir, tree, {"", blocks[0]})
    assert member in opened_one.names and not opened_one.is_group(opened_one.names.index(member))
    assert tree.path_to(ir.index_of(member) or 0, ir) == [blocks[0]]


def test_small_graphs_open_fully_and_first_views_stay_small() -> None:
    small = build_graph_ir(transformer_like(120).graph)
    tree = GroupTree.build(small)
    assert tree.first_view() == set(tree.groups)
    big = GroupTree.build(build_graph_ir(transformer_like(20_000).graph))
    assert len(big.units(big.first_view())) <= max(
        FIRST_VIEW_UNITS, len(big.groups[""].children) + len(big.groups[""].nodes)
    )


def unscoped_blocks_model(negs: list[int]) -> onnx.ModelProto:
    """Residual blocks named without scopes (as Paddle or torch.export write them): Relu,
    Sigmoid, ``negs[k]`` Negs, Add."""
    from onnx import TensorProto, helper

    nodes, x = [], "x"
    for block, count in enumerate(negs):
        a = f"p2o.Relu.{block}"
        nodes.append(helper.make_node("Relu", [x], [a], name=a))
        b = f"p2o.Sigmoid.{block}"
        nodes.append(helper.make_node("Sigmoid", [a], [b], name=b))
        for k in range(count):
            c = f"p2o.Neg.{block}.{k}"
            nodes.append(helper.make_node("Neg", [b], [c], name=c))
            b = c
        y = f"p2o.Add.{block}"
        nodes.append(helper.make_node("Add", [a, b], [y], name=y))
        x = y
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _unscoped_blocks(negs: list[int]) -> tuple[list[str], GraphIR]:
    """:func:`unscoped_blocks_model`'s op types in order and its IR."""
    model = unscoped_blocks_model(negs)
    return [n.op_type for n in model.graph.node], build_graph_ir(model.graph)


def test_an_unscoped_graph_is_grouped_by_the_layer_it_repeats() -> None:
    ops, ir = _unscoped_blocks([8] * 20)
    tree = GroupTree.build(ir)
    layers = tree.groups[""].children
    assert layers == [f"layer {k}" for k in range(1, 21)]
    assert "20 repeated layers of 11 operators" in tree.note
    # each layer is one block: the same operators, cut where one tensor flows on (at its Add)
    for path in layers:
        group = tree.groups[path]
        assert [ir.op_types[i] for i in group.nodes] == ops[:11]
    member = ir.index_of("p2o.Neg.5.3")
    assert member is not None and tree.path_to(member, ir) == ["layer 6"]


def test_a_layer_that_differs_stays_outside_and_the_rest_repeat() -> None:
    _, ir = _unscoped_blocks([12] + [8] * 20)  # the first block is longer (an embedding…)
    tree = GroupTree.build(ir)
    assert tree.groups[""].children == [f"layer {k}" for k in range(1, 21)]
    outside = [ir.names[i] for i in tree.groups[""].nodes]
    assert len(outside) == 15 and all(name.split(".")[2] == "0" for name in outside)


def test_an_unscoped_graph_that_repeats_nothing_is_cut_into_stages() -> None:
    _, ir = _unscoped_blocks([3 + (7 * k) % 11 for k in range(20)])  # no two alike in a row
    tree = GroupTree.build(ir)
    stages = tree.groups[""].children
    assert len(stages) >= 4 and all(s.startswith("stage ") for s in stages)
    assert "stages" in tree.note
    # every stage ends where one tensor flows on: after a block's Add, or its Relu (read by
    # the Sigmoid and the Add, the only tensor alive)
    for s in stages[:-1]:
        last = tree.groups[s].nodes[-1]
        assert ir.op_types[last] in ("Add", "Relu")
