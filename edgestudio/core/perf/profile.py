"""The per-op profile job: a separate, profiled run; node times, op-type times, placement, and
NNAPI/CoreML coverage predicted by ORT's mobile usability checker."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.perf.bench import (
    BenchError,
    read_for_session,
    time_session,
    unavailable_reason,
)
from edgestudio.core.perf.bench_recipes import DeviceCheckRecipe, ProfileRecipe
from edgestudio.core.perf.perf_results import Profile
from edgestudio.core.perf.profile_parse import (
    GraphNode,
    load_events,
    placement_summary,
    summarize_profile,
)
from edgestudio.core.progress import Reporter
from edgestudio.core.remote.device_info import DeviceInfo
from edgestudio.core.remote.device_runner import session_for
from edgestudio.core.serialise import from_json


def mobile_coverage(model_path: Path) -> dict[str, Any]:
    """Share of nodes NNAPI and CoreML could take, from ORT's mobile usability checker."""
    try:
        from onnxruntime.tools.mobile_helpers import usability_checker as checker
    except ImportError:
        return {}
    result: dict[str, Any] = {}
    try:
        wrapper = checker.ModelProtoWithShapeInfo(model_path)
        model = wrapper.model_with_shape_info
        infos = {
            "NNAPI": checker.check_nnapi_partitions(model, False),
            "CoreML": checker.check_coreml_partitions(
                model, False, "coreml_supported_mlprogram_ops.md"
            ),
        }
    except Exception as exc:  # the checker is best-effort; say why it gave up
        return {"error": f"{type(exc).__name__}: {exc}"}
    for ep, info in infos.items():
        result[ep] = {
            "supported_nodes": info.num_supported_nodes,
            "nodes": info.num_nodes,
            "partitions": info.num_partitions,
            "unsupported_ops": sorted(str(o) for o in info.unsupported_ops),
            "suitability": info.suitability().name,
        }
    return result


def run_profile(recipe: ProfileRecipe, reporter: Reporter, staging: Path) -> JobReport[Profile]:
    """Profile ``recipe.model`` on its first provider and summarise the trace."""

    provider = recipe.providers[0]
    reason = None if recipe.device else unavailable_reason(provider)
    if reason:
        raise BenchError(reason)
    reporter.stage("Loading the model", 0.0)
    model, source = read_for_session(Path(recipe.model))
    graph = [
        GraphNode(n.name, n.op_type, tuple(n.input), tuple(n.output)) for n in model.graph.node
    ]
    op_types = {n.name: n.op_type for n in graph}
    with tempfile.TemporaryDirectory() as tmp:
        reporter.stage(f"Profiling {recipe.runs} runs on {provider}", 0.1)
        # The inputs first, on a session of their own (trial runs must not enter the
        # profile), released before the profiling session is made.
        feeds = job_inputs(
            Path(recipe.model), model, recipe.shapes, recipe.ranges, recipe.data, reporter
        ).feeds(recipe.batch)
        del model
        if recipe.device:
            del source
            events, runtime = _profile_there(recipe, feeds, reporter)
        else:
            session = session_for(
                source, provider, recipe.threads, profile_prefix=str(Path(tmp) / "profile")
            )
            del source
            time_session(session, feeds, warmup=0, runs=recipe.runs, seconds=None)
            trace = session.end_profiling()
            del session  # before the coverage prediction reads the model again
            reporter.stage("Reading the profile", 0.7)
            events, runtime = load_events(trace), _runtime_version()
    summary = summarize_profile(events, graph, recipe.runs)
    text, warnings = placement_summary(summary["placement"], op_types, provider)
    for w in warnings:
        reporter.warn(w)
    reporter.stage("Predicting NNAPI / CoreML coverage", 0.85)
    mobile = mobile_coverage(Path(recipe.model))
    mobile_error = mobile.pop("error", None)
    profile = from_json(
        Profile,
        {
            **summary,
            "mobile": mobile,
            "mobile_error": mobile_error,
            "placement_text": text,
            "first_choice": provider,
            "events": len(events),
            "device": recipe.device,
            "runtime": runtime,
        },
    )
    reporter.stage("Done", 1.0)
    return JobReport(
        kind=recipe.kind,
        warnings=warnings,
        result=dataclasses.replace(profile, warnings=list(warnings)),
    )


def _runtime_version() -> str:
    import onnxruntime as ort

    return str(ort.__version__)


def _profile_there(
    recipe: Any, feeds: dict[str, Any], reporter: Reporter
) -> tuple[list[dict[str, Any]], str]:
    """The trace events of the profiled run on the recipe's device."""
    from edgestudio.core.perf.remote_perf import profile_on_device
    from edgestudio.core.remote.devices import device_named

    return profile_on_device(
        device_named(recipe.device),
        Path(recipe.model),
        feeds,
        recipe.providers[0],
        recipe.threads,
        recipe.runs,
        reporter,
    )


def run_device_check(
    recipe: DeviceCheckRecipe, reporter: Reporter, staging: Path
) -> JobReport[DeviceInfo]:
    """What a device has, and why it cannot run models when it cannot (each with the fix)."""
    from edgestudio.core.remote.device_info import DeviceInfo
    from edgestudio.core.remote.devices import device_named
    from edgestudio.core.remote.runner_calls import check_device

    found = from_json(DeviceInfo, check_device(device_named(recipe.device), reporter))
    for problem in found.problems:
        reporter.warn(problem)
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, result=found)
