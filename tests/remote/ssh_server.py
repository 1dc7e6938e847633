"""A real SSH server on the loopback interface, for the device tests and the remote benchmark.

asyncssh's server (the library the app's client uses, installed by the project) with what a
device's OpenSSH does that matters here: public-key login only, commands run by the shell in the
user's home, SFTP, the exit status or signal of the command sent back, and — like sshd — the
command's stdin closed when the connection ends (nothing killed: the runner must stop itself).
Test hooks: drop every connection, refuse SFTP writes as a full disk does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Any

import asyncssh


def client_key(folder: Path) -> tuple[asyncssh.SSHKey, Path]:
    """A new client key pair, the private key saved in ``folder`` (mode 600) for the device."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    path = folder / "id_ed25519"
    path.write_bytes(key.export_private_key())
    path.chmod(0o600)
    return key, path


class _FullDiskSFTP(asyncssh.SFTPServer):
    """An SFTP server whose disk is full once ``limit`` bytes were written."""

    limit: int | None = None
    written = 0

    def write(self, file_obj: object, offset: int, data: bytes) -> int:
        cls = type(self)
        if cls.limit is not None and cls.written + len(data) > cls.limit:
            raise asyncssh.SFTPFailure("No space left on device")
        cls.written += len(data)
        return super().write(file_obj, offset, data)  # type: ignore[arg-type,return-value]


class LoopbackSSHServer:
    """An SSH server on 127.0.0.1 in a thread of its own; ``home`` is the device user's home."""

    def __init__(
        self,
        home: Path,
        client_key: asyncssh.SSHKey,
        host_key: asyncssh.SSHKey | None = None,
        port: int = 0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.home = home
        self.client_key = client_key
        self.host_key = host_key or asyncssh.generate_private_key("ssh-ed25519")
        self.port = port
        self.env = env or {}
        self.connections: list[asyncssh.SSHServerConnection] = []
        self.commands: list[str] = []
        self.children: list[int] = []  # pids of the commands started
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: Any = None
        self.sftp = type("SFTP", (_FullDiskSFTP,), {"limit": None, "written": 0})

    # ----- life -----------------------------------------------------------------------------
    def start(self) -> LoopbackSSHServer:
        """Listen (on ``port``, or a free one, then in ``self.port``)."""
        self._thread.start()
        self._server = self._call(self._listen())
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Close the listener and every connection."""
        if self._server is not None:
            self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def drop_connections(self) -> None:
        """Cut every open connection at once, as a device that reboots or a cable pulled."""

        async def drop() -> None:
            for conn in self.connections:
                conn.abort()

        self._call(drop())

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(15)

    async def _listen(self) -> Any:
        owner = self

        class Server(asyncssh.SSHServer):
            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                owner.connections.append(conn)

        return await asyncssh.create_server(
            Server,
            "127.0.0.1",
            self.port,
            server_host_keys=[self.host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(
                self.client_key.export_public_key().decode()
            ),
            process_factory=self._run,
            sftp_factory=self.sftp,
            allow_scp=False,
            password_auth=False,
            kbdint_auth=False,
            encoding=None,
        )

    async def _close(self) -> None:
        self._server.close()
        for conn in self.connections:
            conn.abort()
        await self._server.wait_closed()

    # ----- one command ------------------------------------------------------------------------
    async def _run(self, process: asyncssh.SSHServerProcess[Any]) -> None:
        command = process.command or ""
        self.commands.append(command)
        env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **self.env}
        child = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.home,
            env=env,
            start_new_session=True,
        )
        self.children.append(child.pid)
        assert child.stdin and child.stdout and child.stderr

        async def feed_stdin() -> None:
            try:
                while data := await process.stdin.read(65536):
                    child.stdin.write(data)
                    await child.stdin.drain()
            except (asyncssh.Error, OSError, asyncio.CancelledError):
                pass
            finally:  # EOF or a lost link: like sshd, close the command's stdin, kill nothing
                child.stdin.close()

        async def copy(source: asyncio.StreamReader, target: Any) -> None:
            while data := await source.read(65536):
                # the client may be gone: keep reading so the command is never blocked
                with contextlib.suppress(asyncssh.Error, OSError):
                    target.write(data)

        stdin = asyncio.ensure_future(feed_stdin())
        await asyncio.gather(copy(child.stdout, process.stdout), copy(child.stderr, process.stderr))
        code = await child.wait()
        stdin.cancel()
        if process.is_closing():
            return
        if code < 0:
            process.exit_with_signal(signal.Signals(-code).name.removeprefix("SIG"))
        else:
            process.exit(code)
