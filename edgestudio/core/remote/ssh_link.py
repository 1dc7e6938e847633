"""One SSH connection to a device: host keys checked as OpenSSH does, files copied once per
content hash into the device's cache, the device runner started and its events read.

asyncssh (a well-kept, pure-Python SSH client *and* server) rather than the system ``ssh``:
the same code on Windows, macOS and Linux whether or not OpenSSH is installed, SFTP copies with
progress, exit signals of the remote process (a crashed runner says SIGSEGV), keep-alives that
notice a dropped link, and a server the tests can start on the loopback interface.

Host keys: a device's key must be in ``known_hosts`` (EdgeStudio's own, in its configuration
folder, or ``~/.ssh/known_hosts``). An unknown key raises :class:`HostKeyUnknownError` with its
fingerprint, for the caller to ask the user; a key that differs from the known one raises
:class:`HostKeyChangedError` and nothing is sent, as OpenSSH refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import posixpath
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh

from edgestudio.core.paths import config_dir
from edgestudio.core.remote.devices import Device, DeviceError
from edgestudio.core.remote.runner_link import (
    LinkLostError,
    RunnerExit,
    read_event,
    runner_name,
    runner_source,
)

CONNECT_TIMEOUT_S = 15.0
KEEPALIVE_S = 5.0  # a silent link is declared dead after KEEPALIVE_S × KEEPALIVE_COUNT
KEEPALIVE_COUNT = 3
CACHE_FOLDER = ".cache/edgestudio-device"  # below the device user's home


class HostKeyUnknownError(DeviceError):
    """The device's host key is in no known_hosts file: the user must decide to trust it."""

    def __init__(self, device: Device, key: asyncssh.SSHKey) -> None:
        self.device, self.key = device, key
        self.fingerprint = key.get_fingerprint()
        super().__init__(
            f"The authenticity of {device.name} ({device.host}:{device.port}) can't be "
            f"established: its {key.get_algorithm()} host key is {self.fingerprint}. Trust it "
            f"only if that is the device's key (`edgestudio device add` or `device check` asks)."
        )


class HostKeyChangedError(DeviceError):
    """The device presented a host key other than the one known for it: refused."""

    def __init__(self, device: Device) -> None:
        self.device = device
        super().__init__(
            f"REMOTE HOST IDENTIFICATION HAS CHANGED for {device.name} ({device.host}:"
            f"{device.port}): its host key is not the one in {known_hosts_file()} or "
            "~/.ssh/known_hosts. Someone could be intercepting the connection, or the device "
            "was reinstalled. Nothing was sent. If you know why the key changed, remove the old "
            "line from known_hosts and add the device again."
        )


def known_hosts_file() -> Path:
    """EdgeStudio's own known_hosts (the user's ``~/.ssh/known_hosts`` is read, never written)."""
    return config_dir() / "known_hosts"


def _known_hosts_files() -> list[str]:
    files = [known_hosts_file(), Path("~/.ssh/known_hosts").expanduser()]
    return [str(f) for f in files if f.is_file()]


def _host_pattern(device: Device) -> str:
    return device.host if device.port == 22 else f"[{device.host}]:{device.port}"


def trusted_keys(device: Device) -> list[asyncssh.SSHKey]:
    """The host keys known for the device's host and port."""
    files = _known_hosts_files()
    if not files:
        return []
    known = asyncssh.read_known_hosts(files)
    return list(known.match(device.host, device.host, device.port)[0])


def trust_host_key(device: Device, key: asyncssh.SSHKey) -> None:
    """Remember ``key`` as the device's host key (the user said yes)."""
    path = known_hosts_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = f"{_host_pattern(device)} {key.export_public_key().decode().strip()}\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


async def host_key_state(device: Device) -> tuple[str, asyncssh.SSHKey]:
    """``("trusted" | "unknown" | "changed", the key the device presents)``."""
    trusted = trusted_keys(device)
    key = await fetch_host_key(device, trusted)
    if not trusted:
        return "unknown", key
    return ("trusted" if key in trusted else "changed"), key


