"""The real window under a real X server, driven by real input events (xdotool): what the
offscreen tests cannot see. Each step is followed by a check that the process is alive and its
window drawn; a failure names the steps, the screenshots and the app's log.

Two passes: a bare X server (no window manager: how Xvfb-based CI and kiosks run) and one with
openbox (close buttons and maximising go through a window manager). ``make sysdeps`` installs
what they need; ``make test-e2e`` runs them.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from edgestudio.resources import SAMPLE_MODEL
from tests.xserver.desktop import REPO, Desktop, missing_tools

pytestmark = pytest.mark.e2e

RESTORE = "Restore the workspace?"


def _models_with_workspaces(folder: Path, env: dict[str, str], count: int) -> list[Path]:
    """``count`` copies of the sample, each with a saved workspace (so opening one offers to
    restore it), remembered in this desktop's own per-user folders."""
    paths = []
    for k in range(count):
        path = folder / f"digits_{k}.onnx"
        shutil.copy(SAMPLE_MODEL, path)
        paths.append(path)
    script = (
        "import sys\nfrom edgestudio.cli.workspace_option import open_document\n"
        "from edgestudio.core.workspace import workspace\n"
        "for m in sys.argv[1:]:\n"
        "    w = m + '.edgestudio.json'\n"
        "    workspace.save(open_document(w, m), w)\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, *map(str, paths)], env=env, check=True, cwd=REPO, timeout=120
    )
    return paths


@pytest.fixture(params=["bare", "openbox"])
def desktop(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Desktop]:
    with_wm = request.param == "openbox"
    missing = missing_tools(with_wm)
    if missing:
        pytest.skip(reason=f"needs {', '.join(missing)} (make sysdeps installs them as root)")
    from edgestudio.gui.platform_libs import missing_libraries

    libs = missing_libraries()
    if libs:
        pytest.skip(reason=f"Qt's xcb plugin lacks {', '.join(libs)} (make sysdeps installs them)")
    session = Desktop(tmp_path, with_wm)
    try:
        yield session
    finally:
        session.close()


def _opens(d: Desktop, *keys: str) -> list[str]:
    """Press ``keys``; wait for a new window; return the new windows' titles."""
    return _opens_by(d, lambda: d.key(*keys), f"a window after {keys}")


def _opens_by(d: Desktop, act: Callable[[], None], what: str) -> list[str]:
    """Do ``act``; wait for a new window (``what``); return the new windows' titles."""
    before = set(d.state().get("windows", []))
    act()
    state = d.wait_for(lambda s: bool(set(s["windows"]) - before), what)
    return sorted(set(state["windows"]) - before)


def _dismissed(d: Desktop, titles: list[str], *keys: str) -> None:
    d.key(*keys)
    for title in titles:
        d.window_closed(title)


def _widget(state: dict[str, Any], name: str) -> dict[str, Any]:
    """A watched widget's place, state and text (empty while it is not on screen)."""
    return dict(state.get("widgets", {}).get(name, {}))


def _click(d: Desktop, at: list[int]) -> None:
    d.xdotool("mousemove", str(at[0]), str(at[1]), "click", "1")
    time.sleep(0.3)


