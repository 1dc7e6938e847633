"""The device runner in another Python environment on this machine: a second onnxruntime build.

Some execution providers ship as their own onnxruntime package that cannot live beside ours
(``onnxruntime-openvino`` brings an ``onnxruntime`` module of its own, 1.24). Such an environment
is a *device* whose address is ``env:PYTHON``: the same runner, request and statistics as a
device reached over SSH, started as a child process instead, with its models and inputs kept in
the per-user cache (hard links where the file system allows, so a model is not copied twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgestudio.core.paths import cache_dir
from edgestudio.core.remote.devices import Device, DeviceError
from edgestudio.core.remote.runner_link import (
    LinkLostError,
    RunnerExit,
    read_event,
    runner_name,
    runner_source,
)

# Our own environment's variables would make the other Python import our packages, not its own.
_NOT_INHERITED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")


class EnvironmentLink:
    """The runner of ``device`` (an ``env:`` device) as a child process (use ``async with``)."""

    def __init__(self, device: Device) -> None:
        self.device = device

    async def __aenter__(self) -> EnvironmentLink:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    @property
    def cache(self) -> str:
        """Where this environment's runner, models and inputs are kept."""
        return str(cache_dir() / "environments" / self.device.name)

    async def find_home(self) -> None:
        """Make sure the environment's Python is there (one that does not start is said by
        the runner's first request, with its error)."""
        python = self.device.python
        if not Path(python).is_file():
            raise DeviceError(
                f"{self.device.name}: there is no Python at {python}. Was the environment "
                "deleted? Make it again (`make openvino-env` for OpenVINO) or remove the "
                f"device: edgestudio device remove {self.device.name}"
            )

    async def install_runner(self) -> str:
        """The runner's path in the cache (written once per version and content)."""
        source = runner_source()
        target = str(Path(self.cache) / runner_name(source))
        await self.upload_bytes(source, target)
        return target

    async def start(
        self, runner: str, request: dict[str, Any], on_event: Callable[[dict[str, Any]], None]
    ) -> RunnerExit:
        """Run the runner with ``request``, passing every event it prints to ``on_event``."""
        process = await asyncio.create_subprocess_exec(
            self.device.python,
            runner,
            env=_child_env(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=1 << 26,  # a profile's trace is one line of JSON
        )
        assert process.stdin and process.stdout and process.stderr
        errors = asyncio.ensure_future(process.stderr.read())
        try:
            # stdin stays open: its end tells the runner to stop (this process ended)
            process.stdin.write((json.dumps(request) + "\n").encode())
            await process.stdin.drain()
            async for raw in process.stdout:
                read_event(self.device, raw.decode(errors="replace"), on_event)
            status = await process.wait()
            stderr = (await errors).decode(errors="replace")
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise LinkLostError(f"the runner of {self.device.name} was lost ({exc})") from exc
        finally:
            errors.cancel()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if status < 0:  # killed by a signal: say which, as a device's runner does
            return RunnerExit(None, signal.Signals(-status).name, stderr[-2000:])
        return RunnerExit(status, None, stderr[-2000:])

    async def missing(self, paths: list[str]) -> set[str]:
        """Those of ``paths`` not in the cache yet."""
        return {p for p in paths if not Path(p).exists()}

    async def upload_bytes(self, data: bytes, target: str) -> None:
        """Write ``data`` to ``target`` unless it is there (through a temporary name)."""
        path = Path(target)
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(path.name + f".{os.getpid()}.part")
        part.write_bytes(data)
        os.replace(part, path)

    async def upload(
        self, files: list[tuple[Any, int, str]], progress: Callable[[int, int], None] | None
    ) -> None:
        """Put each ``(local path or binary file, size, target)`` in the cache: a hard link to a
        path when the file system allows, else a copy through a temporary name."""
        total = sum(size for _, size, _ in files)
        done = 0
        try:
            for source, size, target in files:
                path = Path(target)
                if not path.exists():
                    path.parent.mkdir(parents=True, exist_ok=True)
                    if isinstance(source, str | Path):
                        _link_or_copy(Path(source), path)
                    else:
                        await self.upload_bytes(source.read(), target)
                done += size
                if progress is not None:
                    progress(done, total)
        except OSError as exc:
            raise DeviceError(
                f"could not put {target} in {self.device.name}'s cache ({exc}). Is the disk "
                f"full? (the cache is {self.cache} and can be deleted)"
            ) from exc


def _link_or_copy(source: Path, target: Path) -> None:
    part = target.with_name(target.name + f".{os.getpid()}.part")
    try:
        os.link(source, part)
    except OSError:  # another file system, or links not allowed: copy
        shutil.copyfile(source, part)
    os.replace(part, target)


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env["ORT_DISABLE_TELEMETRY"] = "1"
    return env
