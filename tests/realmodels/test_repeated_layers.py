"""Real transformers exported without name scopes (as torch.export / dynamo writes them: names
are ``node_<Op>_<n>``) open as their repeated layers: the corpus's scoped exports, with the names
stripped, give the same layer count and the same operators per layer as their scopes say."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgestudio.core.model.graph_ir import build_graph_ir
from edgestudio.core.model.groups import GroupTree
from edgestudio.core.model.model_io import load_model
from tests.realmodels.corpus import SKIP_REASON, cache_dir

# The real-model corpus: end to end, in `make test-e2e` (and CI), not the fast tier.
pytestmark = pytest.mark.e2e

# model -> (layers, operators per layer), as the exporter's own scopes group them
EXPECTED = {
    "minilm_l6_v2": (6, 72),
    "vit_s_focus": (12, 80),
    "t5_title_encoder": (7, 82),
}  # T5's block.0 holds the position bias: not alike


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stripped_transformers_open_as_their_layers(name: str) -> None:
    path: Path = cache_dir() / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(reason=SKIP_REASON)
    graph = load_model(path).graph
    for i, node in enumerate(graph.node):
        node.name = f"node_{node.op_type}_{i}"  # no scopes left
    ir = build_graph_ir(graph)
    tree = GroupTree.build(ir)
    layers = [c for c in tree.groups[""].children if c.startswith("layer ")]
    count, size = EXPECTED[name]
    assert len(layers) == count, tree.note
    sequences = {tuple(ir.op_types[i] for i in tree.groups[p].nodes) for p in layers}
    assert len(sequences) == 1 and len(next(iter(sequences))) == size
    assert f"{count} repeated layers of {size} operators" in tree.note
