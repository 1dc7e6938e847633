"""Calibration once, re-quantize in seconds: the cache is hit when only exclusions or weight
options change, missed on any change of model, data or calibration options, never changes a
byte of the result, lives in the per-user cache folder and can be turned off."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant import calib_cache
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job
from tests import models

pytestmark = pytest.mark.e2e  # every test here starts a worker process


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv(calib_cache.DISABLE_ENV, raising=False)
    return home


def _quantize(recipe: QuantRecipe, out: Path) -> tuple[bytes, str]:
    job = run_job(replace(recipe, output=str(out)))
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None
    return out.read_bytes(), job.report.result.calibration


def _recipe(tmp_path: Path, **changes: object) -> QuantRecipe:
    src = tmp_path / "m.onnx"
    if not src.exists():
        models.save(models.conv_relu_gemm(), src)
    recipe = QuantRecipe(
        model=str(src), mode="qdq", calib=DataSource(kind="synthetic", samples=8, seed=1)
    )
    return replace(recipe, **changes)  # type: ignore[arg-type]


def test_requantizing_with_other_exclusions_reuses_calibration_byte_for_byte(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, state = _quantize(_recipe(tmp_path), tmp_path / "a.onnx")
    assert state == "computed"
    assert len(list((cache_home / "edgestudio" / "calibration").glob("*.json"))) == 1
    for k, changes in enumerate(
        [
            {"exclude": ("conv",)},
            {"per_channel": True},
            {"reduce_range": True},
            {"activation_symmetric": True},
            {},
        ]
    ):
        recipe = _recipe(tmp_path, **changes)
        cached, state = _quantize(recipe, tmp_path / f"cached{k}.onnx")
        assert state == "reused", changes
        monkeypatch.setenv(calib_cache.DISABLE_ENV, "1")
        cold, state = _quantize(recipe, tmp_path / f"cold{k}.onnx")
        monkeypatch.delenv(calib_cache.DISABLE_ENV)
        assert state == "off"
        assert cached == cold, f"{changes}: the cached calibration changed the result"
    assert cached == first  # no changes: the very same model


@pytest.mark.e2e
@pytest.mark.parametrize("change", ["data_seed", "data_count", "method", "model"])
def test_any_change_of_model_data_or_calibration_options_recalibrates(
    tmp_path: Path, cache_home: Path, change: str
) -> None:
    _quantize(_recipe(tmp_path), tmp_path / "a.onnx")
    recipe = _recipe(tmp_path)
    if change == "data_seed":
        recipe = replace(recipe, calib=DataSource(kind="synthetic", samples=8, seed=2))
    elif change == "data_count":
        recipe = replace(recipe, calib=DataSource(kind="synthetic", samples=9, seed=1))
    elif change == "method":
        recipe = replace(recipe, calib_method="entropy")
    else:
        models.save(models.conv_relu_gemm(opset=13), Path(recipe.model))
    _, state = _quantize(recipe, tmp_path / "b.onnx")
    assert state == "computed"


def test_the_cache_can_be_turned_off_and_is_bounded(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(calib_cache.DISABLE_ENV, "1")
    _, state = _quantize(_recipe(tmp_path), tmp_path / "a.onnx")
    assert state == "off"
    assert not (cache_home / "edgestudio" / "calibration").exists()
    monkeypatch.delenv(calib_cache.DISABLE_ENV)
    folder = calib_cache.cache_folder()
    folder.mkdir(parents=True)
    import os

    for k in range(5):
        entry = folder / f"{k}.json"
        entry.write_bytes(b"x" * 1000)
        os.utime(entry, (1000 + k, 1000 + k))
    removed = calib_cache.evict(limit=2500)
    assert sorted(p.name for p in removed) == ["0.json", "1.json", "2.json"]  # oldest first
    assert sorted(p.name for p in folder.glob("*.json")) == ["3.json", "4.json"]


def test_preprocessing_is_kept_and_reused_and_goes_with_the_cache_switch(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgestudio.core.quant import prep_cache

    reused = "Pre-processing reused from the cache"
    monkeypatch.setenv(calib_cache.DISABLE_ENV, "1")
    job = run_job(replace(_recipe(tmp_path), output=str(tmp_path / "off.onnx")))
    assert job.state is JobState.SUCCEEDED, job.error
    assert not prep_cache.cache_folder().exists()  # off means nothing kept either
    monkeypatch.delenv(calib_cache.DISABLE_ENV)
    logs = []
    for k, changes in enumerate([{}, {"exclude": ("conv",)}]):
        job = run_job(replace(_recipe(tmp_path, **changes), output=str(tmp_path / f"{k}.onnx")))
        assert job.state is JobState.SUCCEEDED, job.error
        logs.append("\n".join(job.log))
    assert reused not in logs[0] and reused in logs[1]
    assert len(list(prep_cache.cache_folder().glob("*.onnx"))) == 1
    assert not list(prep_cache.cache_folder().glob(".*"))  # no temporary file left behind
    # another model is another entry
    models.save(models.conv_relu_gemm(opset=13), tmp_path / "m.onnx")
    job = run_job(replace(_recipe(tmp_path), output=str(tmp_path / "other.onnx")))
    assert job.state is JobState.SUCCEEDED, job.error
    assert reused not in "\n".join(job.log)
    assert len(list(prep_cache.cache_folder().glob("*.onnx"))) == 2
