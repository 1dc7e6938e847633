"""Calls to the device runner (:mod:`device_runner`) over whatever link reaches a device: an
environment on this machine or SSH. Open the runner and ask what the device has, copy a model
(with its external data) and inputs into its cache once per content, send one request and
follow its events. Benchmarks, profiles, output runs and compiles are built on these.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import posixpath
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from edgestudio.core.formatting import human_bytes
from edgestudio.core.progress import Reporter
from edgestudio.core.remote.devices import Device, DeviceError
from edgestudio.core.remote.runner_link import DISK_MARGIN_BYTES, RunnerLink, exit_reason
from edgestudio.core.remote.ssh_link import DeviceLink

T = TypeVar("T")
Feeds = dict[str, np.ndarray]


def run_async(work: Coroutine[Any, Any, T]) -> T:
    """Run one piece of device work to its end (jobs are synchronous)."""
    return asyncio.run(work)


def open_link(device: Device) -> RunnerLink:
    """The link that reaches ``device``: an environment on this machine, or SSH."""
    if device.environment:
        from edgestudio.core.remote.env_link import EnvironmentLink

        return EnvironmentLink(device)
    return DeviceLink(device)


def install_hint(device: Device) -> str:
    """The one command that gives the device's Python what the runner needs."""
    return f"{device.python} -m pip install onnxruntime numpy"


def problems_of(device: Device, info: dict[str, Any]) -> list[str]:
    """Why the device cannot run models, each with the fix (empty: it can)."""
    if not info.get("missing"):
        return []
    return [
        f"{device.name}'s Python ({info.get('python_path') or device.python}, "
        f"{info.get('python')}) lacks {', '.join(info['missing'])}. Install it on the "
        f"device: {install_hint(device)}"
    ]


async def runner_request(
    link: RunnerLink,
    runner: str,
    request: dict[str, Any],
    on_event: Callable[[dict[str, Any]], None],
) -> str | None:
    """Run one request; None when the runner finished, else why it did not."""
    finished = False

    def event(e: dict[str, Any]) -> None:
        nonlocal finished
        finished = finished or e.get("event") == "result"
        on_event(e)

    ended = await link.start(runner, request, event)
    if finished and ended.status == 0:
        return None
    return exit_reason(link.device, ended)


async def open_runner(
    link: RunnerLink, reporter: Reporter, fraction: float
) -> tuple[str, dict[str, Any]]:
    """The runner's path on the device and what the device has."""
    reporter.stage(f"{link.device.name}: connecting to {link.device.address}", fraction)
    await link.find_home()
    runner = await link.install_runner()
    info: dict[str, Any] = {}
    failure = await runner_request(
        link,
        runner,
        {"op": "check", "cache": link.cache},
        lambda e: info.update(e.get("info") or {}),
    )
    if failure:
        raise DeviceError(f"checking {link.device.name} failed: {failure}")
    return runner, info


async def open_usable_runner(link: RunnerLink, reporter: Reporter) -> tuple[str, dict[str, Any]]:
    """:func:`open_runner`, then an error (with its fix) unless the device can run models."""
    runner, info = await open_runner(link, reporter, 0.05)
    problems = problems_of(link.device, info)
    if problems:
        raise DeviceError(problems[0])
    return runner, info


async def open_runner_for(
    link: RunnerLink, provider: str, reporter: Reporter
) -> tuple[str, dict[str, Any]]:
    """:func:`open_usable_runner`, then an error unless the device has ``provider``."""
    runner, info = await open_usable_runner(link, reporter)
    device = link.device
    if provider not in info.get("providers", []):
        raise DeviceError(
            f"{provider} is not in {device.name}'s onnxruntime {info.get('onnxruntime')} "
            f"(it has {', '.join(info.get('providers', []))})."
        )
    return runner, info


async def _check(device: Device, reporter: Reporter) -> dict[str, Any]:
    async with open_link(device) as link:
        _, info = await open_runner(link, reporter, 0.1)
    return info


def check_device(device: Device, reporter: Reporter) -> dict[str, Any]:
    """What ``device`` has (OS, CPU flags, memory, Python, onnxruntime, providers, free disk),
    its name and address, and ``problems``: why it cannot run models, each with the fix."""
    info = run_async(_check(device, reporter))
    return {
        **info,
        "name": device.name,
        "address": device.address,
        "problems": problems_of(device, info),
    }


# ----- copies ---------------------------------------------------------------------------------
def model_files(path: Path) -> list[Path]:
    """The model file and the external data files it reads."""
    import onnx

    from edgestudio.core.model.external_data import check_external_data

    proto = onnx.load(str(path), load_external_data=False)
    return [path] + [path.parent / f.location for f in check_external_data(proto, path.parent)]


def content_hash(files: list[Path], root: Path) -> str:
    """A name for ``files`` by their content and place under ``root``: the device's cache
    folder, so an unchanged model is copied once."""
    from edgestudio.core.paths import file_hash

    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.relative_to(root).as_posix()}\0{file_hash(f)}\0".encode())
    return digest.hexdigest()[:24]


async def copy_model(
    link: RunnerLink, path: Path, free_bytes: int, reporter: Reporter, fraction: float
) -> str:
    """The model's path on the device, copied (with its external data) unless already there."""
    files = model_files(path)
    folder = posixpath.join(link.cache, "models", content_hash(files, path.parent))
    targets = [
        (f, f.stat().st_size, posixpath.join(folder, f.relative_to(path.parent).as_posix()))
        for f in files
    ]
    remote = targets[0][2]
    absent = await link.missing([target for _, _, target in targets])
    missing = [t for t in targets if t[2] in absent]
    need = sum(size for _, size, _ in missing)
    if missing and need + DISK_MARGIN_BYTES > free_bytes:
        raise DeviceError(
            f"{link.device.name} has {human_bytes(free_bytes)} free in {link.cache}; "
            f"{path.name} needs {human_bytes(need)} (and {human_bytes(DISK_MARGIN_BYTES)} kept "
            "free). Free some space on the device (its cache can be deleted)."
        )
    if not missing:
        reporter.log(f"{link.device.name}: {path.name} is already on the device")
        return remote

    def progress(sent: int, total: int) -> None:
        reporter.stage(
            f"{link.device.name}: copying {path.name} "
            f"({human_bytes(sent)} of {human_bytes(total)})",
            fraction,
        )

    await link.upload(missing, progress)
    reporter.log(f"{link.device.name}: copied {path.name} ({human_bytes(need)})")
    return remote


async def copy_feeds(link: RunnerLink, feeds: Feeds) -> str:
    """The inputs as an .npz on the device (by content)."""
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **feeds)
    data = buffer.getvalue()
    target = posixpath.join(link.cache, "feeds", f"{hashlib.sha256(data).hexdigest()[:24]}.npz")
    await link.upload_bytes(data, target)
    return target
