"""PyTorch export through the worker: dynamic batch, validated at two batch sizes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import onnx
import pytest

from edgestudio.core.convert.convert_recipes import DimChange
from edgestudio.core.convert.export_recipes import ExportRecipe, TorchInput
from edgestudio.jobs.runner import JobState
from edgestudio.jobs.scheduler import run_job

NO_TORCH = "PyTorch export needs the torch extra: pip install 'edgestudio[torch]'"
if importlib.util.find_spec("torch") is None:
    pytest.skip(reason=NO_TORCH, allow_module_level=True)


MAKE_FILES = """
import sys, torch
class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 6 * 6, 5)
    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))
torch.manual_seed(0)
net = SmallNet().eval()
example = torch.randn(2, 1, 6, 6)
ep = torch.export.export(net, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
torch.export.save(ep, sys.argv[1] + "/net.pt2")
torch.jit.save(torch.jit.trace(net, example), sys.argv[1] + "/net.pt")
"""


@pytest.fixture(scope="module")
def pt_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Made in a child process: like the app, the test process never imports torch beside Qt."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("torch")
    subprocess.run([sys.executable, "-c", MAKE_FILES, str(folder)], check=True, timeout=300)
    return {"pt2": folder / "net.pt2", "pt": folder / "net.pt"}


@pytest.mark.e2e
@pytest.mark.parametrize(("kind", "exporter"), [("pt2", "dynamo"), ("pt", "legacy")])
def test_export_dynamic_batch_checked_at_two_sizes(
    tmp_path: Path, pt_files: dict[str, Path], kind: str, exporter: str
) -> None:
    out = tmp_path / "net.onnx"
    recipe = ExportRecipe(
        model=str(pt_files[kind]),
        output=str(out),
        inputs=(TorchInput("x", (2, 1, 6, 6)),),
        output_names=("logits",),
        opset=18,
        dynamic=(DimChange("x", 0, "batch"),),
        exporter=exporter,
    )
    job = run_job(recipe, timeout=300)
    assert job.state is JobState.SUCCEEDED, (job.error, job.stderr_tail)
    check = job.report.check  # type: ignore[union-attr]
    assert check is not None and check.passed, check
    assert [c.label for c in check.cases] == ["as specified (x 2x1x6x6)", "batch=3 (x 3x1x6x6)"]
    model = onnx.load(str(out))
    assert model.graph.input[0].name == "x"
    assert model.graph.output[0].name == "logits"
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param


@pytest.mark.e2e
def test_unloadable_file_is_a_clear_failure(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pt2"
    bogus.write_bytes(b"not a pytorch file")
    recipe = ExportRecipe(
        model=str(bogus), output=str(tmp_path / "o.onnx"), inputs=(TorchInput("x", (1, 4)),)
    )
    job = run_job(recipe, timeout=120)
    assert job.state is JobState.FAILED
    assert "could not load bogus.pt2" in (job.error or "")


CRAFT = """
import json, sys, zipfile, pickle
src, dst, marker = sys.argv[1], sys.argv[2], sys.argv[3]

class Payload:  # unpickling this creates the marker file: harmless, but proves code ran
    def __reduce__(self):
        return (open, (marker, "w"))

zin = zipfile.ZipFile(src)
with zipfile.ZipFile(dst, "w") as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        if info.filename.endswith("model_weights_config.json"):
            cfg = json.loads(data)
            for entry in cfg["config"].values():
                entry["use_pickle"] = True
            data = json.dumps(cfg).encode()
        elif info.filename.endswith("data/weights/weight_0"):
            data = pickle.dumps(Payload(), protocol=2)
        zout.writestr(info, data)
"""


@pytest.mark.e2e
def test_crafted_pt2_payload_never_runs(tmp_path: Path, pt_files: dict[str, Path]) -> None:
    import os
    import subprocess
    import sys

    evil, marker = tmp_path / "evil.pt2", tmp_path / "MARKER"
    subprocess.run(
        [sys.executable, "-c", CRAFT, str(pt_files["pt2"]), str(evil), str(marker)],
        check=True,
        timeout=60,
    )
    # Control: without the guard, loading the file really runs the payload.
    unsafe = {**os.environ, "TORCH_FORCE_WEIGHTS_ONLY_LOAD": "0"}
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"import torch\ntry: torch.export.load({str(evil)!r})\nexcept Exception: pass",
        ],
        env=unsafe,
        timeout=300,
        capture_output=True,
    )
    assert marker.exists(), "the crafted file should run code when loaded unsafely"
    marker.unlink()
    recipe = ExportRecipe(
        model=str(evil), output=str(tmp_path / "o.onnx"), inputs=(TorchInput("x", (2, 1, 6, 6)),)
    )
    job = run_job(recipe, timeout=300)
    assert job.state is JobState.FAILED
    assert "could not load evil.pt2" in (job.error or "")
    assert not marker.exists()
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.e2e
def test_torchscript_with_the_default_exporter_uses_the_one_that_reads_it(
    tmp_path: Path, pt_files: dict[str, Path]
) -> None:
    out = tmp_path / "ts.onnx"
    job = run_job(
        ExportRecipe(
            model=str(pt_files["pt"]), output=str(out), inputs=(TorchInput("x", (1, 1, 6, 6)),)
        ),
        timeout=300,
    )
    assert job.state is JobState.SUCCEEDED, job.error
    assert job.report is not None and job.report.result.exporter == "legacy"
    assert any("TorchScript" in w for w in job.report.warnings)
    assert not any("training mode" in w for w in job.report.warnings)
    assert [o.name for o in onnx.load(str(out)).graph.output] == ["output"]  # not "8"


def test_exporter_errors_are_plain_text() -> None:
    from edgestudio.core.convert.export_torch import export_failure, plain

    coloured = "\x1b[31mConstraints violated (batch)!\x1b[0m The values of batch must match"
    assert plain(coloured) == "Constraints violated (batch)! The values of batch must match"
    message = export_failure("dynamo", RuntimeError(coloured))
    assert "\x1b" not in message and "could not keep an axis dynamic" in message