def _compile_on_the_device(d: Desktop, folder: Path) -> None:
    """Performance › Target: "board" chosen in the *on* box by pointer and keys, Compile
    clicked, the suggested file taken with Enter; the device compiles, reloads and runs the
    binary, and the view says so."""
    _click(d, d.state()["panel_tabs"]["Performance"])
    d.wait_for(lambda s: s["panel"] == "Performance", "the Performance panel")
    views = d.wait_for(
        lambda s: bool(_widget(s, "performance_views")), "the Performance panel's views"
    )
    _click(d, _widget(views, "performance_views")["tabs"]["Target"])
    box = d.wait_for(lambda s: bool(_widget(s, "compile_on")), "the Target view's 'on' box")
    d.check("Performance › Target shown by clicks")
    _click(d, _widget(box, "compile_on")["at"])  # opens its list
    d.key("Down", "Return")
    state = d.wait_for(
        lambda s: _widget(s, "compile_on").get("text") == "board", "'board' chosen in the 'on' box"
    )
    d.check("the device chosen in the 'on' box with Down, Enter")
    assert _widget(state, "compile_for_target")["enabled"], d.failure("Compile is disabled")
    titles = _opens_by(
        d, lambda: _click(d, _widget(state, "compile_for_target")["at"]), "the file dialog"
    )
    d.check(f"Compile for the NPU… clicked opens {titles}")
    _dismissed(d, titles, "Return")  # the suggested file, beside the model
    state = d.wait_for(
        lambda s: "Compiled" in _widget(s, "target_compiled").get("text", ""),
        "the compile on the device to finish",
        240,
    )
    d.check("compiled on the device, proven there")
    said = _widget(state, "target_compiled")["text"]
    assert "on board" in said, said
    assert list(folder.glob("*_qnn_ctx.onnx")), d.failure("no compiled model was written")


