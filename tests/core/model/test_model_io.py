"""Every kind of bad file gets its own classified, user-worded error."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgestudio.core.errors import ModelLoadError
from edgestudio.core.model.model_io import load_model
from edgestudio.core.model.summary import summarize_file
from tests import models
from tests.bad_models import CASES


def test_valid_model_loads(conv_model: Path) -> None:
    model = load_model(conv_model)
    assert len(model.graph.node) == 4


@pytest.mark.parametrize("case", [n for n, c in CASES.items() if c.refused])
def test_every_refused_file_gets_its_kind_and_words(tmp_path: Path, case: str) -> None:
    bad = CASES[case]
    with pytest.raises(ModelLoadError) as info:
        summarize_file(bad.build(tmp_path))
    assert info.value.kind == bad.kind
    assert bad.words in str(info.value)


@pytest.mark.parametrize("case", [n for n, c in CASES.items() if not c.refused])
def test_every_flagged_model_opens_with_its_problem_named(tmp_path: Path, case: str) -> None:
    bad = CASES[case]
    summary = summarize_file(bad.build(tmp_path))
    assert any(bad.words in p for p in summary.problems), summary.problems


def test_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="is a folder") as info:
        summarize_file(tmp_path)
    assert info.value.kind == "not_a_file"


def test_structure_only_drops_node_data_and_nothing_else() -> None:
    from edgestudio.core.model.model_io import (
        has_large_attributes,
        is_structure_only,
        structure_only,
    )

    trees = models.tree_ensemble(trees=1000, depth=6)
    assert has_large_attributes(trees)
    skeleton = structure_only(trees)
    assert is_structure_only(skeleton) and not is_structure_only(trees)
    assert skeleton.ByteSize() < trees.ByteSize() / 100
    assert [n.op_type for n in skeleton.graph.node] == [n.op_type for n in trees.graph.node]
    assert skeleton.graph.input == trees.graph.input
    assert skeleton.graph.output == trees.graph.output
    assert skeleton.opset_import == trees.opset_import and skeleton.ir_version == 4
    kept = {a.name for a in skeleton.graph.node[0].attribute}
    assert "post_transform" in kept and "nodes_treeids" not in kept
    for small in (models.conv_relu_gemm(), models.with_if_subgraph(), models.gru_model()):
        assert not has_large_attributes(small)
        copy = structure_only(small)
        del copy.metadata_props[-1]
        assert copy == small  # a model without node data is copied field for field
