"""The accelerated quantizer writes byte-identical models to stock onnxruntime, for every mode
and three graph families, with every indexed answer cross-checked against ORT's own scan; on
any other onnxruntime (or a changed function) it steps aside and says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from edgestudio.core.quant.accel import accelerator as quant_accel
from edgestudio.core.quant.accel import ort_guard
from tests import graph_builders, models


def _preprocessed(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` after ORT's quant_pre_process, as the quantize job feeds it (value_info for
    every tensor, fused nodes, initializers removed during quantization)."""
    import tempfile

    from onnxruntime.quantization.shape_inference import quant_pre_process

    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(model, f"{tmp}/in.onnx")
        quant_pre_process(f"{tmp}/in.onnx", f"{tmp}/out.onnx", skip_symbolic_shape=True)
        return onnx.load(f"{tmp}/out.onnx")


FAMILIES = {
    "cnn": lambda: graph_builders.cnn_like(blocks=5),
    "transformer": lambda: graph_builders.transformer_like(90),
    "residual_mlp": lambda: graph_builders.residual_mlp(120),
    "preprocessed_cnn": lambda: _preprocessed(graph_builders.cnn_like(blocks=5)),
}
STATIC = {
    "qdq_u8s8": {},
    "qdq_per_channel": {"per_channel": True},
    "qdq_symmetric": {"extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True}},
    "qdq_symmetric_ranges": {"extra_options": {"CalibTensorRangeSymmetric": True}},
    "qdq_dedicated_pairs": {"extra_options": {"DedicatedQDQPair": True}},
    "qdq_int16_activations": {"activation_type": "QInt16"},
    "qoperator": {"quant_format": "QOperator"},
    "qdq_matmul_only": {"op_types_to_quantize": ["MatMul"]},
    "qdq_excluded": {"nodes_to_exclude": "first-two"},
}


class _Reader:
    def __init__(self, model: onnx.ModelProto, count: int = 4) -> None:
        from edgestudio.core.inputs.input_derivation import derive_candidates

        spec = next(derive_candidates(model))
        self.samples = [spec.feeds(seed) for seed in range(count)]
        self.k = 0
        self.rewinds = 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        self.k += 1
        return self.samples[self.k - 1] if self.k <= len(self.samples) else None

    def rewind(self) -> None:
        self.k = 0
        self.rewinds += 1


def _options(model: onnx.ModelProto, raw: dict[str, Any]) -> dict[str, Any]:
    from onnxruntime.quantization import QuantFormat, QuantType

    options = dict(raw)
    if "quant_format" in options:
        options["quant_format"] = QuantFormat.QOperator
    if "activation_type" in options:
        options["activation_type"] = QuantType.QInt16
    if options.get("nodes_to_exclude") == "first-two":
        options["nodes_to_exclude"] = [n.name for n in model.graph.node[:2]]
    return options


def _quantize_both(tmp_path: Path, model: onnx.ModelProto, mode: str) -> tuple[bytes, bytes]:
    from onnxruntime.quantization import quantize_dynamic, quantize_static

    src = models.save(model, tmp_path / "src.onnx")
    outputs = []
    for accelerate in (False, True):
        out = tmp_path / f"{mode}_{accelerate}.onnx"
        context = quant_accel.accelerated() if accelerate else _stock()
        with context as used:
            assert used is accelerate
            if mode == "dynamic":
                quantize_dynamic(str(src), str(out))
            else:
                quantize_static(str(src), str(out), _Reader(model), **_options(model, STATIC[mode]))
        outputs.append(onnx.load(str(out)).SerializeToString())
    return outputs[0], outputs[1]


class _stock:  # noqa: N801  (reads like the context manager it stands beside)
    def __enter__(self) -> bool:
        return False

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture(autouse=True)
def _crosscheck(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(quant_accel.CROSSCHECK_ENV, "1")


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("mode", ["dynamic", *STATIC])
def test_accelerated_output_is_byte_identical(tmp_path: Path, family: str, mode: str) -> None:
    if ort_guard.unsupported_reason():
        pytest.skip(reason=f"accelerated path off: {ort_guard.unsupported_reason()}")
    stock, fast = _quantize_both(tmp_path, FAMILIES[family](), mode)
    assert stock == fast


CALIBRATION = {
    "entropy": {"calibrate_method": "Entropy"},
    "percentile": {"calibrate_method": "Percentile"},
    "percentile_symmetric": {
        "calibrate_method": "Percentile",
        "extra_options": {"CalibTensorRangeSymmetric": True},
    },
    "distribution": {"calibrate_method": "Distribution"},
    "minmax_moving_average": {"extra_options": {"CalibMovingAverage": True}},
}


@pytest.mark.e2e
@pytest.mark.parametrize("family", ["cnn", "transformer", "residual_mlp"])
@pytest.mark.parametrize("method", sorted(CALIBRATION))
@pytest.mark.parametrize("passes", [1, 2])
def test_calibration_methods_give_byte_identical_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, family: str, method: str, passes: int
) -> None:
    """Histograms built in one go from kept tensors, or summed over a second pass when the
    tensors would not fit (forced here), give ORT's own ranges, hence the same model."""
    from onnxruntime.quantization import CalibrationMethod, quantize_static

    from edgestudio.core.quant.accel import calibration as quant_calibration

    if ort_guard.unsupported_reason():
        pytest.skip(reason=f"accelerated path off: {ort_guard.unsupported_reason()}")
    if passes == 2:
        monkeypatch.setattr(quant_calibration, "HISTOGRAM_KEEP_BYTES", 0)
    model = FAMILIES[family]()
    src = models.save(model, tmp_path / "src.onnx")
    options = dict(CALIBRATION[method])
    if "calibrate_method" in options:
        options["calibrate_method"] = getattr(CalibrationMethod, options["calibrate_method"])
    outputs, rewinds = [], []
    for accelerate in (False, True):
        out = tmp_path / f"{accelerate}.onnx"
        reader = _Reader(model, count=5)
        with quant_accel.accelerated() if accelerate else _stock() as used:
            assert used is accelerate
            quantize_static(str(src), str(out), reader, **options)
        outputs.append(onnx.load(str(out)).SerializeToString())
        rewinds.append(reader.rewinds)
    assert outputs[0] == outputs[1]
    histogram = "calibrate_method" in options
    assert rewinds == [0, 1 if histogram and passes == 2 else 0]


def test_patches_are_removed_afterwards() -> None:
    import importlib

    from onnxruntime.quantization import (
        base_quantizer,
        calibrate,
        onnx_model,
        onnx_quantizer,
        qdq_quantizer,
        quant_utils,
    )

    quantize = importlib.import_module("onnxruntime.quantization.quantize")  # the module

    def patched() -> tuple[object, ...]:
        return (
            quant_utils.find_by_name,
            qdq_quantizer.find_by_name,
            onnx_model.ONNXModel.replace_input_of_all_nodes,
            onnx_model.ONNXModel.topological_sort,
            calibrate.MinMaxCalibrater.augment_graph,
            quant_utils.save_and_reload_model_with_shape_infer,
            base_quantizer.save_and_reload_model_with_shape_infer,
            onnx_quantizer.save_and_reload_model_with_shape_infer,
            quantize.save_and_reload_model_with_shape_infer,
        )

    before = patched()
    with quant_accel.accelerated() as used:
        if used:
            during = patched()
            assert all(a is not b for a, b in zip(during, before, strict=True))
    assert patched() == before


def test_other_onnxruntime_versions_fall_back_to_stock(monkeypatch: pytest.MonkeyPatch) -> None:
    from onnxruntime.quantization import quant_utils

    said: list[str] = []
    monkeypatch.setattr(ort_guard, "SUPPORTED_VERSION", "0.0.1")
    with quant_accel.accelerated(said.append) as used:
        assert not used and quant_utils.find_by_name.__module__.startswith("onnxruntime")
    assert "written for onnxruntime 0.0.1" in said[0]


def test_a_changed_function_falls_back_to_stock(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    expected = dict(ort_guard.EXPECTED_SOURCE, **{"ONNXModel.get_initializer": "0" * 16})
    monkeypatch.setattr(ort_guard, "EXPECTED_SOURCE", expected)
    with quant_accel.accelerated(said.append) as used:
        assert not used
    assert "ONNXModel.get_initializer is not the version" in said[0]


@pytest.mark.e2e
def test_quantize_job_reports_progress_node_by_node(tmp_path: Path) -> None:
    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import QuantRecipe
    from edgestudio.jobs.runner import JobState
    from edgestudio.jobs.scheduler import run_job

    src = models.save(graph_builders.residual_mlp(400), tmp_path / "mlp.onnx")
    seen: list[float] = []
    job = run_job(
        QuantRecipe(
            model=str(src),
            output=str(tmp_path / "q.onnx"),
            mode="qdq",
            calib=DataSource("synthetic", samples=4),
        ),
        on_update=lambda j: seen.append(j.fraction or 0.0),
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert "▸ Quantizing node by node" in job.log
    assert not any("stock onnxruntime" in line for line in job.log)
    assert any("accelerated path" in line for line in job.log)  # which path ran is said
    during = [f for f in seen if 0.5 < f < 0.8]
    assert len(set(during)) >= 3 and during == sorted(during)


def test_without_source_code_the_version_alone_decides(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A packaged app ships bytecode only: inspect.getsource fails there."""
    import inspect

    def no_source(obj: object) -> str:
        raise OSError("could not get source code")

    monkeypatch.setattr(inspect, "getsource", no_source)
    ort_guard.source_hash.cache_clear()  # hashes are kept per function
    request.addfinalizer(ort_guard.source_hash.cache_clear)
    assert ort_guard.source_hash(ort_guard.replaced_functions()["ONNXModel.remove_node"]) is None
    assert ort_guard.unsupported_reason() is None
    monkeypatch.setattr(ort_guard, "SUPPORTED_VERSION", "0.0.1")
    assert "0.0.1" in (ort_guard.unsupported_reason() or "")
