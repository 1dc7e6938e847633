"""Preferences › Devices: the target devices reached over SSH — add (its host key shown and
trusted only when the user says so), check (what the device has, or what it lacks and the one
command that installs it), remove. The same list the CLI's ``edgestudio device`` keeps."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from edgestudio.core.formatting import human_bytes
from edgestudio.core.progress import RecordingReporter
from edgestudio.core.remote.device_info import DeviceInfo
from edgestudio.core.remote.devices import (
    Device,
    DeviceError,
    add_device,
    load_devices,
    make_device,
    remove_device,
)
from edgestudio.core.serialise import from_json
from edgestudio.gui.background import Background
from edgestudio.gui.widgets.tables import results_table

COLUMNS = ["Name", "Address", "Python"]


class DeviceDialog(QDialog):
    """Name, ssh:// address, the device's Python and an optional key file."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add a device")
        self.name = QLineEdit()
        self.name.setPlaceholderText("pi5")
        self.address = QLineEdit()
        self.address.setPlaceholderText("ssh://pi@raspberrypi.local  or  env:/path/to/python")
        self.address.setToolTip(
            "A device over SSH, or another Python environment on this machine (env:PYTHON) "
            "for an onnxruntime build that cannot live beside EdgeStudio's (OpenVINO, a GPU "
            "build)"
        )
        self.python = QLineEdit("python3")
        self.python.setToolTip(
            "The device's Python with numpy and onnxruntime, e.g. ~/edgestudio-venv/bin/python"
        )
        self.key = QLineEdit()
        self.key.setPlaceholderText("none: your SSH agent and ~/.ssh keys")
        note = QLabel("EdgeStudio logs in with your SSH agent or keys, never a stored password.")
        note.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("Name:", self.name)
        form.addRow("Address:", self.address)
        form.addRow("Python:", self.python)
        form.addRow("Key file:", self.key)
        form.addRow(note)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.address.textChanged.connect(self._address_changed)

    def _address_changed(self, text: str) -> None:
        """An ``env:`` address names its Python itself and needs no key: those fields rest."""
        from edgestudio.core.remote.devices import ENV_SCHEME

        over_ssh = not text.strip().startswith(ENV_SCHEME)
        self.python.setEnabled(over_ssh)
        self.key.setEnabled(over_ssh)

    def device(self) -> Device:
        """The device as typed (raises DeviceError when it is badly written)."""
        return make_device(
            self.name.text().strip(),
            self.address.text(),
            self.python.text(),
            self.key.text().strip(),
        )


def info_text(info: DeviceInfo) -> str:
    """A device check in a few lines of HTML."""
    import html

    if info.problems:
        return "<br>".join(
            f"<b style='color:#b3261e'>{html.escape(info.name)} cannot run "
            f"models:</b> {html.escape(p)}"
            for p in info.problems
        )
    memory = human_bytes(info.memory_bytes) if info.memory_bytes else "?"
    return (
        f"<b>{html.escape(info.name)}</b>: {html.escape(info.os)}<br>"
        f"{html.escape(info.cpu)} · {info.cores} cores · {memory} · features: "
        f"{html.escape(', '.join(info.cpu_flags) or 'none looked for')}<br>"
        f"Python {info.python} · onnxruntime {info.onnxruntime} · providers: "
        f"{html.escape(', '.join(info.providers))}"
    )


