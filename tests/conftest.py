"""Shared fixtures: offscreen Qt, isolated settings, test-built models, onnx's conformance suite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
# A key written under one name and read under another fails here instead of vanishing.
os.environ["EDGESTUDIO_STRICT_JSON"] = "1"

from tests import models

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "resources" / "samples" / "digits_cnn.onnx"


@pytest.fixture(scope="session")
def qapp_cls() -> type:
    """Run the GUI tests on EdgeStudio's own QApplication subclass."""
    from edgestudio.gui.app import EdgeStudioApplication

    return EdgeStudioApplication


@pytest.fixture
def sample_model() -> Path:
    """The bundled digits CNN."""
    return SAMPLE


@pytest.fixture
def conv_model(tmp_path: Path) -> Path:
    """A small Conv/Relu/Gemm model saved in a temp folder."""
    return models.save(models.conv_relu_gemm(), tmp_path / "conv.onnx")


@pytest.fixture(scope="session")
def node_suite_models(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """onnx's backend node test models, regenerated offline (~1,900 tiny models, ~7 s)."""
    from tests.onnx_suite import write_node_suite

    return write_node_suite(tmp_path_factory.mktemp("onnx_suite"))


@pytest.fixture(scope="session")
def light_zoo_models() -> list[Path]:
    """The nine model-zoo architectures (AlexNet … DenseNet121) shipped in the onnx wheel."""
    import onnx

    root = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(root.glob("*.onnx"))


@pytest.fixture
def isolated_settings(tmp_path: Path) -> Iterator[object]:
    """A QSettings backed by a temp ini file, so tests never touch the user's settings."""
    from PySide6.QtCore import QSettings

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    yield settings
    settings.sync()


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test gets its own cache and data folders (input specifications, remembered inputs,
    the last workspace of each model), so no test sees another's results or the user's; workers
    inherit them through the environment."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))


@pytest.fixture(autouse=True)
def _workers_only_in_e2e(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A test that starts a worker process is an end-to-end test: marked e2e, it runs in
    `make test-e2e` and CI; unmarked, it fails here, naming the rule (the fast tier stays free
    of process start-ups)."""
    if request.node.get_closest_marker("e2e") is not None:
        yield
        return
    from edgestudio.jobs import launch

    started: list[list[str]] = []
    real = launch.spawn

    def spawn(args: list[str], *rest: Any, **kwargs: Any) -> Any:
        started.append(args)
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(launch, "spawn", spawn)
    yield
    if started:
        pytest.fail(
            f"this test started {len(started)} worker process(es): mark it @pytest.mark.e2e",
            pytrace=False,
        )
