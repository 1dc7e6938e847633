"""A real X session for the app: Xvfb (optionally with a window manager), the app started as a
process, real key presses and pointer moves through xdotool, and what the window shows read from
the app's state file (``EDGESTUDIO_UI_STATE``) and screenshots of the root window."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOOLS = ("Xvfb", "xdotool")
REPO = Path(__file__).resolve().parents[2]


def missing_tools(window_manager: bool) -> list[str]:
    """The programs this tier needs that are not installed (``make sysdeps`` installs them)."""
    wanted = TOOLS + (("openbox", "wmctrl") if window_manager else ())
    return [t for t in wanted if shutil.which(t) is None]


class AppDiedError(AssertionError):
    """The app's process ended during a step."""


class Desktop:
    """One X server, one app process, and the steps taken so far (kept for a failure)."""

    def __init__(self, folder: Path, window_manager: bool) -> None:
        self.folder = folder
        self.window_manager = window_manager
        self.shots = folder / "screenshots"
        self.shots.mkdir(parents=True, exist_ok=True)
        self.state_file = folder / "ui_state.json"
        self.log_path = folder / "app.log"
        self.steps: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        read, write = os.pipe()
        self.xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x860x24", "-nolisten", "tcp"],
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as r:
            self.display = f":{r.readline().strip()}"
        self.env = {
            **os.environ,
            "DISPLAY": self.display,
            "QT_QPA_PLATFORM": "xcb",
            "EDGESTUDIO_UI_STATE": str(self.state_file),
            "XDG_CONFIG_HOME": str(folder / "config"),
            "XDG_DATA_HOME": str(folder / "data"),
            "XDG_CACHE_HOME": str(folder / "cache"),
            "XDG_STATE_HOME": str(folder / "state"),
            "PYTHONFAULTHANDLER": "1",
        }
        self.env.pop("WAYLAND_DISPLAY", None)
        if window_manager:
            self.processes.append(
                subprocess.Popen(
                    ["openbox"], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
            time.sleep(0.5)
        self.app: subprocess.Popen[bytes] | None = None

    # ----- the app -------------------------------------------------------------------------
    def start(self, *models: Path, program: list[str] | None = None) -> None:
        """Start the app as a person would (its own process, a new window); ``program`` is
        how to start it (default: this Python's ``-m edgestudio``; the packaged app's
        executable for its smoke test)."""
        self.log = self.log_path.open("wb")
        command = program or [sys.executable, "-m", "edgestudio"]
        self.app = subprocess.Popen(
            [*command, "--new-window", *map(str, models)],
            env=self.env,
            cwd=REPO,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.wait_for(lambda s: bool(s.get("windows")), "the main window", 60)

    def alive(self) -> bool:
        """True while the app's process runs."""
        return self.app is not None and self.app.poll() is None

    def state(self) -> dict[str, Any]:
        """The app's last written state (empty before the first)."""
        try:
            return dict(json.loads(self.state_file.read_text()))
        except (OSError, ValueError):
            return {}

    def wait_for(
        self, condition: Callable[[dict[str, Any]], bool], what: str, timeout: float = 15.0
    ) -> dict[str, Any]:
        """Wait until the state satisfies ``condition``; fail naming ``what``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise AppDiedError(self.failure(f"the app died waiting for {what}"))
            state = self.state()
            if state and condition(state):
                return state
            time.sleep(0.1)
        raise AssertionError(self.failure(f"timed out waiting for {what}: {self.state()}"))

    def window_open(self, title: str, timeout: float = 15.0) -> dict[str, Any]:
        """Wait for a window whose title contains ``title``."""
        return self.wait_for(
            lambda s: any(title in w for w in s["windows"]), f"a window '{title}'", timeout
        )

    def window_closed(self, title: str, timeout: float = 10.0) -> dict[str, Any]:
        """Wait until no window's title contains ``title``."""
        return self.wait_for(
            lambda s: not any(title in w for w in s["windows"]), f"'{title}' to close", timeout
        )

    # ----- input ---------------------------------------------------------------------------
    def xdotool(self, *args: str) -> str:
        """Run xdotool on this display; its output."""
        done = subprocess.run(
            ["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=30
        )
        return done.stdout.strip()

    def key(self, *keys: str) -> None:
        """Press keys (xdotool names: ctrl+o, Escape, Return) on the focused window.

        With no window manager nothing gives the focus back to the main window when a dialog
        closes: as a person would click it, it is focused first."""
        if not self.window_manager and self.app is not None:
            focused = self.xdotool("getwindowfocus", "-f")
            mine = self.xdotool("search", "--pid", str(self.app.pid)).split()
            if focused not in mine:
                self.xdotool("windowfocus", "--sync", self.main_window())
                time.sleep(0.2)
        self.xdotool("key", "--delay", "60", *keys)
        time.sleep(0.25)

    def type(self, text: str) -> None:
        """Type ``text`` as key presses."""
        self.xdotool("type", "--delay", "20", text)
        time.sleep(0.2)

    def click_into(self, title: str) -> None:
        """Give the window called ``title`` the focus, as a person clicking it would (with no
        window manager nothing hands it back to a dialog's parent dialog)."""
        if self.window_manager or self.app is None:
            return
        ids = self.xdotool(
            "search", "--sync", "--onlyvisible", "--pid", str(self.app.pid), "--name", title
        ).split()
        for window in ids:  # a click on its top-left margin, where no widget takes it
            self.xdotool("mousemove", "--window", window, "4", "4", "click", "1")
            self.xdotool("windowfocus", window)
        time.sleep(0.3)

    def main_window(self) -> str:
        """The X window id of the main window."""
        ids = self.xdotool(
            "search",
            "--sync",
            "--onlyvisible",
            "--pid",
            str(self.app.pid) if self.app else "0",
            "--name",
            "EdgeStudio",
        ).split()
        return ids[0]

    def wm(self, *args: str) -> None:
        """Ask the window manager (wmctrl) to do something."""
        subprocess.run(["wmctrl", *args], env=self.env, capture_output=True, timeout=30)
        time.sleep(0.4)

    # ----- evidence ------------------------------------------------------------------------
    def check(self, step: str) -> None:
        """After ``step``: the process is alive and its window is drawn (a screenshot of the
        root window that is not blank)."""
        self.steps.append(step)
        time.sleep(0.2)
        if not self.alive():
            raise AppDiedError(self.failure(f"the app died after: {step}"))
        from PIL import ImageGrab

        shot = ImageGrab.grab(xdisplay=self.display)
        path = self.shots / f"{len(self.steps):02d}.png"
        shot.save(path)
        colours = shot.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 8, self.failure(
            f"nothing drawn after: {step} ({path})"
        )

    def failure(self, what: str) -> str:
        """A failure message that says where the screenshots and the app's log are."""
        try:
            from PIL import ImageGrab

            ImageGrab.grab(xdisplay=self.display).save(self.shots / "failure.png")
        except OSError:
            pass
        tail = (
            self.log_path.read_bytes()[-3000:].decode(errors="replace")
            if self.log_path.exists()
            else ""
        )
        return (
            f"{what}\nsteps: {' → '.join(self.steps)}\nscreenshots: {self.shots}\n"
            f"app log ({self.log_path}):\n{tail}"
        )

    def close(self) -> None:
        """End the app (if still running), the window manager and the X server."""
        for proc in [self.app, *self.processes, self.xvfb]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self.app is not None:
            self.log.close()
