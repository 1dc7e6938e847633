"""The user's target devices: a name, an ``ssh://`` address, the Python to run there.

A device may also be another Python environment on this machine (address ``env:PYTHON``), for an
onnxruntime build that cannot live beside ours; ``make openvino-env`` makes one for OpenVINO,
listed as ``openvino`` without being added.

Kept in ``devices.json`` in the per-user configuration folder, shared by the window and the CLI.
No password is ever stored: a device is reached with the user's SSH keys or agent (``key``
names a private key file when it is not a default one).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.paths import config_dir, write_atomically
from edgestudio.core.serialise import from_json, to_json

LOCAL = "local"  # the name that means "this machine" wherever devices are listed
ENV_SCHEME = "env:"  # an address that names another Python environment on this machine
OPENVINO = "openvino"  # the environment `make openvino-env` makes, listed without being added
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class DeviceError(EdgeStudioError):
    """A device is unknown, badly written, or cannot be reached or used."""


@dataclass(frozen=True)
class Device:
    """One target device reached over SSH, or a Python environment here (``host`` empty)."""

    name: str
    host: str
    user: str = ""  # "" — the local user name, as ssh does
    port: int = 22
    python: str = "python3"  # the device's Python, with numpy and onnxruntime
    key: str = ""  # a private key file; "" — the agent and ~/.ssh's default keys

    @property
    def environment(self) -> bool:
        """Whether this is a Python environment on this machine (no SSH, no host key)."""
        return not self.host

    @property
    def address(self) -> str:
        """``ssh://user@host:port`` as the user wrote it (``env:PYTHON`` for an environment)."""
        if self.environment:
            return f"{ENV_SCHEME}{self.python}"
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port != 22 else ""
        return f"ssh://{user}{self.host}{port}"


def parse_address(address: str) -> tuple[str, str, int]:
    """``(user, host, port)`` of ``ssh://user@host[:port]`` (``user@host`` is accepted too)."""
    text = address.strip()
    if "://" not in text:
        text = f"ssh://{text}"
    parts = urlsplit(text)
    if parts.scheme != "ssh":
        raise DeviceError(f"'{address}' is not an ssh:// address (e.g. ssh://pi@raspberrypi.local)")
    try:
        port = parts.port or 22
    except ValueError as exc:
        raise DeviceError(f"'{address}': the port is not a number from 1 to 65535") from exc
    if not parts.hostname:
        raise DeviceError(f"'{address}' names no host (e.g. ssh://pi@raspberrypi.local)")
    return parts.username or "", parts.hostname, port


def make_device(name: str, address: str, python: str = "python3", key: str = "") -> Device:
    """A device from what the user typed, checked."""
    if name == LOCAL or not NAME_PATTERN.match(name):
        raise DeviceError(
            f"'{name}' cannot name a device: use letters, digits, '.', '_' or "
            f"'-' (and not '{LOCAL}', which means this machine)"
        )
    if address.strip().startswith(ENV_SCHEME):
        return _environment(name, address.strip()[len(ENV_SCHEME) :])
    user, host, port = parse_address(address)
    if key and not Path(key).expanduser().is_file():
        raise DeviceError(f"the key file '{key}' does not exist")
    return Device(
        name,
        host,
        user,
        port,
        python.strip() or "python3",
        str(Path(key).expanduser()) if key else "",
    )


def _environment(name: str, python: str) -> Device:
    path = Path(python).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise DeviceError(
            f"'{python}' is not a Python executable: an environment is named by its Python, "
            "e.g. env:/opt/ov-env/bin/python"
        )
    # absolute, but not resolved: a venv's python is a link whose target lacks the venv
    return Device(name, "", python=str(path.absolute()))


def made_environments() -> dict[str, Device]:
    """The environments ``make`` made beside this checkout (none in an installed app)."""
    python = Path(__file__).resolve().parents[3] / ".openvino-venv" / "bin" / "python"
    return {OPENVINO: Device(OPENVINO, "", python=str(python))} if python.is_file() else {}


def environment_for(provider: str) -> str | None:
    """The environment ``make`` made that has ``provider`` (OpenVINO's), if it is there."""
    if provider == "OpenVINOExecutionProvider" and OPENVINO in made_environments():
        return OPENVINO
    return None


def devices_file() -> Path:
    """Where the device list is kept."""
    return config_dir() / "devices.json"


def load_devices() -> dict[str, Device]:
    """The devices by name: the environments ``make`` made, then the user's (which win)."""
    return {**made_environments(), **_saved_devices()}


def _saved_devices() -> dict[str, Device]:
    """The devices the user added (none when the file does not exist yet)."""
    path = devices_file()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {d.name: d for d in from_json(list[Device], data.get("devices", []))}
    except (ValueError, KeyError, TypeError) as exc:
        raise DeviceError(f"the device list {path} is damaged ({exc}); fix or delete it") from exc


def save_devices(devices: dict[str, Device]) -> None:
    """Write the device list (atomically)."""
    path = devices_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps({"devices": to_json(list(devices.values()))}, indent=2))


def add_device(device: Device) -> None:
    """Add ``device``, replacing one of the same name."""
    devices = _saved_devices()
    devices[device.name] = device
    save_devices(devices)


def remove_device(name: str) -> None:
    """Forget the device called ``name``."""
    devices = _saved_devices()
    if devices.pop(name, None) is None:
        if name in made_environments():
            raise DeviceError(
                f"'{name}' is the environment `make` made ({made_environments()[name].python}); "
                "it is listed while that folder exists"
            )
        raise DeviceError(f"there is no device called '{name}'")
    save_devices(devices)


def device_named(name: str) -> Device:
    """The device called ``name``, or an error listing the ones there are."""
    devices = load_devices()
    if name not in devices:
        known = ", ".join(sorted(devices)) or "none yet: add one with `edgestudio device add`"
        raise DeviceError(f"there is no device called '{name}' (devices: {known})")
    return devices[name]
