"""What every way of reaching the device runner shares: how it ended, why, and its events.

Two links start :mod:`device_runner`: :class:`~edgestudio.core.remote.ssh_link.DeviceLink` on a
device over SSH, :class:`~edgestudio.core.remote.env_link.EnvironmentLink` in another Python
environment on this machine (OpenVINO's onnxruntime, a GPU build). Benchmarks and profiles talk
to either through :class:`RunnerLink`, so a figure from an environment and one from a device come
from the same loop and the same statistics.
"""

from __future__ import annotations

import hashlib
import json
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from edgestudio.core.remote import device_runner
from edgestudio.core.remote.devices import Device, DeviceError

DISK_MARGIN_BYTES = 64 << 20  # left free where the models are kept, after a copy


class RunnerProtocolError(DeviceError):
    """The runner said something this version does not understand."""


class LinkLostError(DeviceError):
    """The connection to the runner ended in the middle of the work."""


@dataclass(frozen=True)
class RunnerExit:
    """How the runner ended: its status, or the signal that killed it, and its stderr's end."""

    status: int | None
    signal: str | None
    stderr: str


class RunnerLink(Protocol):
    """An open way to one device's runner (``async with``): its files and its runs."""

    device: Device

    @property
    def cache(self) -> str:
        """The folder where the runner, models and inputs are kept (absolute, there)."""
        ...

    async def __aenter__(self) -> RunnerLink: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def find_home(self) -> None:
        """Make sure the device's Python runs (a clear error when it does not)."""

    async def install_runner(self) -> str:
        """The runner's path there, copied once per version and content."""
        ...

    async def start(
        self, runner: str, request: dict[str, Any], on_event: Callable[[dict[str, Any]], None]
    ) -> RunnerExit:
        """Run ``runner`` with ``request``, passing every event it prints to ``on_event``."""
        ...

    async def missing(self, paths: list[str]) -> set[str]:
        """Those of ``paths`` not there yet."""
        ...

    async def upload_bytes(self, data: bytes, target: str) -> None:
        """Write ``data`` to ``target`` unless it is there."""

    async def upload(
        self, files: list[tuple[Any, int, str]], progress: Callable[[int, int], None] | None
    ) -> None:
        """Copy each ``(local path or binary file, size, target)`` not yet there."""


def runner_source() -> bytes:
    """The runner's source, as it is copied to a device."""
    # .with_suffix: a frozen app's module is a .pyc in its archive, its source a data file
    return Path(device_runner.__file__).with_suffix(".py").read_bytes()


def runner_name(source: bytes) -> str:
    """The runner's file name there: a new version or content never reuses an old copy."""
    return f"runner-{device_runner.RUNNER_VERSION}-{hashlib.sha256(source).hexdigest()[:12]}.py"


def read_event(device: Device, line: str, on_event: Callable[[dict[str, Any]], None]) -> None:
    """Pass one line of the runner's stdout to ``on_event`` when it is an event (other lines,
    an EP's banner, are not the protocol's)."""
    if not line.startswith("{"):
        return
    try:
        event = json.loads(line)
    except ValueError as exc:  # never a crash of the job: say what came
        raise RunnerProtocolError(
            f"the runner on {device.name} sent a line that is not JSON ({exc}): {line[:200]!r}"
        ) from exc
    on_event(event)


def exit_reason(device: Device, ended: RunnerExit) -> str:
    """Why the runner stopped early, in words."""
    if ended.signal:
        name = ended.signal if ended.signal.startswith("SIG") else f"SIG{ended.signal}"
        return (
            f"the runner crashed on {device.name} ({name}): most likely its onnxruntime "
            "failed inside native code" + _tail(ended.stderr)
        )
    if ended.status is not None and ended.status > 128:  # shells report a signal as 128 + n
        try:
            name = signal.Signals(ended.status - 128).name
        except ValueError:
            name = f"signal {ended.status - 128}"
        return f"the runner crashed on {device.name} ({name})" + _tail(ended.stderr)
    return f"the runner on {device.name} stopped with status {ended.status}" + _tail(ended.stderr)


def _tail(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return f": {lines[-1].strip()}" if lines else ""
