"""The measurement that runs where the model runs: on this machine, and copied to a device.

This file is the *device runner*: EdgeStudio copies it, unchanged, to a device reached over SSH
and runs it there with the device's own Python. It therefore imports nothing from EdgeStudio and
needs only the standard library, numpy and onnxruntime (imported when a measurement needs them,
so ``check`` works on a device that lacks them and says so). It must run on Python 3.8+ (Jetson
images ship 3.8). Local benchmarks import :func:`session_for` and :func:`time_sessions` from here,
so a latency on the device and one on this machine are the same loop by construction.

Protocol (``python device_runner.py``): one JSON request on the first line of stdin; JSON lines
on stdout (``{"event": "stage"|"timed"|"outputs"|"error"|"result", ...}``); the exit status says
whether it finished. stdin stays open while it runs: when it closes (the SSH connection dropped,
the job was cancelled), the runner exits at once, so no orphan keeps a device busy.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the device's Python may be 3.8
    from collections.abc import Callable

# Bumped whenever the protocol or the measurement changes: the copy on a device is named after it.
RUNNER_VERSION = 3
OPT_LEVELS = {
    "all": "ORT_ENABLE_ALL",
    "extended": "ORT_ENABLE_EXTENDED",
    "basic": "ORT_ENABLE_BASIC",
    "disabled": "ORT_DISABLE_ALL",
}
SAMPLES_PER_LINE = 10_000
# CPU features that decide quantized speed, as Linux cpuinfo names them (x86 and Arm).
CPU_FLAGS = (
    "avx2",
    "avx512f",
    "avx512_vnni",
    "avx_vnni",
    "amx_int8",
    "f16c",
    "asimd",
    "asimddp",
    "asimdhp",
    "fphp",
    "i8mm",
    "sve",
)


def session_for(
    model: Any,
    provider: str,
    threads: int,
    opt_level: str = "all",
    profile_prefix: str | None = None,
) -> Any:
    """A session on ``provider`` (CPU as the fallback for nodes it cannot run)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPT_LEVELS[opt_level])
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    providers = [provider] + (
        ["CPUExecutionProvider"] if provider != "CPUExecutionProvider" else []
    )
    return ort.InferenceSession(model, options, providers=providers)


def _one_run(session: Any, feeds: dict[str, Any], io_binding: bool) -> Callable[[], Any]:
    """A no-argument callable that runs ``session`` once on ``feeds``."""
    if io_binding:
        binding = session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        for out in session.get_outputs():
            binding.bind_output(out.name)
        return lambda: session.run_with_iobinding(binding)
    fetch = session.run
    return lambda: fetch(None, feeds)


def time_sessions(
    sessions: list[tuple[Any, dict[str, Any]]],
    warmup: int,
    runs: int,
    seconds: float | None,
    io_binding: bool = False,
) -> list[tuple[list[float], list[float]]]:
    """Per-run wall and process-CPU times in ms of each ``(session, feeds)``, after ``warmup``
    untimed runs each.

    Several sessions are timed *interleaved* — one run of each in turn — so that a machine
    that slows down or speeds up over the measurement affects every model alike; their ratio
    is then a fair comparison and its spread an honest one.
    """
    runners = [_one_run(session, feeds, io_binding) for session, feeds in sessions]
    for run in runners:
        for _ in range(warmup):
            run()
    timings: list[tuple[list[float], list[float]]] = [([], []) for _ in runners]
    perf, proc = time.perf_counter_ns, time.process_time_ns
    deadline = time.perf_counter() + seconds if seconds else None
    count = 0
    while (count < runs) if deadline is None else (time.perf_counter() < deadline):
        for run, (wall, cpu) in zip(runners, timings):  # noqa: B905 (strict= needs 3.10)
            c0 = proc()
            t0 = perf()
            run()
            t1 = perf()
            c1 = proc()
            wall.append((t1 - t0) / 1e6)
            cpu.append((c1 - c0) / 1e6)
        count += 1
    return timings


def groups_of(configs: list[dict[str, Any]]) -> list[list[int]]:
    """Indices of ``configs`` per (provider, threads), in first-seen order: the configurations
    timed interleaved with each other."""
    keys: list[tuple[str, int]] = []
    for c in configs:
        key = (c["provider"], int(c["threads"]))
        if key not in keys:
            keys.append(key)
    return [
        [k for k, c in enumerate(configs) if (c["provider"], int(c["threads"])) == key]
        for key in keys
    ]


# ----- what a device has ---------------------------------------------------------------------
def _cpu_info() -> tuple[str, list[str]]:
    """The CPU's model name and the flags of :data:`CPU_FLAGS` it has (Linux; best effort)."""
    name = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("model name", "hardware", "cpu model") and value.strip():
                    name = value.strip()
                elif key in ("flags", "features"):
                    flags.update(value.split())
    except OSError:
        pass
    return name, [f for f in CPU_FLAGS if f in flags]