async def fetch_host_key(
    device: Device, like: list[asyncssh.SSHKey] | None = None
) -> asyncssh.SSHKey:
    """The key the device presents (no login); of the algorithms of ``like`` when given, so a
    host known by its ECDSA key is not asked for its Ed25519 one."""
    algorithms = [a.decode() for k in like or [] for a in k.sig_algorithms]
    try:
        key = await asyncio.wait_for(
            asyncssh.get_server_host_key(
                device.host, device.port, server_host_key_algs=algorithms or ()
            ),
            CONNECT_TIMEOUT_S,
        )
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
        raise DeviceError(_unreachable(device, exc)) from exc
    if key is None:
        raise DeviceError(f"{device.name} presented no host key")
    return key


def _unreachable(device: Device, exc: BaseException) -> str:
    why = (
        f"no answer within {CONNECT_TIMEOUT_S:.0f} s"
        if isinstance(exc, asyncio.TimeoutError)
        else (str(exc) or type(exc).__name__)
    )
    return (
        f"could not reach {device.name} at {device.host}:{device.port} ({why}). Is it on, on "
        "this network, and running an SSH server?"
    )


class DeviceLink:
    """An open connection to ``device`` (use ``async with``)."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self._conn: asyncssh.SSHClientConnection | None = None
        self.home = ""

    async def __aenter__(self) -> DeviceLink:
        trusted = trusted_keys(self.device)
        if not trusted:
            raise HostKeyUnknownError(self.device, await fetch_host_key(self.device))
        options: dict[str, Any] = {}
        if self.device.user:
            options["username"] = self.device.user
        if self.device.key:
            options["client_keys"] = [self.device.key]
        try:
            self._conn = await asyncio.wait_for(
                asyncssh.connect(
                    self.device.host,
                    self.device.port,
                    known_hosts=(trusted, [], []),
                    keepalive_interval=KEEPALIVE_S,
                    keepalive_count_max=KEEPALIVE_COUNT,
                    password=None,
                    kbdint_auth=False,
                    **options,
                ),
                CONNECT_TIMEOUT_S,
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            raise HostKeyChangedError(self.device) from exc
        except asyncssh.PermissionDenied as exc:
            raise DeviceError(
                f"{self.device.name} refused the login of {self.device.user or 'your user'}: "
                "EdgeStudio logs in with your SSH agent or keys only (no passwords). Install "
                f"your key on the device once: ssh-copy-id {self.device.address[6:]}"
            ) from exc
        except asyncssh.KeyImportError as exc:
            raise DeviceError(
                f"the key {self.device.key} could not be read ({exc}); if it has "
                "a passphrase, add it to your SSH agent: ssh-add KEY"
            ) from exc
        except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
            raise DeviceError(_unreachable(self.device, exc)) from exc
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(asyncio.TimeoutError, OSError, asyncssh.Error):
                await asyncio.wait_for(self._conn.wait_closed(), 5)

    @property
    def conn(self) -> asyncssh.SSHClientConnection:
        """The connection (open)."""
        assert self._conn is not None
        return self._conn

    @property
    def cache(self) -> str:
        """The device's cache folder (absolute)."""
        return posixpath.join(self.home, CACHE_FOLDER)

    # ----- the device's Python and the runner ---------------------------------------------
    async def find_home(self) -> None:
        """Ask the device's Python for the home folder; no Python is a clear error."""
        python = shlex.quote(self.device.python)
        result = await self._run(f"{python} -c \"import os;print(os.path.expanduser('~'))\"")
        if result.exit_status != 0:
            err = str(result.stderr or "").strip()
            raise DeviceError(
                f"{self.device.name} has no Python at '{self.device.python}' ({err or 'exit '}"
                f"{'' if err else result.exit_status}). Install it (on Debian/Raspberry Pi OS: "
                "sudo apt install python3 python3-venv), or give its path with `edgestudio "
                "device add … --python PATH`."
            )
        self.home = str(result.stdout).strip()

    async def _run(self, command: str) -> asyncssh.SSHCompletedProcess:
        try:
            return await self.conn.run(command, check=False)
        except (OSError, asyncssh.Error) as exc:
            raise LinkLostError(f"the connection to {self.device.name} was lost ({exc})") from exc

    async def install_runner(self) -> str:
        """Copy the runner (once per version and content) and return its path on the device."""
        source = runner_source()
        target = posixpath.join(self.cache, runner_name(source))
        await self.upload_bytes(source, target)
        return target

    async def start(
        self, runner: str, request: dict[str, Any], on_event: Callable[[dict[str, Any]], None]
    ) -> RunnerExit:
        """Run ``runner`` with ``request``, passing every event it prints to ``on_event``.

        Raises :class:`LinkLostError` when the connection drops before the runner ends.
        """
        command = f"{shlex.quote(self.device.python)} {shlex.quote(runner)}"
        try:
            process = await self.conn.create_process(command, encoding="utf-8")
        except (OSError, asyncssh.Error) as exc:
            raise LinkLostError(f"the connection to {self.device.name} was lost ({exc})") from exc
        stderr: list[str] = []

        async def read_stderr() -> None:
            async for line in process.stderr:
                stderr.append(line)
                del stderr[:-40]

        errors = asyncio.ensure_future(read_stderr())
        try:
            # stdin stays open: its end tells the runner to stop (cancel, lost link).
            process.stdin.write(json.dumps(request) + "\n")
            async for line in process.stdout:
                read_event(self.device, line, on_event)
            await errors
            await process.wait_closed()
        except (OSError, asyncssh.Error) as exc:
            raise LinkLostError(f"the connection to {self.device.name} was lost ({exc})") from exc
        finally:
            errors.cancel()
        if process.exit_status is None and process.exit_signal is None:
            raise LinkLostError(
                f"the connection to {self.device.name} was lost while the runner ran"
            )
        sig = process.exit_signal[0] if process.exit_signal else None
        return RunnerExit(process.exit_status, sig, "".join(stderr)[-2000:])

    # ----- files, once per content ----------------------------------------------------------
    async def missing(self, paths: list[str]) -> set[str]:
        """Those of ``paths`` not on the device (one SFTP session for all)."""
        async with self.conn.start_sftp_client() as sftp:
            return {p for p in paths if not await sftp.exists(p)}

    async def upload_bytes(self, data: bytes, target: str) -> None:
        """Write ``data`` to ``target`` unless it is there (through a temporary name)."""
        await self.upload([(io.BytesIO(data), len(data), target)], None)

    async def upload(
        self, files: list[tuple[Any, int, str]], progress: Callable[[int, int], None] | None
    ) -> None:
        """Copy each ``(local path or binary file, size, target)`` not yet on the device.

        Each goes to ``target.part`` and is renamed when complete, so a copy cut short (lost
        link, full disk) is never taken for a whole one.
        """
        total = sum(size for _, size, _ in files)
        sent = 0
        try:
            async with self.conn.start_sftp_client() as sftp:
                for source, size, target in files:
                    if await sftp.exists(target):
                        sent += size
                        continue
                    await sftp.makedirs(posixpath.dirname(target), exist_ok=True)
                    part = f"{target}.part"
                    with contextlib.ExitStack() as stack:
                        reader = (
                            stack.enter_context(open(source, "rb"))
                            if isinstance(source, (str, Path))
                            else source
                        )
                        async with sftp.open(part, "wb") as out:
                            while block := reader.read(1 << 20):
                                await out.write(block)
                                sent += len(block)
                                if progress is not None:
                                    progress(sent, total)
                    if await sftp.exists(target):  # another job copied it meanwhile
                        await sftp.remove(part)
                    else:
                        await sftp.rename(part, target)
        except asyncssh.SFTPError as exc:
            raise DeviceError(
                f"copying to {self.device.name} failed: {exc.reason or exc}. Is the device's "
                f"disk full? (its cache is {self.cache})"
            ) from exc
        except (OSError, asyncssh.Error) as exc:
            raise LinkLostError(
                f"the connection to {self.device.name} was lost while copying ({exc})"
            ) from exc
