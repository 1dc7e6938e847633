"""The fork server (Linux): a process with the job modules loaded that forks one child per job.

A worker started from scratch spends about half a second loading Python, numpy, onnx and
onnxruntime before it does anything; a child forked from a process that has already loaded them
starts in milliseconds and shares those pages. Each job still gets its own process, so the
isolation of :mod:`edgestudio.jobs.runner` holds: a crash kills only that job, a cancel kills
only its tree, and nothing of one job is left in the next.

The app and the server talk over a Unix socket pair (the server's stdin), in the messages of
:mod:`edgestudio.jobs.protocol`. To start a job the app sends the spec's path with two
descriptors attached: the write end of the job's protocol pipe
and its stderr file. The server forks; the child takes those as its protocol stream and stderr,
starts its own session (like a worker detached from the terminal) and runs the job. The server
answers with the child's pid, reaps it when it ends and reports its exit status, which the app
cannot read itself (the child is not its own). The server exits when the app's end closes.

The server has loaded onnxruntime but never made a session, so no onnxruntime thread exists to
be lost in the fork.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from edgestudio.core.paths import child_command, child_env
from edgestudio.jobs import launch, protocol

FORK_SERVER_FLAG = "--fork-server"
START_TIMEOUT_S = 10.0
CLOSE_WAIT_S = 0.5
# Variables that change while the app runs without meaning anything to a job: pytest rewrites
# this one at every test phase.
VOLATILE_ENV = frozenset({"PYTEST_CURRENT_TEST"})


class ForkServerError(RuntimeError):
    """The server could not start a job (it died or did not answer): start the job cold."""


# ----- the server's side -------------------------------------------------------------------------


def serve(run_spec: Callable[[str, BinaryIO], int]) -> int:
    """Fork a child running ``run_spec`` for each job asked for on stdin (our end of the app's
    socket pair); report each child's pid and exit status; return when the app is gone."""
    os.dup2(2, 1)  # nothing may ever be printed into the socket or a pipe
    channel = socket.socket(fileno=os.dup(0))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)  # a child's end wakes the select below
    channel.send(protocol.encode("loaded"))
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([channel.fileno(), wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 4096):
                    pass
        _reap(children, channel)
        if channel.fileno() not in ready:
            continue
        data, fds, _, _ = socket.recv_fds(channel, 65536, 2)
        if not data or _peer_closed(channel):
            return 0  # the app closed its end (or died): nobody would see this job
        request = protocol.decode(data)
        pid = 0
        if request is not None and request["type"] == "start" and len(fds) == 2:
            pid = os.fork()
            if pid == 0:
                _child(request["spec"], fds, channel, (wake_r, wake_w), run_spec)
            children.add(pid)
        for fd in fds:
            os.close(fd)
        channel.send(protocol.encode("started", pid=pid))


def _peer_closed(channel: socket.socket) -> bool:
    """Whether the app has closed its end (nothing more to read, ever)."""
    try:
        return channel.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False  # open, nothing queued


def _reap(children: set[int], channel: socket.socket) -> None:
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        children.discard(pid)
        with contextlib.suppress(OSError):
            channel.send(protocol.encode("exited", pid=pid, code=os.waitstatus_to_exitcode(status)))


def _child(
    spec: str,
    fds: list[int],
    channel: socket.socket,
    wake: tuple[int, int],
    run_spec: Callable[[str, BinaryIO], int],
) -> None:
    """The forked job: its own session, the job's pipe and stderr, the job; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        channel.close()
        for fd in wake:
            os.close(fd)
        os.setsid()  # its own session: the terminal's Ctrl+C is not its business
        protocol_fd, stderr_fd = fds
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        os.dup2(2, 1)  # what native libraries print goes to stderr, as in any worker
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        with os.fdopen(protocol_fd, "wb", buffering=0) as stream:
            code = run_spec(spec, stream)
    except BaseException:  # a child must never return into the server's loop
        traceback.print_exc()
    finally:
        os._exit(code)


# ----- the app's side ----------------------------------------------------------------------------


class ForkedProcess:
    """A job's worker forked by the server: a :class:`~edgestudio.jobs.launch.Child`."""

    def __init__(self, pid: int, stdout: BinaryIO, server: ForkServer) -> None:
        self.pid = pid
        self.stdout: BinaryIO | None = stdout
        self.returncode: int | None = None
        self._server = server

    def poll(self) -> int | None:
        """The exit status once the server has reported it (negative: killed by a signal)."""
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid)
        return self.returncode


def _lasting(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in VOLATILE_ENV}


