"""The desktop-integration files: a valid .desktop entry, the MIME type, icons that match the SVG,
the Linux install script (run for real in a temporary HOME), macOS document types and the Windows
installer's association."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import tomllib
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
LINUX = REPO / "packaging" / "linux"
ICONS = REPO / "resources" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def _desktop_entry(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if "=" in line)


def test_desktop_entry_opens_onnx_files() -> None:
    entry = _desktop_entry(LINUX / "edgestudio.desktop")
    assert entry["Type"] == "Application" and entry["Icon"] == "edgestudio"
    assert entry["Exec"] == "edgestudio %F"  # %F: several files at once
    assert "application/x-onnx;" in entry["MimeType"]


def test_mime_type_has_the_glob_and_icon() -> None:
    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    mime = ET.parse(LINUX / "edgestudio-mime.xml").getroot().find("m:mime-type", ns)
    assert mime is not None and mime.get("type") == "application/x-onnx"
    assert mime.find("m:glob", ns).get("pattern") == "*.onnx"  # type: ignore[union-attr]
    assert mime.find("m:icon", ns).get("name") == "edgestudio"  # type: ignore[union-attr]


@pytest.mark.skipif(
    shutil.which("desktop-file-validate") is None,
    reason="desktop-file-validate is not installed (make sysdeps installs "
    "desktop-file-utils where it may)",
)
def test_desktop_file_validates() -> None:
    out = subprocess.run(
        ["desktop-file-validate", str(LINUX / "edgestudio.desktop")], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr


@pytest.mark.parametrize("size", SIZES)
def test_png_icons_match_the_svg(size: int) -> None:
    """The committed PNGs are the SVG rendered now (run `make icons` after editing the SVG)."""
    sys.path.insert(0, str(REPO / "packaging"))
    try:
        from make_icons import render_png
    finally:
        sys.path.pop(0)
    import io

    committed = Image.open(ICONS / "png" / f"edgestudio-{size}.png")
    assert committed.size == (size, size) and committed.mode == "RGBA"
    fresh = Image.open(io.BytesIO(render_png(size))).convert("RGBA")
    diff = np.abs(np.asarray(committed, np.int16) - np.asarray(fresh, np.int16))
    assert diff.mean() < 1.0, "stale icon: run `make icons`"


def test_windows_and_macos_icons_hold_the_sizes() -> None:
    ico = Image.open(ICONS / "edgestudio.ico")
    assert {(16, 16), (32, 32), (48, 48), (256, 256)} <= set(ico.info["sizes"])
    assert Image.open(ICONS / "edgestudio.icns").size[0] >= 256


def _fake_app(folder: Path) -> Path:
    app = folder / "EdgeStudio"
    app.mkdir()
    exe = app / "EdgeStudio"
    exe.write_text('#!/bin/sh\necho frozen EdgeStudio "$@"\n')
    exe.chmod(0o755)
    return app


def test_install_script_registers_and_removes_everything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    app = _fake_app(tmp_path)
    run = subprocess.run(
        [str(LINUX / "install.sh"), str(app)], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    share = home / ".local" / "share"
    installed = home / ".local" / "lib" / "edgestudio" / "EdgeStudio"
    entry = _desktop_entry(share / "applications" / "edgestudio.desktop")
    assert entry["Exec"] == f'"{installed}" %F'
    assert (share / "mime" / "packages" / "edgestudio-mime.xml").is_file()
    for size in SIZES:
        assert (
            share / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "edgestudio.png"
        ).is_file()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / "edgestudio.svg").is_file()
    launcher = home / ".local" / "bin" / "edgestudio"
    assert (
        subprocess.run([str(launcher), "x.onnx"], capture_output=True, text=True).stdout
        == "frozen EdgeStudio x.onnx\n"
    )
    if shutil.which("xdg-mime") is None:  # we wrote the default association ourselves
        assert (
            "application/x-onnx=edgestudio.desktop;"
            in (home / ".config" / "mimeapps.list").read_text()
        )
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(
            ["desktop-file-validate", str(share / "applications" / "edgestudio.desktop")],
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout

    gone = subprocess.run(
        [str(LINUX / "install.sh"), "--uninstall"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gone.returncode == 0, gone.stderr
    assert not (share / "applications" / "edgestudio.desktop").exists()
    assert not installed.exists() and not launcher.is_symlink()
    assert not list((share / "icons").rglob("edgestudio.*"))


def test_install_script_refuses_a_folder_without_the_app(tmp_path: Path) -> None:
    run = subprocess.run(
        [str(LINUX / "install.sh"), str(tmp_path)],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path / "h")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0 and "make package" in run.stderr
    assert not (tmp_path / "h" / ".local" / "share" / "applications").exists()


def test_macos_bundle_declares_the_onnx_document_type() -> None:
    with open(REPO / "packaging" / "macos" / "document_types.plist", "rb") as f:
        plist = plistlib.load(f)
    doc = plist["CFBundleDocumentTypes"][0]
    assert doc["CFBundleTypeExtensions"] == ["onnx"]
    uti = plist["UTImportedTypeDeclarations"][0]
    assert doc["LSItemContentTypes"] == [uti["UTTypeIdentifier"]]
    assert uti["UTTypeTagSpecification"]["public.mime-type"] == "application/x-onnx"
    assert "document_types.plist" in (REPO / "packaging" / "edgestudio.spec").read_text()


def test_windows_installer_associates_onnx_with_the_app_version() -> None:
    iss = (REPO / "packaging" / "windows" / "edgestudio.iss").read_text()
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert f'#define AppVersion "{version}"' in iss
    assert "ChangesAssociations=yes" in iss
    assert 'Subkey: "Software\\Classes\\.onnx\\OpenWithProgids"' in iss
    assert '""{app}\\{#AppExe}"" ""%1""' in iss  # the opened file is passed on the command line
