"""The main window's menus and what Help shows: every action with its shortcut, the recent
files, the shortcut table, the About box."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QMessageBox, QTabWidget

from edgestudio import __version__
from edgestudio.gui.quant.quant_actions import QuantActions
from edgestudio.gui.recent_files import RecentFiles
from edgestudio.gui.widgets.message_boxes import MessageBoxes
from edgestudio.gui.window_workspaces import WorkspaceActions


class MenuHost(Protocol):
    """What the menus' actions call: the main window's own actions and parts."""

    tabs: QTabWidget
    jobs_dock: QDockWidget
    recent: RecentFiles
    messages: MessageBoxes
    workspaces: WorkspaceActions
    quant: QuantActions

    def open_dialog(self) -> None:
        """File › Open…"""

    def open_model(self, path: str | Path) -> object:
        """Open the model at ``path``."""

    def close_document(self, index: int) -> None:
        """Close the model in tab ``index``."""

    def compare_dialog(self) -> object:
        """File › Compare with…"""

    def show_preferences(self) -> object:
        """File › Preferences…"""

    def show_convert_form(self) -> object:
        """Tools › Convert…"""

    def show_export_form(self) -> object:
        """Tools › Export from PyTorch…"""

    def check_on_target(self) -> object:
        """Tools › Check on target"""

    def compile_for_target(self) -> object:
        """Tools › Compile for target…"""

    def show_user_guide(self) -> object:
        """Help › User guide"""


class WindowMenus:
    """File, View, Tools and Help of ``window``; their actions call ``host``'s methods (the
    window itself: a protocol, so that this part names what it uses and imports no window)."""

    def __init__(self, window: QMainWindow, host: MenuHost) -> None:
        self.window = window
        self.host = host
        self.recent_menu = QMenu("Open &Recent", window)

    def build(self) -> None:
        """File, View, Tools and Help, each action with its shortcut."""
        file_menu = self.window.menuBar().addMenu("&File")
        file_menu.addAction(
            self._action("&Open…", QKeySequence.StandardKey.Open, self.host.open_dialog)
        )
        file_menu.addMenu(self.recent_menu)
        self.recent_menu.aboutToShow.connect(self.fill_recent)
        self.fill_recent()
        file_menu.addAction(
            self._action(
                "&Close",
                QKeySequence.StandardKey.Close,
                lambda: self.host.close_document(self.host.tabs.currentIndex()),
            )
        )
        file_menu.addSeparator()
        file_menu.addAction(
            self._action(
                "Open &workspace…", QKeySequence("Ctrl+Shift+O"), self.host.workspaces.open_dialog
            )
        )
        file_menu.addAction(
            self._action(
                "&Save workspace…", QKeySequence.StandardKey.Save, self.host.workspaces.save
            )
        )
        file_menu.addAction(
            self._action(
                "&Export report…", QKeySequence("Ctrl+E"), self.host.workspaces.export_report
            )
        )
        file_menu.addAction(
            self._action("Co&mpare with…", QKeySequence("Ctrl+Shift+D"), self.host.compare_dialog)
        )
        file_menu.addAction(
            self._action("&Preferences…", QKeySequence("Ctrl+,"), self.host.show_preferences)
        )
        file_menu.addSeparator()
        file_menu.addAction(self._action("&Quit", QKeySequence.StandardKey.Quit, self.window.close))

        view_menu = self.window.menuBar().addMenu("&View")
        view_menu.addAction(self._action("Next model", QKeySequence("Ctrl+Tab"), self._next_tab))
        jobs_toggle = self.host.jobs_dock.toggleViewAction()
        jobs_toggle.setText("&Jobs panel")
        jobs_toggle.setShortcut(QKeySequence("Ctrl+J"))
        view_menu.addAction(jobs_toggle)

        tools = self.window.menuBar().addMenu("&Tools")
        convert = self._action(
            "&Convert opset / axes…", QKeySequence("Ctrl+Shift+C"), self.host.show_convert_form
        )
        tools.addAction(convert)
        tools.addAction(
            self._action(
                "&Export from PyTorch…", QKeySequence("Ctrl+Shift+E"), self.host.show_export_form
            )
        )
        tools.addAction(
            self._action(
                "&Quantize…", QKeySequence("Ctrl+Shift+Q"), self.host.quant.show_quantize_form
            )
        )
        tools.addAction(
            self._action("&Auto-tune…", QKeySequence("Ctrl+Shift+T"), self.host.quant.show_tune)
        )
        tools.addAction(
            self._action(
                "Check on &target (Qualcomm NPU, emulated)",
                QKeySequence("Ctrl+Shift+G"),
                self.host.check_on_target,
            )
        )
        tools.addAction(
            self._action(
                "Com&pile for target…", QKeySequence("Ctrl+Shift+K"), self.host.compile_for_target
            )
        )

        help_menu = self.window.menuBar().addMenu("&Help")
        help_menu.addAction(
            self._action("&Keyboard shortcuts", QKeySequence("F1"), self.show_shortcuts)
        )
        help_menu.addAction(
            self._action("&User guide", QKeySequence("Shift+F1"), self.host.show_user_guide)
        )
        help_menu.addAction(self._action("&About EdgeStudio", None, self.show_about))

    def _action(
        self,
        text: str,
        shortcut: QKeySequence | QKeySequence.StandardKey | None,
        slot: Callable[[], object],
    ) -> QAction:
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        # Called with no argument: triggered(checked) would otherwise fill a slot's first
        # optional parameter (save(path=False) saved nothing and asked nothing).
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _next_tab(self) -> None:
        if self.host.tabs.count():
            self.host.tabs.setCurrentIndex(
                (self.host.tabs.currentIndex() + 1) % self.host.tabs.count()
            )

    def fill_recent(self) -> None:
        """File › Open Recent: the recent models, newest first (filled each time it opens)."""
        self.recent_menu.clear()
        paths = self.host.recent.paths()
        for i, path in enumerate(paths):
            action = self.recent_menu.addAction(f"&{(i + 1) % 10} {Path(path).name}")
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _=False, p=path: self.host.open_model(p))
        if not paths:
            self.recent_menu.addAction("(no recent files)").setEnabled(False)
        else:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list").triggered.connect(self.host.recent.clear)

    def shortcut_list(self) -> list[tuple[str, str]]:
        """(keys, what they do) for every menu action with a shortcut, plus the graph's keys."""
        rows = [
            (
                a.shortcut().toString(QKeySequence.SequenceFormat.NativeText),
                a.text().replace("&", "").rstrip("…"),
            )
            for a in self.window.findChildren(QAction)
            if not a.shortcut().isEmpty()
        ]
        rows += [
            ("Ctrl+F / F3 / Shift+F3", "Graph: find, next, previous"),
            ("+ / − / wheel / pinch", "Graph: zoom"),
            ("F or 0", "Graph: readable overview"),
            ("A", "Graph: whole graph"),
            ("Esc", "Graph: clear the selection"),
            ("Right-click a node", "Graph: exclude it from quantization"),
        ]
        return rows

    def show_shortcuts(self) -> QMessageBox:
        """A table of keyboard shortcuts."""
        rows = "".join(
            f"<tr><td><b>{k}</b></td><td>&nbsp;&nbsp;{v}</td></tr>" for k, v in self.shortcut_list()
        )
        box = self.host.messages.show(
            QMessageBox.Icon.Information,
            "Keyboard shortcuts",
            f"<table width=460>{rows}</table>",
            "",
        )
        return box

    def show_about(self) -> None:
        """Show the About box with library versions."""
        from importlib import metadata

        def version(dist: str) -> str:
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                return "not installed"

        import PySide6

        rows = [
            ("onnx", version("onnx")),
            ("onnxruntime", version("onnxruntime")),
            ("PySide6", PySide6.__version__),
            ("pyqtgraph", version("pyqtgraph")),
            ("torch", version("torch")),
        ]
        table = "".join(f"<tr><td>{n}</td><td>{v}</td></tr>" for n, v in rows)
        QMessageBox.about(
            self.window,
            "About EdgeStudio",
            f"<h3>EdgeStudio {__version__}</h3><p>See, convert, quantize and benchmark ONNX "
            f"models for edge devices.</p><table>{table}</table><p>EdgeStudio works offline and "
            "sends nothing anywhere; onnxruntime's telemetry is switched off in every process.</p>",
        )