def _memory_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def check(cache: str) -> dict[str, Any]:
    """What this device has: OS, CPU and its flags, memory, Python, numpy, onnxruntime and its
    providers, and the free space where models are kept."""
    cpu, flags = _cpu_info()
    os.makedirs(cache, exist_ok=True)
    info: dict[str, Any] = {
        "runner": RUNNER_VERSION,
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu,
        "cpu_flags": flags,
        "cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "python": platform.python_version(),
        "python_path": sys.executable,
        "cache": cache,
        "free_bytes": shutil.disk_usage(cache).free,
        "numpy": None,
        "onnxruntime": None,
        "providers": [],
        "qnn": None,  # the onnxruntime-qnn plugin package's version, where it is installed
        "missing": [],
    }
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError as exc:
        info["missing"].append(f"numpy ({exc})")
    try:
        import onnxruntime as ort

        info["onnxruntime"] = ort.__version__
        info["providers"] = list(ort.get_available_providers())
    except ImportError as exc:
        info["missing"].append(f"onnxruntime ({exc})")
    try:
        from importlib.metadata import version

        import onnxruntime_qnn  # noqa: F401  (the check that it imports)

        info["qnn"] = version("onnxruntime-qnn")
    except Exception:  # absent, or broken: no QNN plugin either way
        pass
    return info


# ----- the measurements ---------------------------------------------------------------------
def _emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def _load_feeds(path: str) -> dict[str, Any]:
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def bench(request: dict[str, Any]) -> None:
    """Time every configuration of ``request`` (a model, its feeds, a provider, threads), the
    ones sharing a provider and thread count interleaved, as locally; one event per config."""
    import onnxruntime as ort

    configs = request["configs"]
    available = set(ort.get_available_providers())
    done = 0
    for group in groups_of(configs):
        ready: list[tuple[int, Any, dict[str, Any]]] = []
        for k in group:
            c = configs[k]
            if c["provider"] not in available:
                _emit(
                    "error",
                    index=k,
                    error=f"{c['provider']} is not in this device's "
                    f"onnxruntime {ort.__version__} (it has {', '.join(sorted(available))}).",
                )
                continue
            _emit("stage", text=f"preparing {c['label']}", fraction=done / len(configs))
            try:
                session = session_for(
                    c["model"], c["provider"], int(c["threads"]), request.get("opt_level", "all")
                )
            except Exception as exc:  # one model's failure is that row's error
                _emit("error", index=k, error=f"session failed on the device: {exc}")
                continue
            placed = session.get_providers()
            if c["provider"] not in placed:
                _emit(
                    "error",
                    index=k,
                    error=f"{c['provider']} could not be used on the "
                    f"device; onnxruntime fell back to {', '.join(placed)}.",
                )
                continue
            ready.append((k, session, _load_feeds(c["feeds"])))
        if not ready:
            done += len(group)
            continue
        _emit(
            "stage",
            text="timing " + ", ".join(configs[k]["label"] for k, _, _ in ready),
            fraction=done / len(configs),
        )
        try:
            timings = time_sessions(
                [(s, f) for _, s, f in ready],
                int(request["warmup"]),
                int(request["runs"]),
                request.get("seconds"),
                bool(request.get("io_binding")),
            )
        except Exception as exc:
            for k, _, _ in ready:
                _emit("error", index=k, error=f"the run failed on the device: {exc}")
        else:
            for (k, _, _), (wall, cpu) in zip(ready, timings):  # noqa: B905 (strict= needs 3.10)
                # every run goes back (the statistics are computed where they are shown), in
                # lines of bounded length: a 10 µs model timed for a minute has millions
                for start in range(0, len(wall), SAMPLES_PER_LINE):
                    _emit(
                        "samples",
                        index=k,
                        wall_ms=wall[start : start + SAMPLES_PER_LINE],
                        cpu_ms=cpu[start : start + SAMPLES_PER_LINE],
                    )
                _emit("timed", index=k)
        done += len(group)
        del ready