class DevicesBox(QGroupBox):
    """The device list with Add, Check and Remove; ``changed`` when the list changed."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(
            "Devices (benchmark and profile over SSH or in another environment)", parent
        )
        self.setObjectName("devices_box")
        self.background = Background(self)
        self.table = results_table(COLUMNS, "devices_table")
        self.table.setMinimumHeight(110)
        self.status = QLabel("Add a device to measure latency where the model will run.")
        self.status.setObjectName("device_status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons = QHBoxLayout()
        for label, slot in (
            ("&Add…", self.add),  # Alt+A, Alt+C, Alt+R: the buttons by keyboard
            ("&Check", self.check_selected),
            ("&Remove", self.remove_selected),
        ):
            button = QPushButton(label)
            button.clicked.connect(lambda _=False, s=slot: s())
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        self.refresh()

    def refresh(self) -> None:
        """Show the stored devices."""
        try:
            devices = list(load_devices().values())
        except DeviceError as exc:
            self.status.setText(str(exc))
            devices = []
        self.table.setRowCount(len(devices))
        for row, d in enumerate(devices):
            for col, text in enumerate((d.name, d.address, d.python)):
                self.table.setItem(row, col, QTableWidgetItem(text))

    def selected(self) -> str | None:
        """The selected device's name."""
        rows = {i.row() for i in self.table.selectedItems()}
        if len(rows) != 1:
            return None
        item = self.table.item(rows.pop(), 0)
        return item.text() if item is not None else None

    # ----- actions -----------------------------------------------------------------------------
    def add(self) -> None:
        """Ask for a device, then check its host key before it is kept."""
        dialog = DeviceDialog(self)
        if not dialog.exec():
            return
        try:
            device = dialog.device()
        except DeviceError as exc:
            self.status.setText(str(exc))
            return
        self.start_adding(device)

    def start_adding(self, device: Device) -> None:
        """Reach ``device`` for its host key (asking to trust an unknown one), keep it, check it."""
        self.status.setText(f"Reaching {device.name} at {device.address}…")
        self.background.run(
            lambda _p, _c: _host_key_state(device),
            lambda found: self._host_key_known(device, *found),
            lambda exc: self.status.setText(str(exc)),
        )

    def _host_key_known(self, device: Device, state: str, key: Any) -> None:
        from edgestudio.core.remote.ssh_link import HostKeyChangedError, trust_host_key

        if state == "changed":
            self.status.setText(str(HostKeyChangedError(device)))
            QMessageBox.critical(self, "Host key changed", str(HostKeyChangedError(device)))
            return
        if state == "unknown":
            answer = self.ask_trust(device, key.get_algorithm(), key.get_fingerprint())
            if answer != QMessageBox.StandardButton.Yes:
                self.status.setText(f"{device.name} was not added: its host key was not trusted.")
                return
            trust_host_key(device, key)
        add_device(device)
        self.refresh()
        self.changed.emit()
        self.check(device.name)

    def ask_trust(self, device: Device, algorithm: str, fingerprint: str) -> Any:
        """Ask whether to trust an unknown host key (as ssh does on first contact)."""
        return QMessageBox.question(
            self,
            "Trust this device?",
            f"The authenticity of {device.name} ({device.host}:{device.port}) can't be "
            f"established.\n\n{algorithm} key fingerprint:\n{fingerprint}\n\nTrust it only if "
            "this is the device's key (on the device: ssh-keygen -lf "
            "/etc/ssh/ssh_host_ed25519_key.pub).",
        )

    def check_selected(self) -> None:
        """Check the selected device."""
        name = self.selected()
        if name is None:
            self.status.setText("Select a device to check.")
            return
        self.check(name)

    def check(self, name: str) -> None:
        """Find what ``name`` has, off the UI thread; the answer goes in the status line."""
        self.status.setText(f"Checking {name}…")
        self.background.run(
            lambda _p, _c: _check(name),
            self._checked,
            lambda exc: self.status.setText(f"Checking {name} failed: {exc}"),
        )

    def _checked(self, info: DeviceInfo) -> None:
        self.status.setText(info_text(info))

    def remove_selected(self) -> None:
        """Forget the selected device."""
        name = self.selected()
        if name is None:
            self.status.setText("Select a device to remove.")
            return
        try:
            remove_device(name)
        except DeviceError as exc:  # the environment `make` made is listed, not stored
            self.status.setText(str(exc))
            return
        self.status.setText(f"Removed {name}.")
        self.refresh()
        self.changed.emit()


def _host_key_state(device: Device) -> tuple[str, Any]:
    if device.environment:  # a Python on this machine: no host key to trust
        return "trusted", None
    from edgestudio.core.remote.runner_calls import run_async
    from edgestudio.core.remote.ssh_link import host_key_state

    return run_async(host_key_state(device))


def _check(name: str) -> DeviceInfo:
    from edgestudio.core.remote.devices import device_named
    from edgestudio.core.remote.runner_calls import check_device

    return from_json(DeviceInfo, check_device(device_named(name), RecordingReporter()))
