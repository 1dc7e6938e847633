"""Latency benchmarks and the execution-provider probe (both run in a worker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import read_full_model
from edgestudio.core.model.model_io import has_large_attributes, structure_only
from edgestudio.core.model.opsets import quantized_ops_in
from edgestudio.core.perf.bench_recipes import BenchRecipe, ProbeRecipe
from edgestudio.core.perf.bench_verdicts import bench_verdicts
from edgestudio.core.perf.latency_stats import MAX_SAMPLES_KEPT, latency_stats
from edgestudio.core.perf.perf_results import Latency, LatencyRow, ProviderProbe, ProviderProbes
from edgestudio.core.perf.providers import package_for
from edgestudio.core.progress import Reporter
from edgestudio.core.remote.device_runner import groups_of, session_for, time_sessions
from edgestudio.core.serialise import from_json, to_json


class BenchError(EdgeStudioError):
    """A benchmark could not be set up (bad shape, unknown input…)."""


def unavailable_reason(provider: str) -> str | None:
    """Why ``provider`` cannot be used here, or None when it is available."""
    import onnxruntime as ort

    if provider in ort.get_available_providers():
        return None
    if provider in ort.get_all_providers():
        return (
            f"{provider} is not in this onnxruntime build; install {package_for(provider)} in "
            "a Python environment of its own and add it as a device (`edgestudio device add "
            "NAME env:PYTHON`): one environment holds one onnxruntime package"
            + _made_environment_hint(provider)
            + "."
        )
    return f"onnxruntime does not know a provider called {provider}."


def _made_environment_hint(provider: str) -> str:
    """Where ``make`` already made an environment with ``provider``, name it."""
    from edgestudio.core.remote.devices import environment_for

    made = environment_for(provider)
    return f"; `make` made one: --device local,{made}" if made else ""


def time_session(
    session: Any,
    feeds: dict[str, np.ndarray],
    warmup: int,
    runs: int,
    seconds: float | None,
    io_binding: bool = False,
) -> tuple[list[float], list[float]]:
    """Per-run wall and process-CPU times in ms, after ``warmup`` untimed runs."""
    return time_sessions([(session, feeds)], warmup, runs, seconds, io_binding)[0]


def run_bench(recipe: BenchRecipe, reporter: Reporter, staging: Path) -> JobReport[Latency]:
    """Benchmark every configuration of ``recipe`` on this machine and on each device it names;
    unavailable providers become rows with a reason, not a failure.

    Configurations on the same provider with the same thread count are timed interleaved
    (:func:`time_sessions`), so quantized and float models are compared under the same load.
    Every machine times the same inputs. A device whose link fails part-way keeps the rows it
    measured; the others say why, and ``failures`` names what went wrong.
    """
    import onnxruntime as ort

    from edgestudio.core.remote.devices import LOCAL

    if not recipe.models:
        raise BenchError("Give at least one model.")
    quantized: dict[str, list[str]] = {}  # per model, read once
    inputs: dict[str, dict[str, np.ndarray] | str] = {}  # feeds per model, or why there are none
    results: list[dict[str, Any]] = []
    failures: list[str] = []
    for device in recipe.devices or (LOCAL,):
        if device == LOCAL:
            rows = _bench_here(recipe, reporter, quantized, inputs)
            results += [{**row, "device": "", "runtime": ort.__version__} for row in rows]
            continue
        rows, failure = _bench_there(device, recipe, reporter, quantized, inputs)
        results += rows
        if failure:
            failures.append(f"{device}: {failure}")
            reporter.warn(f"{device}: {failure} (the rows measured before are kept)")
    verdicts = bench_verdicts(results)
    for line in verdicts:
        reporter.log(line)
    reporter.stage("Done", 1.0)
    measured = from_json(list[LatencyRow], results)
    return JobReport(kind=recipe.kind, result=Latency(measured, verdicts, failures))


def _bench_there(
    name: str,
    recipe: Any,
    reporter: Reporter,
    quantized: dict[str, list[str]],
    inputs: dict[str, dict[str, np.ndarray] | str],
) -> tuple[list[dict[str, Any]], str | None]:
    """The rows measured on the device called ``name`` (same inputs as here)."""
    from edgestudio.core.perf.remote_perf import bench_on_device
    from edgestudio.core.remote.devices import DeviceError, device_named

    def feeds_of(model: str) -> dict[str, np.ndarray] | str:
        if model not in inputs:
            reporter.stage(f"{Path(model).name}: finding inputs the model runs on", 0.05)
            try:
                proto = read_for_inputs(Path(model))  # no session here: no serialised copy
                quantized.setdefault(model, quantized_ops_in(proto))
                inputs[model] = job_inputs(
                    Path(model), proto, recipe.shapes, recipe.ranges, recipe.data, reporter
                ).feeds(recipe.batch, recipe.seed)
            except EdgeStudioError as exc:
                inputs[model] = str(exc)
        return inputs[model]

    try:
        device = device_named(name)
    except DeviceError as exc:
        return [
            {"model": m, "ep": p, "threads": t, "device": name, "error": str(exc)}
            for m in recipe.models
            for p in recipe.providers
            for t in recipe.threads
        ], str(exc)
    return bench_on_device(
        device, recipe, feeds_of, lambda model: quantized.get(model, []), reporter
    )


def _bench_here(
    recipe: Any,
    reporter: Reporter,
    quantized: dict[str, list[str]],
    inputs: dict[str, dict[str, np.ndarray] | str],
) -> list[dict[str, Any]]:
    """The rows measured on this machine."""
    configs = [(m, p, t) for m in recipe.models for p in recipe.providers for t in recipe.threads]
    rows: dict[int, dict[str, Any]] = {}
    groups = groups_of([{"provider": p, "threads": t} for _, p, t in configs])
    done = 0
    for group in groups:
        # Only this group's sessions are held, released before the next provider or thread
        # count; a model's parsed form only while its session and inputs are made (a 200 MB
        # tree ensemble is 1.4 GB parsed and 2.4 GB as a session: never a second copy).
        ready: list[tuple[int, Any, dict[str, np.ndarray]]] = []
        for k in group:
            model_path, provider, threads = configs[k]
            label = f"{Path(model_path).name} · {provider} · {threads} thread(s)"
            reporter.stage(f"Preparing {label}", done / len(configs))
            row: dict[str, Any] = {"model": model_path, "ep": provider, "threads": threads}
            rows[k] = row
            reason = unavailable_reason(provider)
            if reason:
                reporter.warn(reason)
                row["error"] = reason
                continue
            prepared = _prepare(
                Path(model_path),
                provider,
                threads,
                recipe,
                quantized,
                inputs,
                reporter,
                label,
                done / len(configs),
            )
            if isinstance(prepared, str):
                row["error"] = prepared
                continue
            row["quantized_ops"] = quantized[model_path]
            session, feeds = prepared
            ready.append((k, session, feeds))
        if ready:
            names = ", ".join(Path(configs[k][0]).name for k, _, _ in ready)
            reporter.stage(
                f"Timing {names} · {configs[ready[0][0]][1]} · "
                f"{configs[ready[0][0]][2]} thread(s)"
                + (" (interleaved)" if len(ready) > 1 else ""),
                done / len(configs),
            )
            timings = time_sessions(
                [(session, feeds) for _, session, feeds in ready],
                recipe.warmup,
                recipe.runs,
                recipe.seconds or None,
                recipe.io_binding,
            )
            for (k, _, feeds), (wall, cpu) in zip(ready, timings, strict=True):
                stats = latency_stats(wall, batch=recipe.batch, cpu_ms=cpu, threads=configs[k][2])
                rows[k].update(
                    {
                        **to_json(stats),
                        "samples_ms": wall[:MAX_SAMPLES_KEPT],
                        "inputs": {n: list(v.shape) for n, v in feeds.items()},
                    }
                )
                reporter.log(
                    f"{Path(configs[k][0]).name} · {configs[k][1]} · {configs[k][2]} "
                    f"thread(s): median {stats.median_ms:.3f} ms, p90 "
                    f"{stats.p90_ms:.3f} ms" + (" (contended machine)" if stats.contended else "")
                )
        done += len(group)
    return [rows[k] for k in range(len(configs))]


def read_for_inputs(path: Path) -> onnx.ModelProto:
    """The model at ``path`` as input derivation needs it (structure only for a model that
    keeps its data in node attributes, as :func:`read_for_session` gives it)."""
    proto, _ = read_full_model(path)
    return structure_only(proto) if has_large_attributes(proto) else proto


def read_for_session(path: Path) -> tuple[onnx.ModelProto, bytes | str]:
    """The model at ``path`` parsed, and what to open its onnxruntime session from.

    The session opens from the file when it holds every weight (no serialised copy);
    external weights go in from memory, as our external-data policy loaded them. A model that
    keeps its data in node attributes (tree ensembles) comes back as its structure only, so the
    parsed data is gone before the session comes (:func:`structure_only`).
    """
    proto, external = read_full_model(path)
    source: bytes | str = proto.SerializeToString() if external else str(path)
    if has_large_attributes(proto):
        proto = structure_only(proto)
    return proto, source


def _prepare(
    path: Path,
    provider: str,
    threads: int,
    recipe: Any,
    quantized: dict[str, list[str]],
    inputs: dict[str, dict[str, np.ndarray] | str],
    reporter: Reporter,
    label: str,
    fraction: float,
) -> tuple[Any, dict[str, np.ndarray]] | str:
    """A session on ``path`` and the feeds it is timed on, or why there is none (the row's
    error). ``quantized`` and ``inputs`` remember per model what was read once."""
    key = str(path)
    try:
        proto, source = read_for_session(path)
    except EdgeStudioError as exc:  # the other models' rows still count
        reporter.warn(f"{label}: {exc}")
        return str(exc)
    quantized.setdefault(key, quantized_ops_in(proto))
    try:
        session = session_for(source, provider, threads, recipe.opt_level)
    except Exception as exc:
        reporter.warn(f"{label}: {exc}")
        return f"session failed: {exc}"
    placed = session.get_providers()
    if provider not in placed:
        return f"{provider} could not be used; onnxruntime fell back to {', '.join(placed)}."
    if key not in inputs:
        reporter.stage(f"{label}: finding inputs the model runs on", fraction)
        try:
            inputs[key] = job_inputs(
                path,
                proto,
                recipe.shapes,
                recipe.ranges,
                recipe.data,
                reporter,
                session=session if provider == "CPUExecutionProvider" else None,
            ).feeds(recipe.batch, recipe.seed)
        except EdgeStudioError as exc:
            inputs[key] = str(exc)
    del proto, source
    feeds = inputs[key]
    return feeds if isinstance(feeds, str) else (session, feeds)


def run_probe(recipe: ProbeRecipe, reporter: Reporter, staging: Path) -> JobReport[ProviderProbes]:
    """Try every provider of this onnxruntime on a one-node model."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    tiny = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    tiny.ir_version = 8
    data = tiny.SerializeToString()
    available = set(ort.get_available_providers())
    rows = []
    for provider in ort.get_all_providers():
        reason = unavailable_reason(provider)
        works = False
        if reason is None:
            try:
                session = session_for(data, provider, 1)
                session.run(None, {"x": np.ones(4, np.float32)})
                works = provider in session.get_providers()
                if not works:
                    reason = "the session fell back to another provider"
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
        rows.append(
            {
                "provider": provider,
                "available": provider in available,
                "works": works,
                "reason": reason,
                "package": package_for(provider),
            }
        )
    reporter.stage("Done", 1.0)
    probes = from_json(list[ProviderProbe], rows)  # typed where it is made
    return JobReport(
        kind=recipe.kind, result=ProviderProbes(probes, ort.__version__, onnx.__version__)
    )