class ForkServer:
    """The app's handle on one fork server (see the module's docstring)."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.folder = Path(tempfile.mkdtemp(prefix="edgestudio-forkserver-"))
        self.env = env
        self.cwd = os.getcwd()
        try:
            self.process = launch.spawn(
                command, self.folder / "stderr.txt", env, stdin=theirs.fileno()
            )
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        finally:
            theirs.close()
        if self.process.stdout is not None:
            self.process.stdout.close()  # the server prints nothing there
        self._channel = ours
        self._started: queue.Queue[int | None] = queue.Queue()
        self._exits: dict[int, int] = {}
        self._live: set[int] = set()  # children started and not yet reported ended
        self.loaded = threading.Event()  # set once the server has loaded the job modules
        self._lock = threading.Lock()
        self.lost = False
        threading.Thread(target=self._read, name="fork-server-reader", daemon=True).start()

    def alive(self) -> bool:
        """Whether the server still answers."""
        return not self.lost and self.process.poll() is None

    def fits_now(self) -> bool:
        """Alive, and started with the environment and folder a worker started now gets."""
        return (
            self.alive() and _lasting(self.env) == _lasting(child_env()) and self.cwd == os.getcwd()
        )

    def start_job(self, spec: Path, stderr_path: Path) -> ForkedProcess:
        """Fork a child for the job in ``spec``; its stderr goes to ``stderr_path``."""
        read_end, write_end = os.pipe()
        try:
            with open(stderr_path, "wb") as err, self._lock:
                try:
                    socket.send_fds(
                        self._channel,
                        [protocol.encode("start", spec=str(spec))],
                        [write_end, err.fileno()],
                    )
                    pid = self._started_pid()
                except (OSError, queue.Empty) as exc:
                    raise ForkServerError(f"the fork server did not start the job: {exc}") from exc
                if not pid:
                    raise ForkServerError("the fork server has exited or refused the job")
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._live.add(pid)
        if pid in self._exits:  # it ended before we got here
            self._live.discard(pid)
        return ForkedProcess(pid, os.fdopen(read_end, "rb"), self)

    def busy(self) -> bool:
        """Whether children it started are still running (their exits are still to come)."""
        return bool(self._live)

    def _started_pid(self) -> int | None:
        """The pid the server answers with. Interrupted (Ctrl+C) after the request went out,
        it still waits for the child, to stop it: no job may run on unseen."""
        try:
            return self._started.get(timeout=START_TIMEOUT_S)
        except KeyboardInterrupt:
            # Say we are gone (the server forks nothing it reads after this), then stop the
            # child in case it was forked already.
            with contextlib.suppress(OSError):
                self._channel.shutdown(socket.SHUT_WR)
            with contextlib.suppress(queue.Empty, ProcessLookupError):
                pid = self._started.get(timeout=2.0)
                if pid:
                    os.kill(pid, signal.SIGKILL)
            raise

    def exit_code(self, pid: int) -> int | None:
        """The exit status the server reported for ``pid``, if it has. Should the server die
        first, a child that is gone counts as ended without a result."""
        code = self._exits.get(pid)
        if code is None and self.lost and not _running(pid):
            return 1
        return code

    def close(self) -> None:
        """Stop the server (running jobs go on to their end) and remove its folder. It leaves
        as soon as it sees the socket close; one still loading its modules is killed rather
        than waited for (this may run on the UI thread, and the server holds nothing)."""
        with contextlib.suppress(OSError):
            self._channel.shutdown(socket.SHUT_RDWR)
        self._channel.close()
        try:
            # a server still importing cannot see the socket close yet: nothing to wait for
            self.process.wait(CLOSE_WAIT_S if self.loaded.is_set() else 0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _read(self) -> None:
        while True:
            try:
                data = self._channel.recv(4096)
            except OSError:
                data = b""
            if not data:
                self.lost = True
                self._started.put(None)
                return
            message = protocol.decode(data) or {"type": "garbage"}
            if message["type"] == "loaded":
                self.loaded.set()
            elif message["type"] == "started":
                self._started.put(int(message["pid"]))
            elif message["type"] == "exited":
                pid = int(message["pid"])
                self._exits[pid] = int(message["code"])
                self._live.discard(pid)


def _running(pid: int) -> bool:
    import psutil  # only once the server is lost: a command starts the server before this

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


class ForkLauncher(launch.SpawnLauncher):
    """Linux: each job forked from a loaded server. A job starts cold while no server fits a
    job started now: none yet, one still loading (unless :meth:`prepare` was told to wait for
    it), one that died, or one started with another environment or working folder. Such a
    server is replaced at once, unless the job measures time (nothing may load beside it);
    a replaced one is kept until its running jobs end (only it can report how)."""

    def __init__(self) -> None:
        self.wait_for_load = False
        self._server: ForkServer | None = None
        self._retired: list[ForkServer] = []
        self._lock = threading.Lock()
        self._closed = False

    def prepare(self, wait_for_load: bool = False) -> None:
        """Start a server that fits, unless one runs (its loading happens in the child)."""
        self.wait_for_load = self.wait_for_load or wait_for_load
        self.current(start=True)

    def launch(self, spec: Path, folder: Path, measures_time: bool = False) -> launch.Child:
        """Fork the job from the server, or start it cold (see the class)."""
        server = self.current(start=not measures_time)
        if server is not None and (server.loaded.is_set() or self.wait_for_load):
            with contextlib.suppress(ForkServerError):  # then it starts cold
                return server.start_job(spec, folder / "stderr.txt")
        return super().launch(spec, folder)

    def current(self, start: bool = False) -> ForkServer | None:
        """The server that fits a job started now, loaded or not; with ``start``, one is
        started when none fits."""
        with self._lock:
            server = self._server
            if server is not None and not server.fits_now():
                self._retired.append(server)
                self._server = server = None
            if server is None and start and not self._closed:
                with contextlib.suppress(OSError):  # jobs start cold
                    command = child_command("--job-worker", FORK_SERVER_FLAG)
                    self._server = server = ForkServer(command, child_env())
            idle = [s for s in self._retired if not s.busy()]
            self._retired = [s for s in self._retired if s.busy()]
        for old in idle:
            old.close()
        return server

    def close(self) -> None:
        """Stop the servers; nothing is started afterwards."""
        with self._lock:
            self._closed = True
            servers = [s for s in (self._server, *self._retired) if s is not None]
            self._server, self._retired = None, []
        for server in servers:
            server.close()
