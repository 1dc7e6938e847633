"""The core, jobs and CLI never import Qt: they run (and are tested) with Qt uninstalled."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    ["edgestudio.core.summary", "edgestudio.core.model_io", "edgestudio.core.runtime_info",
     "edgestudio.jobs", "edgestudio.cli.main", "edgestudio.__main__"],
)
def test_module_imports_without_qt(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "qt = ('PySide6', 'shiboken6', 'pyqtgraph')\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in qt]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_inspect_runs_without_qt(sample_model) -> None:
    code = (
        "import sys\n"
        "from edgestudio.cli.main import main\n"
        f"rc = main(['inspect', {str(sample_model)!r}])\n"
        "assert 'PySide6' not in sys.modules\n"
        "sys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "digits_cnn.onnx" in out.stdout


def test_telemetry_is_disabled_on_import() -> None:
    code = (
        "import os\nos.environ['ORT_DISABLE_TELEMETRY'] = '0'\nimport edgestudio\n"
        "assert os.environ['ORT_DISABLE_TELEMETRY'] == '1'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
