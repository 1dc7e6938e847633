"""``edgestudio bench``, ``edgestudio profile`` and ``edgestudio providers``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edgestudio.cli.job_ui import (
    EXIT_JOB_FAILED,
    EXIT_OK,
    add_input_args,
    add_timeout_arg,
    execute_job,
    input_fields,
)
from edgestudio.cli.json_option import add_json_option
from edgestudio.cli.output import print_table
from edgestudio.cli.workspace_option import add_workspace_option
from edgestudio.core.job_api.arguments import add_spelled, spelled_values
from edgestudio.core.job_api.options import add_options, values_from_args
from edgestudio.core.perf.bench_recipes import BenchRecipe, ProbeRecipe, ProfileRecipe
from edgestudio.core.perf.perf_results import LatencyRow
from edgestudio.core.perf.providers import short_name


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bench``, ``profile`` and ``providers``."""
    p = subparsers.add_parser(
        "bench",
        help="latency per model × execution provider × thread count",
        description="Time models on execution providers with seeded inputs (the same for every "
        "configuration): median, p90, p99, min, mean ± std, throughput, process-CPU median and a "
        "contended-machine flag. Providers are tried in the order given; CPU takes the nodes "
        "the first cannot run.",
    )
    add_spelled(p, BenchRecipe)  # the models, providers, threads and devices
    add_options(p, BenchRecipe)  # warm-up, runs, time budget, batch, optimisation, IO binding
    add_input_args(p, data=True)
    add_json_option(p, "the results")
    add_workspace_option(p)
    add_timeout_arg(p)
    p.set_defaults(func=run_bench, make_recipe=bench_recipe_from_args)

    q = subparsers.add_parser(
        "profile",
        help="per-op time and execution-provider placement",
        description="A separate, profiled run: time per node and per op type, which provider "
        "ran each node (with a warning when nodes fell back from the first choice), and the "
        "NNAPI/CoreML coverage ORT's mobile usability checker predicts.",
    )
    add_spelled(q, ProfileRecipe)  # the model, providers and device
    add_options(q, ProfileRecipe)
    add_input_args(q, data=True)
    q.add_argument(
        "--top", type=int, default=15, help="print the N slowest nodes (default %(default)s)"
    )
    add_json_option(q, "the profile")
    add_workspace_option(q)
    add_timeout_arg(q)
    q.set_defaults(func=run_profile, make_recipe=profile_recipe_from_args)

    r = subparsers.add_parser("providers", help="list execution providers and whether they work")
    add_json_option(r, "the list")
    add_timeout_arg(r)
    r.set_defaults(func=run_providers)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_results(rows: list[LatencyRow]) -> None:
    """The benchmark table (milliseconds; runs per second)."""
    table = []
    devices = any(r.device for r in rows)  # the "where" column only when a device measured
    for r in rows:
        head = [
            Path(r.model).name,
            *([f"{r.where} (ort {r.runtime})"] if devices else []),
            short_name(r.ep),
            r.threads,
        ]
        if not r.ok:
            table.append([*head, "", "", "", "", "", "", "", r.error])
            continue
        table.append(
            [
                *head,
                _ms(r.median_ms),
                _ms(r.p90_ms),
                _ms(r.p99_ms),
                _ms(r.min_ms),
                f"{_ms(r.mean_ms)} ± {_ms(r.std_ms)}",
                f"{r.throughput_per_s or 0:.0f}",
                _ms(r.cpu_median_ms),
                "contended machine" if r.contended else "",
            ]
        )
    shift = 1 if devices else 0
    print_table(
        [
            "model",
            *(["where"] if devices else []),
            "ep",
            "threads",
            "median ms",
            "p90 ms",
            "p99 ms",
            "min ms",
            "mean ± std ms",
            "runs/s",
            "cpu ms",
            "note",
        ],
        table,
        numeric=tuple(range(2 + shift, 10 + shift)),
    )


def bench_recipe_from_args(args: argparse.Namespace) -> BenchRecipe:
    """The benchmark the parsed arguments describe."""
    return BenchRecipe(
        **spelled_values(args, BenchRecipe),
        **values_from_args(args, BenchRecipe),
        **input_fields(args),
    )


def profile_recipe_from_args(args: argparse.Namespace) -> ProfileRecipe:
    """The profile the parsed arguments describe."""
    return ProfileRecipe(
        **spelled_values(args, ProfileRecipe),
        **values_from_args(args, ProfileRecipe),
        **input_fields(args),
    )


def run_bench(args: argparse.Namespace) -> int:
    """Run the benchmark and print its table."""
    code, job = execute_job(bench_recipe_from_args(args), args, show_report=False)
    if job is not None and job.report is not None:
        latency = job.report.result
        print_results(latency.rows)
        for line in latency.verdicts:
            print(line)
        for failure in latency.failures:
            print(
                f"edgestudio: error: {failure} (the rows it measured are kept above)",
                file=sys.stderr,
            )
        if code == EXIT_OK and latency.failures:
            return EXIT_JOB_FAILED
        if code == EXIT_OK and not any(r.ok for r in latency.rows):
            print(
                "edgestudio: error: nothing was measured (every configuration failed; the "
                "table says why)",
                file=sys.stderr,
            )
            return EXIT_JOB_FAILED
    return code


def run_profile(args: argparse.Namespace) -> int:
    """Run the profile and print per-op time and placement."""
    code, job = execute_job(profile_recipe_from_args(args), args, show_report=False)
    if job is None or job.report is None:
        return code
    profile = job.report.result
    if profile.device:
        print(f"profiled on {profile.device} (onnxruntime {profile.runtime})")
    print(f"placement: {profile.placement_text}")
    print_table(
        ["µs / run", "share", "op", "ep", "node", "fused from"],
        [
            [
                f"{n.time_us:.1f}",
                f"{n.share:.1%}",
                n.op_type,
                short_name(n.ep),
                n.node,
                ", ".join(n.covers) or "?" if n.fused else "",
            ]
            for n in profile.nodes[: args.top]
        ],
        title=f"The {min(args.top, len(profile.nodes))} slowest nodes",
        numeric=(0, 1),
    )
    print("by op type: " + ", ".join(f"{o.op_type} {o.share:.0%}" for o in profile.op_types))
    for ep, info in profile.mobile.items():
        print(
            f"predicted {ep}: {info.supported_nodes}/{info.nodes} nodes in "
            f"{info.partitions} partition(s), {info.suitability}"
            + (f"; unsupported: {', '.join(info.unsupported_ops)}" if info.unsupported_ops else "")
        )
    if profile.mobile_error:
        print(f"NNAPI/CoreML coverage could not be predicted: {profile.mobile_error}")
    return code


def run_providers(args: argparse.Namespace) -> int:
    """List the providers."""
    code, job = execute_job(ProbeRecipe(), args, show_report=False)
    if job is not None and job.report is not None:
        probes = job.report.result.providers
        print_table(
            ["provider", "state", "why"],
            [[p.provider, "works" if p.works else "unavailable", p.reason or ""] for p in probes],
        )
    return code