def test_a_person_drives_the_real_window(desktop: Desktop, tmp_path: Path) -> None:
    d = desktop
    m0, m1, m2, m3 = _models_with_workspaces(tmp_path, d.env, 4)

    # Start-up with a model that has a saved workspace; Escape on the offer to restore it
    # (a segfault before: the box's Escape button pointed at a deleted button).
    d.start(m0)
    d.window_open(RESTORE, 60)
    d.check("start with a model that has a workspace")
    d.key("Escape")
    d.window_closed(RESTORE)
    d.check("Escape on 'Restore the workspace?'")

    # Open by Ctrl+O: cancelled with Escape, then a path typed and Enter.
    dialog = _opens(d, "ctrl+o")
    d.check("Ctrl+O shows the file dialog")
    _dismissed(d, dialog, "Escape")
    d.check("Escape on the file dialog")
    dialog = _opens(d, "ctrl+o")
    d.type(str(m1))
    d.key("Return")
    d.window_open(RESTORE, 60)
    d.wait_for(lambda s: m1.name in s["documents"], "the typed model to open")
    d.check("open a typed path with Enter")
    d.key("Return")  # Yes, the default: restore
    d.window_closed(RESTORE)
    d.check("Enter on 'Restore the workspace?' restores")

    dialog = _opens(d, "ctrl+o")
    d.type(str(m2))
    d.key("Return")
    d.window_open(RESTORE, 60)
    if d.window_manager:
        d.wm("-c", RESTORE)  # the title bar's close button, as the window manager sends it
        d.window_closed(RESTORE)
        d.check("the restore offer closed by its close button")
    else:
        d.key("Tab", "space")  # focus No, press it
        d.window_closed(RESTORE)
        d.check("No on 'Restore the workspace?'")

    # Ctrl+F works right after the Graph tab is clicked (it needed a click into the graph).
    tabs = d.wait_for(
        lambda s: "Graph" in s["panel_tabs"] and len(s["panel_tabs"]) > 1, "the panel tabs"
    )["panel_tabs"]
    other = next(name for name in tabs if name != "Graph")
    for name in (other, "Graph"):
        x, y = tabs[name]
        d.xdotool("mousemove", str(x), str(y), "click", "1")
        d.wait_for(lambda s, n=name: s["panel"] == n, f"the {name} panel")
        d.check(f"click the {name} tab")
    d.key("ctrl+f")
    state = d.wait_for(
        lambda s: "Find" in s["focus"]["placeholder"], "Ctrl+F to focus the graph's search field"
    )
    d.check("Ctrl+F on the Graph tab right after clicking it")
    d.type("Conv")
    d.wait_for(lambda s: s["focus"]["text"] == "Conv", "the typed search")
    d.key("Return")
    d.check("search the graph for Conv")
    d.key("F3")
    d.key("shift+F3")
    d.check("F3 / Shift+F3 step through the hits")
    assert state["focus"]["class"] == "QLineEdit"

    # Every menu opened and closed; every dialog behind a menu item dismissed.
    for menu in ("alt+f", "alt+v", "alt+t", "alt+h"):
        d.key(menu)
        d.check(f"open the menu ({menu})")
        d.key("Escape", "Escape")
        d.check(f"close the menu ({menu}) with Escape")
    d.key("alt+f", "r")
    d.key("Escape", "Escape", "Escape")
    d.check("File › Open Recent, then Escape")
    for keys, dismiss, what in (
        (("alt+f", "o"), "Escape", "File › Open…"),
        (("alt+f", "w"), "Escape", "File › Open workspace…"),
        (("ctrl+s",), "Escape", "File › Save workspace… by Ctrl+S"),
        (("alt+f", "s"), "Escape", "File › Save workspace…"),
        (("alt+f", "e"), "Escape", "File › Export report…"),
        (("alt+f", "m"), "Escape", "File › Compare with…"),
        (("alt+f", "p"), "Escape", "File › Preferences…"),
        (("ctrl+comma",), "Return", "Preferences by Ctrl+, then OK with Enter"),
        (("alt+t", "c"), "Escape", "Tools › Convert…"),
        (("alt+t", "e"), "Escape", "Tools › Export from PyTorch…"),
        (("alt+t", "q"), "Escape", "Tools › Quantize…"),
        (("alt+h", "k"), "Escape", "Help › Keyboard shortcuts"),
        (("F1",), "Return", "Keyboard shortcuts by F1, closed with Enter"),
        (("alt+h", "a"), "Return", "Help › About, closed with Enter"),
        (("alt+h", "u"), "Escape", "Help › User guide"),
        (("shift+F1",), "Escape", "the user guide by Shift+F1"),
    ):
        titles = _opens(d, *keys)
        d.check(f"{what} opens {titles}")
        _dismissed(d, titles, dismiss)
        d.check(f"{what} dismissed with {dismiss}")
    # Quantize…: "Judge on" chosen by pointer and keys (the command it adds: the form's test).
    form = _opens(d, "ctrl+shift+q")
    state = d.wait_for(lambda s: bool(_widget(s, "judge_on")), "the form's 'Judge on' box")
    first = _widget(state, "judge_on")["text"]
    _click(d, _widget(state, "judge_on")["at"])
    d.key("Down", "Return")
    state = d.wait_for(
        lambda s: _widget(s, "judge_on").get("text") not in ("", first), "another 'Judge on'"
    )
    chosen = _widget(state, "judge_on")["text"]
    d.check(f"Quantize › Judge on: {first} → {chosen} with Down, Enter")
    _dismissed(d, form, "Escape")
    # Preferences › Devices › Add… by Alt+A: an env: address typed, the dialog left by Escape
    # (nothing added), then the preferences by Escape.
    preferences = _opens(d, "ctrl+comma")
    add = _opens(d, "alt+a")
    d.check(f"Preferences › Devices › Add… by Alt+A opens {add}")
    d.key("Tab")  # from the name to the address
    d.type("env:/usr/bin/python3")
    d.check("an env: address typed in Add a device")
    _dismissed(d, add, "Escape")
    d.click_into(preferences[0])
    _dismissed(d, preferences, "Escape")
    d.check("Add a device, then Preferences, dismissed with Escape")
    # The same, kept with Enter: a device in another environment here (this Python), which
    # the app reaches and checks; Escape leaves the preferences (the device is already kept).
    preferences = _opens(d, "ctrl+comma")
    add = _opens(d, "alt+a")
    d.type("board")
    d.key("Tab")
    d.type(f"env:{sys.executable}")
    _dismissed(d, add, "Return")
    d.click_into(preferences[0])
    d.wait_for(
        lambda s: "onnxruntime" in _widget(s, "device_status").get("text", ""),
        "the added device to be checked",
        120,
    )
    d.check("a device added with Enter, and checked")
    _dismissed(d, preferences, "Escape")
    if d.window_manager:  # close buttons: a window manager's (wmctrl asks it, politely)
        titles = _opens(d, "alt+t", "a")
        d.check(f"Tools › Auto-tune… opens {titles}")
        d.wm("-c", titles[0])
        d.window_closed(titles[0])
        d.check("the Auto-tune window closed by its close button")
        titles = _opens(d, "ctrl+shift+q")
        d.wm("-c", titles[0])
        d.window_closed(titles[0])
        d.check("the Quantize form closed by its close button")

    # Tools › Check on target by its shortcut: the job runs, the graph is coloured by placement.
    if importlib.util.find_spec("onnxruntime_qnn") is not None:
        d.key("ctrl+shift+g")
        d.wait_for(lambda s: s["overlay"] == "target", "the target check to colour the graph", 180)
        d.check("Ctrl+Shift+G checks the model on the target")
        titles = _opens(d, "ctrl+shift+k")
        d.check(f"Ctrl+Shift+K (Tools › Compile for target…) opens {titles}")
        _dismissed(d, titles, "Escape")
        d.check("the compile dialog dismissed with Escape: nothing compiled")
        _compile_on_the_device(d, tmp_path)

    # Documents and panels.
    before = d.state()["current"]
    d.key("ctrl+Tab")
    d.wait_for(lambda s: s["current"] != before, "Ctrl+Tab to show the next model")
    d.check("Ctrl+Tab to the next model")
    d.key("ctrl+j")
    d.check("Ctrl+J toggles the Jobs panel")
    d.key("ctrl+j")
    d.check("Ctrl+J again")

    # Resized, maximised.
    wid = d.main_window()
    d.xdotool("windowsize", wid, "820", "560")
    d.wait_for(lambda s: s["size"][0] <= 900, "the window to shrink")
    d.check("window resized to 820×560")
    if d.window_manager:
        d.wm("-r", ":ACTIVE:", "-b", "add,maximized_vert,maximized_horz")
        d.wait_for(lambda s: s["maximized"] or s["size"][0] >= 1200, "the window maximised")
    else:
        d.xdotool("windowsize", wid, "1280", "860")
        d.wait_for(lambda s: s["size"][0] >= 1200, "the window to fill the screen")
    d.check("window maximised")
    if d.window_manager:
        d.wm("-r", ":ACTIVE:", "-b", "remove,maximized_vert,maximized_horz")
    d.xdotool("windowsize", wid, "820", "560")
    d.xdotool("windowmove", wid, "0", "0")
    d.wait_for(lambda s: s["size"][0] <= 900, "the window back to 820×560")

    # A file dropped from another X client (XDND).
    source = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("drag_source.py")), str(m3), "1000", "700"],
        env=d.env,
    )
    d.processes.append(source)
    ids = d.xdotool("search", "--sync", "--onlyvisible", "--name", "drag source").split()
    assert ids, d.failure("the drag source did not show")
    time.sleep(0.5)
    d.xdotool("mousemove", "1090", "740", "mousedown", "1")
    for x, y in ((1050, 700), (900, 600), (600, 400), (400, 300), (410, 310)):
        d.xdotool("mousemove", str(x), str(y))
        time.sleep(0.15)
    d.xdotool("mouseup", "1")
    d.wait_for(lambda s: m3.name in s["documents"], "the dropped model to open", 60)
    d.check("drop a model file from another X client")
    d.window_open(RESTORE, 30)
    d.key("Escape")
    d.window_closed(RESTORE)
    d.check("Escape on the dropped model's restore offer")

    # Close a model, then quit with Ctrl+Q.
    count = len(d.state()["documents"])
    d.key("alt+f", "c")
    d.wait_for(lambda s: len(s["documents"]) == count - 1, "File › Close to close the model")
    d.check("File › Close")
    assert len(d.steps) >= 30, d.steps
    d.key("ctrl+q")
    assert d.app is not None
    code = d.app.wait(30)
    assert code == 0, d.failure(f"Ctrl+Q ended the app with {code}")
