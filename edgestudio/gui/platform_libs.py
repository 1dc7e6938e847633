"""Does Qt's X11 platform plugin find its system libraries? (Qt-free: runs before Qt loads.)

PySide6's wheels bring Qt but not the X11 libraries its ``xcb`` plugin links against
(``libxcb-icccm4``, ``libxcb-cursor0`` since Qt 6.5, ``libxkbcommon-x11-0``, …). On a system
without them Qt aborts with "Could not load the Qt platform plugin xcb" and names none, so we
ask ``ldd`` first and say which are missing and the one command that installs them.

``python -m edgestudio.gui.platform_libs [--install]`` is what ``make run``/``make install``
call: it prints what is missing, and with ``--install`` as root with apt installs it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# Qt 6.5+ refuses to start its xcb plugin without libxcb-cursor, which it does not link
# against (ldd cannot see it): looked for by name.
_ALWAYS_NEEDED = ("libxcb-cursor.so.0",)


def xcb_plugin() -> Path | None:
    """The xcb platform plugin of the installed PySide6, or None (not installed, not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        plugin = Path(base) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if plugin.is_file():
            return plugin
    return None


def missing_libraries(plugin: Path | None = None) -> list[str]:
    """The shared libraries the xcb plugin needs that this system lacks (sonames)."""
    plugin = plugin or xcb_plugin()
    if plugin is None or shutil.which("ldd") is None:
        return []
    try:
        out = subprocess.run(
            ["ldd", str(plugin)], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    missing = dict.fromkeys(
        m.group(1) for m in re.finditer(r"^\s*(\S+) => not found", out, re.MULTILINE)
    )
    known = _linker_cache()
    for soname in _ALWAYS_NEEDED:
        if known is not None and soname not in known:
            missing[soname] = None
    return list(missing)


def _linker_cache() -> set[str] | None:
    """The sonames the dynamic linker knows (``ldconfig -p``), or None when it cannot say."""
    ldconfig = shutil.which("ldconfig") or (
        "/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None
    )
    if ldconfig is None:
        return None
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {line.split()[0] for line in out.splitlines()[1:] if line.strip()}


def debian_package(soname: str) -> str:
    """Debian's package name for a library soname (its naming policy: ``libxcb-icccm.so.4`` →
    ``libxcb-icccm4``, ``libxkbcommon-x11.so.0`` → ``libxkbcommon-x11-0``)."""
    match = re.match(r"^(lib[^/]+?)\.so\.(\d+)", soname)
    if match is None:
        return soname
    name, version = match.group(1).lower(), match.group(2)
    return f"{name}-{version}" if name[-1].isdigit() else f"{name}{version}"


def install_command(sonames: list[str]) -> str:
    """The one command that installs ``sonames`` on Debian or Ubuntu."""
    packages = " ".join(dict.fromkeys(debian_package(s) for s in sonames))
    return f"sudo apt-get install -y {packages}"


def explain(sonames: list[str]) -> str:
    """What a person reads when the window cannot open for want of ``sonames``."""
    return (
        "EdgeStudio cannot open its window: Qt's X11 platform plugin (xcb) needs system "
        f"libraries this machine lacks: {', '.join(sonames)}.\nInstall them with:\n  "
        f"{install_command(sonames)}\n(or run offscreen: QT_QPA_PLATFORM=offscreen)"
    )


def xcb_will_be_used() -> bool:
    """True when Qt would pick its xcb plugin: on Linux, with an X display and no other
    platform asked for (Wayland sessions use it too, through XWayland, unless told not to)."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform and not platform.startswith("xcb"):
        return False
    return (
        sys.platform.startswith("linux")
        and bool(os.environ.get("DISPLAY"))
        and (platform.startswith("xcb") or not os.environ.get("WAYLAND_DISPLAY"))
    )


def main(argv: list[str] | None = None) -> int:
    """Report missing libraries; with ``--install``, install them when root with apt."""
    args = sys.argv[1:] if argv is None else argv
    missing = missing_libraries()
    if not missing:
        return 0
    packages = [debian_package(s) for s in missing]
    if "--install" in args and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"platform libraries: installing {' '.join(packages)}", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
        done = subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env, check=False)
        if done.returncode == 0 and not missing_libraries():
            return 0
    print(explain(missing_libraries() or missing), file=sys.stderr)
    return 0  # said; the tests and offscreen runs need no X11 libraries


if __name__ == "__main__":
    sys.exit(main())
