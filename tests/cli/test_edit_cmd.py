"""``edgestudio edit`` end to end: each edit written, checked against the original, and the
input model untouched; on a model built in code and on corpus models."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import onnx
import pytest

from tests import models
from tests.cli.run import run_cli
from tests.realmodels.corpus import SKIP_REASON, cache_dir


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.e2e
def test_extract_rename_add_output_and_simplify_are_checked(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    before = _sha(src)
    out, report = tmp_path / "part.onnx", tmp_path / "r.json"
    done = run_cli(
        "edit",
        str(src),
        "-o",
        str(out),
        "--inputs",
        "r",
        "--outputs",
        "y",
        "--rename",
        "y=scores",
        "--json",
        str(report),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert data["check"]["status"] == "passed" and data["inputs"] == ["r"]
    assert data["outputs"] == ["scores"] and data["edits"][0].startswith("extracted 2 of 4")
    assert [n.name for n in onnx.load(str(out)).graph.node] == ["flatten", "fc"]
    done = run_cli(
        "edit", str(src), "-o", str(tmp_path / "s.onnx"), "--add-output", "c", "--simplify"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "simplified by onnxslim" in done.stdout + done.stderr or "equivalent" in done.stdout
    assert [o.name for o in onnx.load(str(tmp_path / "s.onnx")).graph.output] == ["y", "c"]
    assert _sha(src) == before  # the input model is never modified


@pytest.mark.e2e
def test_a_bypass_that_changes_the_numbers_says_so_and_a_bad_name_loses_nothing(
    tmp_path: Path,
) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    done = run_cli("edit", str(src), "-o", str(tmp_path / "b.onnx"), "--bypass", "relu")
    assert done.returncode == 1  # written, but not equivalent: the check says where
    assert "computes something" in done.stderr + done.stdout and "NOT allclose" in done.stdout
    bad = run_cli("edit", str(src), "-o", str(tmp_path / "x.onnx"), "--outputs", "nope")
    assert bad.returncode != 0 and "No tensor called 'nope'" in bad.stderr
    assert not (tmp_path / "x.onnx").exists()
    assert not list(tmp_path.glob(".*.tmp"))  # no staging folder left behind


@pytest.mark.e2e
@pytest.mark.skipif(not (cache_dir() / "minilm_l6_v2.onnx").is_file(), reason=SKIP_REASON)
def test_a_transformer_is_cut_after_its_second_layer(tmp_path: Path) -> None:
    src = cache_dir() / "minilm_l6_v2.onnx"
    cut = "/encoder/layer.1/output/LayerNorm/Add_1_output_0"
    out = tmp_path / "two_layers.onnx"
    done = run_cli(
        "edit",
        str(src),
        "-o",
        str(out),
        "--outputs",
        cut,
        "--rename",
        f"{cut}=hidden_after_2",
        "--shape",
        "input_ids=1x16",
        "--shape",
        "attention_mask=1x16",
        "--shape",
        "token_type_ids=1x16",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hidden_after_2" in done.stdout and "allclose" in done.stdout
    model = onnx.load(str(out))
    assert [o.name for o in model.graph.output] == ["hidden_after_2"]
    assert not any("layer.2" in n.name for n in model.graph.node)


@pytest.mark.e2e
def test_a_model_with_external_weights_is_cut_copying_only_what_it_keeps(tmp_path: Path) -> None:
    from tests.graph_builders import llama_decoder

    src = llama_decoder(tmp_path, layers=4, hidden=64, intermediate=176, vocab=256)
    data = src.with_name(src.name + ".data")
    before = _sha(data)
    out = tmp_path / "cut" / "first2.onnx"
    out.parent.mkdir()
    done = run_cli(
        "edit",
        str(src),
        "-o",
        str(out),
        "--outputs",
        "layers.1/mlp_residual",
        "--shape",
        "input_ids=1x4",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "allclose" in done.stdout
    cut = onnx.load(str(out), load_external_data=False)
    assert not any(n.name.startswith("layers.2") for n in cut.graph.node)
    assert {v.name for v in cut.graph.input} >= {"input_ids", "past_key.0", "past_key.1"}
    assert not {v.name for v in cut.graph.input} & {"past_key.2", "past_key.3"}
    kept = (out.parent / "first2.onnx.data").stat().st_size
    assert 0 < kept < data.stat().st_size * 0.75  # the embedding and two of four layers
    assert _sha(data) == before


@pytest.mark.e2e
@pytest.mark.skipif(not (cache_dir() / "ppocr_mobile_cls.onnx").is_file(), reason=SKIP_REASON)
def test_a_corpus_cnn_gets_an_output_added_and_is_simplified(tmp_path: Path) -> None:
    src = cache_dir() / "ppocr_mobile_cls.onnx"
    out = tmp_path / "cls.onnx"
    done = run_cli(
        "edit",
        str(src),
        "-o",
        str(out),
        "--add-output",
        "relu_0.tmp_0",
        "--simplify",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["outputs"] == ["save_infer_model/scale_0.tmp_1", "relu_0.tmp_0"]
    assert any(e.startswith("simplified by onnxslim: 566 →") for e in data["edits"])
    assert data["nodes"] < 566 and data["check"]["status"] == "passed"
    # a bypass the model cannot take is refused in words, nothing written
    bert = cache_dir() / "paraphrase_minilm_l3.onnx"
    if bert.is_file():
        refused = run_cli(
            "edit", str(bert), "-o", str(tmp_path / "b.onnx"), "--bypass", "Identity_464"
        )
        assert refused.returncode == 2 and "straight to the graph output" in refused.stderr
        assert not (tmp_path / "b.onnx").exists()