def profile(request: dict[str, Any]) -> None:
    """A profiled run of one model; the trace's events come back whole."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _emit("stage", text=f"profiling {request['runs']} runs", fraction=0.1)
        session = session_for(
            request["model"],
            request["provider"],
            int(request["threads"]),
            profile_prefix=os.path.join(tmp, "profile"),
        )
        time_sessions([(session, _load_feeds(request["feeds"]))], 0, int(request["runs"]), None)
        trace = session.end_profiling()
        with open(trace, encoding="utf-8") as f:
            events = json.load(f)
        _emit("profile", events=events, providers=session.get_providers())


def run_outputs(request: dict[str, Any]) -> None:
    """Run the model on each feeds file with the provider alone (the CPU fallback off: a model
    it does not take whole is an error, never outputs the CPU partly computed); each sample's
    outputs come back as an .npz, base64-encoded, in an ``outputs`` event."""
    import base64
    import io

    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    provider = request["provider"]
    if provider != "CPUExecutionProvider":  # onnxruntime refuses the flag with the CPU itself
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    _emit("stage", text=f"loading the model on {provider}", fraction=0.05)
    session = ort.InferenceSession(request["model"], options, providers=[provider])
    names = list(request["outputs"])
    for k, path in enumerate(request["feeds"]):
        values = session.run(names, _load_feeds(path))
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **{f"o{i}": v for i, v in enumerate(values)})
        _emit("outputs", index=k, npz=base64.b64encode(buffer.getvalue()).decode("ascii"))


QNN_EP = "QNNExecutionProvider"
CHUNK_BYTES = 1 << 20  # a compiled file comes back in events of at most this many raw bytes


def _qnn_options(htp_arch: str, soc_model: str) -> tuple[Any, Any]:
    """Session options that put a model wholly on the device's Hexagon NPU (the CPU fallback
    off), and the providers argument for ``InferenceSession``: onnxruntime-qnn's plugin when it
    is installed, else a build of onnxruntime with the QNN provider inside."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    settings = {"htp_arch": htp_arch, "soc_model": soc_model}
    try:
        import onnxruntime_qnn
    except ImportError:
        onnxruntime_qnn = None
    if onnxruntime_qnn is not None:
        if not any(d.ep_name == QNN_EP for d in ort.get_ep_devices()):  # once per process
            ort.register_execution_provider_library(QNN_EP, onnxruntime_qnn.get_library_path())
        devices = [d for d in ort.get_ep_devices() if d.ep_name == QNN_EP]
        settings["backend_path"] = onnxruntime_qnn.get_qnn_htp_path()
        options.add_provider_for_devices(devices, settings)
        return options, None
    if QNN_EP in ort.get_available_providers():
        settings["backend_path"] = "QnnHtp.dll" if os.name == "nt" else "libQnnHtp.so"
        return options, [(QNN_EP, settings)]
    raise RuntimeError(
        "this Python has no QNN execution provider (pip install onnxruntime-qnn, or a build "
        "of onnxruntime with QNN)"
    )


def compile_context(request: dict[str, Any]) -> None:
    """Compile the model for the Hexagon NPU here (``ep.context_enable``): the EPContext model
    and its context binary, reloaded and run on the feeds beside the session that wrote them;
    each file comes back in ``chunk`` events, then ``compiled`` with the largest difference."""
    import base64
    import tempfile

    import numpy as np
    import onnxruntime as ort

    arch, soc = str(request["htp_arch"]), str(request["soc_model"])
    feeds = _load_feeds(request["feeds"])
    with tempfile.TemporaryDirectory() as tmp:
        context = os.path.join(tmp, os.path.basename(request["name"]))
        options, providers = _qnn_options(arch, soc)
        options.add_session_config_entry("ep.context_enable", "1")
        options.add_session_config_entry("ep.context_file_path", context)
        options.add_session_config_entry("ep.context_embed_mode", "0")
        _emit("stage", text=f"compiling for HTP v{arch}", fraction=0.3)
        session = ort.InferenceSession(request["model"], options, providers=providers)
        expected = session.run(None, feeds)
        del session
        _emit("stage", text="reloading the compiled binary and running it", fraction=0.6)
        options, providers = _qnn_options(arch, soc)
        got = ort.InferenceSession(context, options, providers=providers).run(None, feeds)
        difference = max(
            [
                float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
                for a, b in zip(expected, got)  # noqa: B905  (strict= needs Python 3.10)
                if np.size(a)
            ]
            or [0.0]
        )
        names = [os.path.basename(context)]
        names += sorted(n for n in os.listdir(tmp) if n.endswith(".bin"))
        for name in names:
            with open(os.path.join(tmp, name), "rb") as f:
                while True:
                    data = f.read(CHUNK_BYTES)
                    _emit("chunk", name=name, data=base64.b64encode(data).decode("ascii"))
                    if len(data) < CHUNK_BYTES:
                        break
    _emit("compiled", files=names, difference=difference)


def _exit_when_stdin_closes() -> None:
    """Exit the moment stdin reaches its end: the link that started us is gone."""

    def watch() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        finally:
            os._exit(75)

    threading.Thread(target=watch, daemon=True).start()


def main() -> int:
    """Read the request, run it, report; exit 0 when it finished."""
    line = sys.stdin.readline()
    if not line:
        return 2
    request = json.loads(line)
    _exit_when_stdin_closes()
    op = request.get("op")
    if op == "check":
        _emit("result", info=check(request["cache"]))
    elif op == "bench":
        bench(request)
        _emit("result")
    elif op == "profile":
        profile(request)
        _emit("result")
    elif op == "run":
        run_outputs(request)
        _emit("result")
    elif op == "compile":
        try:
            compile_context(request)
        except Exception as exc:  # said to the caller, whatever it was
            _emit("error", index=None, error=f"{type(exc).__name__}: {exc}")
            return 1
        _emit("result")
    else:
        _emit("error", index=None, error=f"unknown request '{op}'")
        return 2
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    # os._exit: the stdin watcher thread is still reading, and an interpreter shutting down
    # with a daemon thread blocked on stdin aborts (SIGABRT) instead of exiting.
    os._exit(status)
