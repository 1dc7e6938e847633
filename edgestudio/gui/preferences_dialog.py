"""Preferences: default providers and threads, check tolerance, output names, theme (kept in
QSettings, with a Reset button) and the target devices (kept with the CLI's)."""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QSpinBox,
    QStyleFactory,
    QWidget,
)

from edgestudio.core.perf.providers import resolve_provider, short_name
from edgestudio.core.serialise import to_json
from edgestudio.core.workspace.preferences import THEMES, Preferences
from edgestudio.gui.perf.devices_box import DevicesBox

_KEY = "preferences"


def load_preferences(settings: QSettings) -> Preferences:
    """Stored preferences (defaults where nothing was stored)."""
    value = settings.value(_KEY, {})
    return Preferences.from_settings(value if isinstance(value, dict) else {})


def save_preferences(settings: QSettings, prefs: Preferences) -> None:
    """Store ``prefs``."""
    settings.setValue(_KEY, to_json(prefs))


def apply_theme(theme: str) -> None:
    """Light or dark Fusion palette, or the platform's own look."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    if theme == "system":
        app.setPalette(app.style().standardPalette())
        return
    app.setStyle(QStyleFactory.create("Fusion"))
    palette = QPalette()
    if theme == "dark":
        role = QPalette.ColorRole
        colours = {
            role.Window: "#2b2b2b",
            role.WindowText: "#e6e6e6",
            role.Base: "#1f1f1f",
            role.AlternateBase: "#2f2f2f",
            role.Text: "#e6e6e6",
            role.Button: "#353535",
            role.ButtonText: "#e6e6e6",
            role.Highlight: "#3d7ab8",
            role.HighlightedText: "#ffffff",
            role.ToolTipBase: "#353535",
            role.ToolTipText: "#e6e6e6",
        }
        for which, colour in colours.items():
            palette.setColor(which, QColor(colour))
    app.setPalette(palette)


class PreferencesDialog(QDialog):
    """Edits :class:`Preferences`; OK stores them, Reset restores the defaults."""

    def __init__(self, prefs: Preferences, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.setObjectName("preferences_dialog")
        self.setMinimumWidth(560)
        self.providers = QLineEdit(",".join(short_name(p) for p in prefs.providers))
        self.threads = QLineEdit(",".join(str(t) for t in prefs.threads))
        self.atol = QLineEdit(f"{prefs.atol:g}")
        self.rtol = QLineEdit(f"{prefs.rtol:g}")
        self.output_pattern = QLineEdit(prefs.output_pattern)
        self.output_pattern.setToolTip(
            "{folder}: the model's folder, {stem}: its name, "
            "{suffix}: what the job adds (opset18, qdq, …)"
        )
        self.theme = QComboBox()
        self.theme.addItems(["follow system", "light", "dark"])
        self.theme.setCurrentIndex(THEMES.index(prefs.theme))
        self.ray_address = QLineEdit(prefs.ray_address)
        self.ray_address.setPlaceholderText("none: auto-tune runs on this machine")
        self.ray_address.setToolTip(
            "A Ray cluster's address (ray://host:10001, or 'local' to "
            "start one here) where auto-tune runs its candidates; "
            "needs pip install 'edgestudio[cluster]'"
        )
        self.parallel_jobs = QSpinBox()
        self.parallel_jobs.setRange(1, 16)
        self.parallel_jobs.setValue(prefs.parallel_jobs)
        self.parallel_jobs.setToolTip(
            "How many jobs run at once; the others wait in the Jobs "
            "panel. Auto-tune's candidates are jobs too. A benchmark "
            "always runs alone."
        )
        form = QFormLayout(self)
        form.addRow("Execution providers:", self.providers)
        form.addRow("Intra-op threads:", self.threads)
        form.addRow("Check atol:", self.atol)
        form.addRow("Check rtol:", self.rtol)
        form.addRow("Output names:", self.output_pattern)
        form.addRow("Theme:", self.theme)
        form.addRow("Jobs at once:", self.parallel_jobs)
        form.addRow("Cluster (Ray):", self.ray_address)
        # Devices are stored when added or removed (the CLI shares the list), not on OK.
        self.devices = DevicesBox(self)
        form.addRow(self.devices)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Cancel
            | QDialogButtonBox.StandardButton.Reset
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        reset = buttons.button(QDialogButtonBox.StandardButton.Reset)
        assert reset is not None
        reset.clicked.connect(self.reset)
        form.addRow(buttons)

    def preferences(self) -> Preferences:
        """The preferences as typed (unusable fields fall back to defaults)."""
        return Preferences.from_settings(
            {
                "providers": [
                    resolve_provider(p) for p in self.providers.text().split(",") if p.strip()
                ],
                "threads": self.threads.text(),
                "atol": self.atol.text(),
                "rtol": self.rtol.text(),
                "output_pattern": self.output_pattern.text(),
                "theme": THEMES[self.theme.currentIndex()],
                "ray_address": self.ray_address.text().strip(),
                "parallel_jobs": self.parallel_jobs.value(),
            }
        )

    def reset(self) -> None:
        """Put every field back to its default."""
        d = Preferences()
        self.providers.setText(",".join(short_name(p) for p in d.providers))
        self.threads.setText(",".join(str(t) for t in d.threads))
        self.atol.setText(f"{d.atol:g}")
        self.rtol.setText(f"{d.rtol:g}")
        self.output_pattern.setText(d.output_pattern)
        self.theme.setCurrentIndex(THEMES.index(d.theme))
        self.ray_address.setText(d.ray_address)
        self.parallel_jobs.setValue(d.parallel_jobs)
