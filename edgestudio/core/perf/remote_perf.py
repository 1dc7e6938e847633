"""Benchmarks, profiles and checks run on a device over SSH.

The inputs are made here, from the same input specification and ``--data`` as a local run, and
copied with the model (and its external data) into the device's cache, once per content hash;
the device runner times them with the loop local benchmarks use (:mod:`device_runner`), and the
statistics are computed here by the same function. A link that fails part-way keeps what was
measured: the rows not measured say why, and the job names the failure.
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
from edgestudio.core.perf.latency_stats import MAX_SAMPLES_KEPT, latency_stats
from edgestudio.core.progress import Reporter
from edgestudio.core.remote.devices import Device, DeviceError
from edgestudio.core.remote.runner_link import DISK_MARGIN_BYTES, RunnerLink, exit_reason
from edgestudio.core.remote.ssh_link import DeviceLink
from edgestudio.core.serialise import to_json

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


async def _runner_request(
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


async def _open(
    link: RunnerLink, reporter: Reporter, fraction: float
) -> tuple[str, dict[str, Any]]:
    """The runner's path on the device and what the device has."""
    reporter.stage(f"{link.device.name}: connecting to {link.device.address}", fraction)
    await link.find_home()
    runner = await link.install_runner()
    info: dict[str, Any] = {}
    failure = await _runner_request(
        link,
        runner,
        {"op": "check", "cache": link.cache},
        lambda e: info.update(e.get("info") or {}),
    )
    if failure:
        raise DeviceError(f"checking {link.device.name} failed: {failure}")
    return runner, info


async def _open_for(
    link: RunnerLink, provider: str, reporter: Reporter
) -> tuple[str, dict[str, Any]]:
    """:func:`_open`, then an error unless the device can run models with ``provider``."""
    runner, info = await _open(link, reporter, 0.05)
    device = link.device
    problems = problems_of(device, info)
    if problems:
        raise DeviceError(problems[0])
    if provider not in info.get("providers", []):
        raise DeviceError(
            f"{provider} is not in {device.name}'s onnxruntime {info.get('onnxruntime')} "
            f"(it has {', '.join(info.get('providers', []))})."
        )
    return runner, info


async def _check(device: Device, reporter: Reporter) -> dict[str, Any]:
    async with open_link(device) as link:
        _, info = await _open(link, reporter, 0.1)
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
def _model_files(path: Path) -> list[Path]:
    """The model file and the external data files it reads."""
    import onnx

    from edgestudio.core.model.external_data import check_external_data

    proto = onnx.load(str(path), load_external_data=False)
    return [path] + [path.parent / f.location for f in check_external_data(proto, path.parent)]


def _content_hash(files: list[Path], root: Path) -> str:
    from edgestudio.core.paths import file_hash

    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.relative_to(root).as_posix()}\0{file_hash(f)}\0".encode())
    return digest.hexdigest()[:24]


async def copy_model(
    link: RunnerLink, path: Path, free_bytes: int, reporter: Reporter, fraction: float
) -> str:
    """The model's path on the device, copied (with its external data) unless already there."""
    files = _model_files(path)
    folder = posixpath.join(link.cache, "models", _content_hash(files, path.parent))
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


# ----- bench ----------------------------------------------------------------------------------
def bench_on_device(
    device: Device,
    recipe: Any,
    feeds_of: Callable[[str], Feeds | str],
    quantized_of: Callable[[str], list[str]],
    reporter: Reporter,
) -> tuple[list[dict[str, Any]], str | None]:
    """Rows of ``recipe`` (a BenchRecipe) measured on ``device`` and, when the work ended
    early, why (the rows measured before are kept)."""
    configs = [(m, p, t) for m in recipe.models for p in recipe.providers for t in recipe.threads]
    rows = [{"model": m, "ep": p, "threads": t, "device": device.name} for m, p, t in configs]
    failure = run_async(_bench(device, recipe, configs, rows, feeds_of, quantized_of, reporter))
    for row in rows:
        if row.get("median_ms") is None and not row.get("error"):
            row["error"] = f"not measured: {failure}"
    return rows, failure


