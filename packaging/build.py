"""Build the one-folder desktop app with PyInstaller: ``make package``.

The result is ``dist/EdgeStudio/`` (``dist/EdgeStudio.app`` on macOS). Prints its size and where
it is; ``--clean`` starts from an empty PyInstaller cache.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "packaging" / "edgestudio.spec"
DIST = REPO / "dist"
WORK = REPO / "build" / "pyinstaller"
APP_DIR = DIST / "EdgeStudio"


def folder_size(folder: Path) -> int:
    """Bytes in every file under ``folder`` (links not followed)."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def executable(app_dir: Path = APP_DIR) -> Path:
    """The frozen app's executable inside ``app_dir``."""
    return app_dir / ("EdgeStudio.exe" if sys.platform == "win32" else "EdgeStudio")


def build(clean: bool = False) -> Path:
    """Run PyInstaller on the spec; return the app folder. Raises CalledProcessError on failure."""
    if (
        shutil.which("pyinstaller") is None
        and not (Path(sys.executable).parent / "pyinstaller").exists()
    ):
        raise SystemExit(
            "PyInstaller is not installed: run `make package` (it installs the "
            "'package' extra) or pip install -e '.[package]'."
        )
    cmd = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        str(DIST),
        "--workpath",
        str(WORK),
        str(SPEC),
    ]
    if clean:
        cmd.insert(3, "--clean")
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1", QT_QPA_PLATFORM="offscreen")
    subprocess.run(cmd, check=True, cwd=REPO, env=env)
    return APP_DIR


def main(argv: list[str] | None = None) -> int:
    """Build and report the size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clean", action="store_true", help="empty PyInstaller's cache first")
    args = parser.parse_args(argv)
    started = time.monotonic()
    app = build(clean=args.clean)
    size = folder_size(app)
    print(
        f"built {app} in {time.monotonic() - started:.0f} s: {size / 2**20:.0f} MiB; "
        f"run {executable(app)} [MODEL.onnx]"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
