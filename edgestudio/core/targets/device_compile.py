"""Compiling for the Hexagon NPU on a device that has the QNN package (a Snapdragon board over
SSH, or another environment here): the model and its inputs are copied there, the device runner
compiles it with the device's own onnxruntime and QNN libraries, reloads the context binary and
runs it beside the session that wrote it, and the files come back."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgestudio.core.paths import atomic_target
from edgestudio.core.progress import Reporter
from edgestudio.core.remote.devices import Device, DeviceError, device_named
from edgestudio.core.remote.runner_calls import (
    copy_feeds,
    copy_model,
    open_link,
    open_usable_runner,
    run_async,
    runner_request,
)

QNN_EP = "QNNExecutionProvider"


@dataclass(frozen=True)
class DeviceCompiled:
    """What a device compiled: the files written (the context model first), the largest
    difference between the reloaded binary's outputs and the compiling session's, and which
    QNN build did it."""

    files: list[str]
    difference: float
    provider: str


def qnn_on(info: dict[str, Any]) -> str:
    """The QNN build a device's check found, in words ("" when it has none)."""
    if info.get("qnn"):
        return f"onnxruntime-qnn {info['qnn']}"
    if QNN_EP in info.get("providers", []):
        return f"onnxruntime {info.get('onnxruntime')} with QNN"
    return ""


def compile_on_device(
    name: str,
    model: Path,
    feeds: dict[str, np.ndarray],
    htp_arch: str,
    soc_model: str,
    context_name: str,
    folder: Path,
    reporter: Reporter,
) -> DeviceCompiled:
    """Compile ``model`` on the device called ``name`` for HTP ``htp_arch``; its files are
    written into ``folder`` (atomically, each), the context model as ``context_name``."""
    settings = {"htp_arch": htp_arch, "soc_model": soc_model, "name": context_name}
    return run_async(_compile(device_named(name), model, feeds, settings, folder, reporter))


async def _compile(
    device: Device,
    model: Path,
    feeds: dict[str, np.ndarray],
    settings: dict[str, str],
    folder: Path,
    reporter: Reporter,
) -> DeviceCompiled:
    parts: dict[str, list[bytes]] = {}
    done: dict[str, Any] = {}
    errors: list[str] = []

    def on_event(e: dict[str, Any]) -> None:
        if e.get("event") == "chunk":
            parts.setdefault(str(e["name"]), []).append(base64.b64decode(e["data"]))
        elif e.get("event") == "compiled":
            done.update(e)
        elif e.get("event") == "stage":
            reporter.stage(f"{device.name}: {e.get('text')}", 0.2 + 0.6 * float(e["fraction"]))
        elif e.get("event") == "error":
            errors.append(str(e.get("error")))

    async with open_link(device) as link:
        runner, info = await open_usable_runner(link, reporter)
        build = qnn_on(info)
        if not build:
            raise DeviceError(
                f"{device.name}'s Python ({info.get('python_path') or device.python}) has no "
                f"QNN execution provider: install it there ({device.python} -m pip install "
                "onnxruntime-qnn), or compile on this machine (no --device)."
            )
        request = {
            "op": "compile",
            "model": await copy_model(link, model, int(info["free_bytes"]), reporter, 0.1),
            "feeds": await copy_feeds(link, feeds),
            **settings,
        }
        failure = await runner_request(link, runner, request, on_event)
    if failure or errors or not done:
        why = errors[0] if errors else failure or "the device sent no compiled files"
        raise DeviceError(f"Compiling on {device.name} with {build} failed: {why}")
    files = [str(f) for f in done["files"]]
    for file in files:
        if file not in parts or Path(file).name != file:
            raise DeviceError(f"{device.name} named a file it did not send: {file}")
        with atomic_target(folder / file) as target:
            target.write_bytes(b"".join(parts[file]))
    return DeviceCompiled(files, float(done["difference"]), f"{build} on {device.name}")
