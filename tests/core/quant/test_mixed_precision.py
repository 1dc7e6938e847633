"""Mixed precision (``--int16 NODE``) and quantizer placement (``--placement``): the result's
16-bit tensors are exactly those asked, placement leaves exactly the named tensors float, and
every result says its precision counts; each result loads and runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.mixed_precision import nodes_to_widen, precision_of
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_rules import check_rules
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models


@pytest.fixture
def block(tmp_path: Path) -> tuple[Path, DataSource]:
    src = models.save(models.residual_block(), tmp_path / "block.onnx")
    data = tmp_path / "calib.npz"
    np.savez(data, x=np.random.default_rng(0).standard_normal((8, 4, 8, 8)).astype(np.float32))
    return src, DataSource("npz", str(data))


def _quantize(src: Path, calib: DataSource, out: Path, **options: object) -> onnx.ModelProto:
    job = run_job(
        QuantRecipe(model=str(src), output=str(out), mode="qdq", calib=calib, **options),
        timeout=300,
    )  # type: ignore[arg-type]
    assert job.state is JobState.SUCCEEDED, (job.error, job.stderr_tail)
    assert job.report is not None
    assert any(n.startswith("Precision: ") for n in job.report.result.notes)
    return onnx.load(str(out))


def _activation_types(model: onnx.ModelProto) -> dict[str, int]:
    """Each quantized activation of the float graph (conversions left out) -> its type."""
    inits = {t.name: t.data_type for t in model.graph.initializer}
    dequantized = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return {
        n.input[0]: inits[n.input[2]]
        for n in model.graph.node
        if n.op_type == "QuantizeLinear"
        and n.input[0] not in dequantized
        and n.input[0] not in inits
    }


def _runs(path: Path) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.ones((2, 4, 8, 8), np.float32)})
    assert y.shape == (2, 10) and np.isfinite(y).all()


@pytest.mark.e2e
def test_int16_node_widens_exactly_its_output(
    tmp_path: Path, block: tuple[Path, DataSource]
) -> None:
    src, calib = block
    out = tmp_path / "mixed.onnx"
    types = _activation_types(_quantize(src, calib, out, int16=("c2",)))
    wide = {t for t, kind in types.items() if kind == onnx.TensorProto.UINT16}
    assert wide == {"c2_out"}
    assert types["add_out"] == onnx.TensorProto.UINT8  # the reader gets a conversion back
    _runs(out)
    counts = precision_of(onnx.load(str(out)))
    assert counts.activations["uint16"] == 1 and counts.conversions == 2


@pytest.mark.e2e
def test_int16_on_a_fused_relu_brings_its_producer(
    tmp_path: Path, block: tuple[Path, DataSource]
) -> None:
    """ORT fuses Relu into its Conv: widening only the Relu's tensor would change nothing."""
    src, calib = block
    graph = onnx.load(str(src)).graph
    assert {n.name for n in nodes_to_widen(graph, ("r1",))[0]} == {"r1", "c1"}
    assert {n.name for n in nodes_to_widen(graph, ("c1",))[0]} == {"r1", "c1"}
    out = tmp_path / "relu16.onnx"
    types = _activation_types(_quantize(src, calib, out, int16=("r1",)))
    assert {t for t, k in types.items() if k == onnx.TensorProto.UINT16} == {"c1_out", "r1_out"}
    _runs(out)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("placement", "quantized"),
    [
        ("all", {"x", "r1_out", "c2_out", "add_out", "mul_out", "gap_out", "flat_out"}),
        ("compute", {"x", "c1_out", "r1_out", "c2_out", "flat_out"}),
        ("compute-inputs", {"x", "r1_out", "flat_out"}),
    ],
)
def test_placement_leaves_exactly_the_other_tensors_float(
    tmp_path: Path, block: tuple[Path, DataSource], placement: str, quantized: set[str]
) -> None:
    src, calib = block
    out = tmp_path / f"{placement}.onnx"
    model = _quantize(src, calib, out, placement=placement)
    got = {t for t in _activation_types(model) if not t.endswith("_QuantizeLinear_Input")}
    assert got == quantized
    counts = precision_of(model)
    if placement == "compute-inputs":  # the elementwise tail computes in float
        assert {"Relu", "Mul", "GlobalAveragePool"} <= set(counts.float_ops)
    if placement == "all":
        assert counts.float_nodes == 0
    _runs(out)


def test_rules_for_the_new_options() -> None:
    names = {"c1", "r1", "c2"}
    bad = check_rules(
        QuantRecipe(mode="qdq", calib=DataSource("synthetic"), int16=("c22",)), 17, names
    )
    assert any("No node named 'c22' to keep in 16-bit" in e and "'c2'" in e for e in bad.errors)
    both = check_rules(
        QuantRecipe(mode="qdq", calib=DataSource("synthetic"), int16=("c1",), exclude=("c1",)),
        17,
        names,
    )
    assert any("both kept in float and in 16-bit" in e for e in both.errors)
    qop = check_rules(
        QuantRecipe(mode="qoperator", calib=DataSource("synthetic"), placement="compute-inputs"),
        17,
        names,
    )
    assert any("QDQ format" in e for e in qop.errors)


def test_command_round_trips_the_new_options() -> None:
    recipe = QuantRecipe(
        model="m.onnx",
        output="q.onnx",
        mode="qdq",
        calib=DataSource("synthetic"),
        int16=("a", "b"),
        placement="compute",
    )
    cmd = recipe.to_command()
    assert cmd.count("--int16") == 2 and "--placement" in cmd
    assert "2 in 16-bit" in recipe.title() and "compute" in recipe.title()


def test_calibration_data_given_to_a_mode_that_does_not_calibrate_is_said_unused() -> None:
    for mode in ("dynamic", "fp16", "int4"):
        check = check_rules(QuantRecipe(mode=mode, calib=DataSource("npz", "c.npz")), 17)
        assert any("calibration data is not used" in w for w in check.warnings), mode
    assert not any(
        "not used" in w
        for w in check_rules(QuantRecipe(mode="qdq", calib=DataSource("npz", "c.npz")), 17).warnings
    )


@pytest.mark.e2e
def test_smoothquant_runs_after_the_quantizers_are_placed_and_is_deterministic(
    tmp_path: Path,
) -> None:
    src = models.save(models.outlier_block(), tmp_path / "m.onnx")
    rng = np.random.default_rng(1)
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=rng.standard_normal((8, 8, 16)).astype(np.float32))
    recipe = QuantRecipe(
        model=str(src),
        output=str(tmp_path / "a.onnx"),
        mode="qdq",
        calib=DataSource("npz", str(calib)),
        per_channel=True,
        placement="compute-inputs",
        smooth_quant=0.5,
    )
    assert "SmoothQuant" in " ".join(
        check_rules(QuantRecipe(model=str(src), smooth_quant=0.5)).errors
    )  # placement "all" refused
    assert "--smoothquant 0.5" in recipe.command_line()
    first = run_job(recipe)
    assert first.state is JobState.SUCCEEDED, first.error
    assert first.report is not None
    assert any(
        "SmoothQuant (α=0.5): 2 MatMul input(s) smoothed — 1 folded" in n
        for n in first.report.result.notes
    )
    again = run_job(replace(recipe, output=str(tmp_path / "b.onnx")))
    assert again.state is JobState.SUCCEEDED, again.error
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    result = onnx.load(str(tmp_path / "a.onnx"))
    assert any(n.name == "smoothquant/h" for n in result.graph.node)
