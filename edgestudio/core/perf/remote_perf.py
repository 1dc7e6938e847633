"""Benchmarks, profiles and checks run on a device over SSH.

The inputs are made here, from the same input specification and ``--data`` as a local run, and
copied with the model (and its external data) into the device's cache, once per content hash;
the device runner times them with the loop local benchmarks use (:mod:`device_runner`), and the
statistics are computed here by the same function. A link that fails part-way keeps what was
measured: the rows not measured say why, and the job names the failure.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from edgestudio.core.perf.latency_stats import MAX_SAMPLES_KEPT, latency_stats
from edgestudio.core.progress import Reporter
from edgestudio.core.remote.devices import Device, DeviceError
from edgestudio.core.remote.runner_calls import (
    Feeds,
    copy_feeds,
    copy_model,
    open_link,
    open_runner,
    open_runner_for,
    problems_of,
    run_async,
    runner_request,
)
from edgestudio.core.serialise import to_json


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
            runner, info = await open_runner(link, reporter, 0.0)
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

            return await runner_request(link, runner, request, on_event)
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
        runner, info = await open_runner_for(link, provider, reporter)
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

        failure = await runner_request(link, runner, request, on_event)
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
        runner, info = await open_runner_for(link, provider, reporter)
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

        failure = await runner_request(link, runner, request, on_event)
        if failure or errors or len(got) != len(samples):
            why = errors[0] if errors else failure or "not every sample came back"
            raise DeviceError(f"running the model on {device.name} with {provider} failed: {why}")
        return [got[k] for k in range(len(samples))]