async def _bench(
    device: Device,
    recipe: Any,
    configs: list[tuple[str, str, int]],
    rows: list[dict[str, Any]],
    feeds_of: Callable[[str], Feeds | str],
    quantized_of: Callable[[str], list[str]],
    reporter: Reporter,
) -> str | None:
    try:
        async with open_link(device) as link:
            runner, info = await _open(link, reporter, 0.0)
            for row in rows:
                row["runtime"] = info.get("onnxruntime") or ""
            problems = problems_of(device, info)
            if problems:
                for row in rows:
                    row["error"] = problems[0]
                return None
            remote: dict[str, tuple[str, str]] = {}
            shapes: dict[str, dict[str, list[int]]] = {}
            for model in recipe.models:
                feeds = feeds_of(model)
                if isinstance(feeds, str):
                    for row in rows:
                        if row["model"] == model:
                            row["error"] = feeds
                    continue
                shapes[model] = {n: list(v.shape) for n, v in feeds.items()}
                remote[model] = (
                    await copy_model(link, Path(model), int(info["free_bytes"]), reporter, 0.1),
                    await copy_feeds(link, feeds),
                )
            todo = [k for k, (m, _, _) in enumerate(configs) if m in remote]
            if not todo:
                return None
            request = {
                "op": "bench",
                "warmup": recipe.warmup,
                "runs": recipe.runs,
                "seconds": recipe.seconds or None,
                "opt_level": recipe.opt_level,
                "io_binding": recipe.io_binding,
                "configs": [
                    {
                        "model": remote[configs[k][0]][0],
                        "feeds": remote[configs[k][0]][1],
                        "provider": configs[k][1],
                        "threads": configs[k][2],
                        "label": _label(configs[k]),
                    }
                    for k in todo
                ],
            }

            samples: dict[int, tuple[list[float], list[float]]] = {}

            def on_event(e: dict[str, Any]) -> None:
                kind = e.get("event")
                if kind == "stage":
                    reporter.stage(f"{device.name}: {e['text']}", 0.2 + 0.8 * e["fraction"])
                elif kind in ("samples", "timed", "error") and e.get("index") is not None:
                    k = todo[int(e["index"])]
                    row = rows[k]
                    if kind == "error":
                        row["error"] = e["error"]
                        reporter.warn(f"{device.name} · {_label(configs[k])}: {e['error']}")
                        return
                    wall, cpu = samples.setdefault(k, ([], []))
                    if kind == "samples":
                        wall += e["wall_ms"]
                        cpu += e["cpu_ms"]
                        return
                    stats = latency_stats(
                        wall, batch=recipe.batch, cpu_ms=cpu, threads=configs[k][2]
                    )
                    row.update(
                        {
                            **to_json(stats),
                            "samples_ms": wall[:MAX_SAMPLES_KEPT],
                            "inputs": shapes[configs[k][0]],
                            "quantized_ops": quantized_of(configs[k][0]),
                        }
                    )
                    reporter.log(
                        f"{device.name} · {_label(configs[k])}: median "
                        f"{stats.median_ms:.3f} ms, p90 {stats.p90_ms:.3f} ms"
                        + (" (contended device)" if stats.contended else "")
                    )

            return await _runner_request(link, runner, request, on_event)
    except DeviceError as exc:  # a lost link, a refused host key, a full disk…
        return str(exc)


def _label(config: tuple[str, str, int]) -> str:
    model, provider, threads = config
    return f"{Path(model).name} · {provider} · {threads} thread(s)"


# ----- profile --------------------------------------------------------------------------------
def profile_on_device(
    device: Device,
    model: Path,
    feeds: Feeds,
    provider: str,
    threads: int,
    runs: int,
    reporter: Reporter,
) -> tuple[list[dict[str, Any]], str]:
    """The trace events of a profiled run on ``device`` and its onnxruntime version."""
    return run_async(_profile(device, model, feeds, provider, threads, runs, reporter))


async def _profile(
    device: Device,
    model: Path,
    feeds: Feeds,
    provider: str,
    threads: int,
    runs: int,
    reporter: Reporter,
) -> tuple[list[dict[str, Any]], str]:
    async with open_link(device) as link:
        runner, info = await _open_for(link, provider, reporter)
        request = {
            "op": "profile",
            "model": await copy_model(link, model, int(info["free_bytes"]), reporter, 0.1),
            "feeds": await copy_feeds(link, feeds),
            "provider": provider,
            "threads": threads,
            "runs": runs,
        }
        events: list[dict[str, Any]] = []

        def on_event(e: dict[str, Any]) -> None:
            if e.get("event") == "stage":
                reporter.stage(f"{device.name}: {e['text']}", 0.3)
            elif e.get("event") == "profile":
                events.extend(e["events"])

        failure = await _runner_request(link, runner, request, on_event)
        if failure:
            raise DeviceError(f"profiling on {device.name} failed: {failure}")
        return events, str(info.get("onnxruntime") or "")


# ----- outputs --------------------------------------------------------------------------------
def outputs_on_device(
    device: Device,
    model: Path,
    samples: list[Feeds],
    provider: str,
    outputs: list[str],
    reporter: Reporter,
) -> list[list[np.ndarray]]:
    """The values of ``outputs`` for each sample, computed on ``device`` by ``provider`` alone
    (the model whole on it, or an error): accuracy in that runtime's arithmetic."""
    return run_async(_outputs(device, model, samples, provider, outputs, reporter))


async def _outputs(
    device: Device,
    model: Path,
    samples: list[Feeds],
    provider: str,
    outputs: list[str],
    reporter: Reporter,
) -> list[list[np.ndarray]]:
    import base64

    async with open_link(device) as link:
        runner, info = await _open_for(link, provider, reporter)
        request = {
            "op": "run",
            "model": await copy_model(link, model, int(info["free_bytes"]), reporter, 0.1),
            "feeds": [await copy_feeds(link, feeds) for feeds in samples],
            "provider": provider,
            "outputs": outputs,
        }
        got: dict[int, list[np.ndarray]] = {}
        errors: list[str] = []

        def on_event(e: dict[str, Any]) -> None:
            if e.get("event") == "outputs":
                with np.load(io.BytesIO(base64.b64decode(e["npz"])), allow_pickle=False) as data:
                    got[int(e["index"])] = [data[f"o{i}"] for i in range(len(outputs))]
                reporter.stage(
                    f"{device.name}: {len(got)} of {len(samples)} samples run",
                    0.2 + 0.7 * len(got) / max(1, len(samples)),
                )
            elif e.get("event") == "error":
                errors.append(str(e.get("error")))

        failure = await _runner_request(link, runner, request, on_event)
        if failure or errors or len(got) != len(samples):
            why = errors[0] if errors else failure or "not every sample came back"
            raise DeviceError(f"running the model on {device.name} with {provider} failed: {why}")
        return [got[k] for k in range(len(samples))]
