"""Recipes for latency benchmarks, per-op profiles and the provider probe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.grammar import parse_counts
from edgestudio.core.job_api.command import (
    given_data,
    given_ranges,
    given_shapes,
    positional,
    spelled,
)
from edgestudio.core.job_api.options import option
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.perf.perf_results import Latency, Profile, ProviderProbes
from edgestudio.core.perf.providers import resolve_provider, short_name
from edgestudio.core.remote.device_info import DeviceInfo
from edgestudio.core.remote.device_runner import OPT_LEVELS as RUNNER_OPT_LEVELS

OPT_LEVELS = tuple(RUNNER_OPT_LEVELS)  # the names the runner maps to onnxruntime's levels


def provider_names(text: str) -> tuple[str, ...]:
    """``cpu,cuda`` → onnxruntime's provider names, in the order given."""
    return tuple(resolve_provider(p) for p in text.split(",") if p.strip())


def device_names(text: str) -> tuple[str, ...]:
    """``local,pi5`` → the device names, each once (ValueError when there is none)."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise ValueError("give device names, e.g. local,pi5")
    return names


def providers_field(help: str) -> Any:
    """The field of the execution providers to run on: ``--ep cpu,cuda``, always said."""
    return spelled(
        ("CPUExecutionProvider",),
        "--ep",
        show=lambda providers: ",".join(short_name(p) for p in providers),
        always=True,
        parse=provider_names,
        help=help,
    )


@dataclass(frozen=True)
class BenchRecipe(Recipe["Latency"]):
    """Latency of models × execution providers × intra-op thread counts, on the same inputs.

    Inputs come from the model's input specification: ``shapes`` (``image=1x3x224x224``) and
    ``ranges`` (``ids=0:30522``) override what is derived from the graph, ``batch`` sizes its
    batch dims, and ``data`` replaces it by the first sample of real data. ``seconds`` (if
    set) replaces ``runs`` as a time budget per configuration.
    """

    kind: ClassVar[str] = "bench"
    runs_alone: ClassVar[bool] = True
    models: tuple[str, ...] = positional(
        (), each=True, metavar="MODEL", help="the .onnx models to time"
    )
    providers: tuple[str, ...] = providers_field("providers, e.g. cpu,cuda (default cpu)")
    threads: tuple[int, ...] = spelled(
        (1,),
        "--threads",
        show=lambda threads: ",".join(map(str, threads)),
        always=True,
        parse=parse_counts,
        help="intra-op threads, e.g. 1,2 (default 1)",
    )
    # Declared once: the CLI flags, the Performance form's widgets and the command follow.
    warmup: int = option(
        10, "--warmup", "untimed runs first", label="Warm-up runs:", maximum=10_000, always=True
    )
    runs: int = option(100, "--runs", "timed runs", label="Timed runs:", minimum=1, always=True)
    seconds: float = option(
        0.0,
        "--seconds",
        "time budget per configuration instead of --runs (0: off)",
        label="Or time budget (s):",
        minimum=0,
        maximum=3600,
        placeholder="off (use runs)",
    )
    shapes: tuple[str, ...] = given_shapes()
    ranges: tuple[str, ...] = given_ranges()
    data: DataSource | None = given_data()
    batch: int = option(
        1, "--batch", "size of the batch dims", label="Batch:", minimum=1, maximum=4096
    )
    opt_level: str = option(
        "all",
        "--opt-level",
        "onnxruntime's graph optimisation level",
        choices=OPT_LEVELS,
        label="Optimisation:",
    )
    io_binding: bool = option(
        False,
        "--io-binding",
        "bind inputs and outputs once (device "
        "memory for GPU providers) instead of copying them every run",
        label="IO binding",
    )
    seed: int = 0
    # where to measure: "local" (this machine) and device names
    devices: tuple[str, ...] = spelled(
        (),
        "--device",
        show=",".join,
        parse=device_names,
        metavar="NAME[,NAME…]",
        help="measure on these devices (`edgestudio device add`); 'local' is this machine, "
        "e.g. local,pi5 side by side (default: this machine)",
    )

    def title(self) -> str:
        """Models × providers in a few words."""
        names = ("this machine" if d == "local" else d for d in self.devices)
        where = f" on {', '.join(names)}" if self.devices else ""
        return (
            f"Benchmark: {len(self.models)} model{'s' * (len(self.models) > 1)} × "
            f"{','.join(short_name(p) for p in self.providers)}{where}"
        )

    def input_paths(self) -> list[str]:
        """The models."""
        return list(self.models)

    @classmethod
    def result_type(cls) -> type[Latency]:
        """The latency rows, the verdicts and the failures."""
        return Latency


@dataclass(frozen=True)
class ProfileRecipe(Recipe["Profile"]):
    """A profiling run (separate from latency runs: profiling adds ~5 µs per kernel)."""

    kind: ClassVar[str] = "profile"
    runs_alone: ClassVar[bool] = True
    model: str = positional(help="the .onnx model")
    providers: tuple[str, ...] = providers_field(
        "providers in order of preference, e.g. xnnpack,cpu (default cpu)"
    )
    # Declared once: the CLI flags, the Performance form's widgets and the command follow.
    threads: int = option(
        1,
        "--threads",
        "intra-op threads",
        label="Profile threads:",
        minimum=1,
        maximum=256,
        always=True,
    )
    runs: int = option(
        20,
        "--runs",
        "profiled runs",
        label="Profiled runs:",
        minimum=1,
        maximum=100_000,
        always=True,
    )
    shapes: tuple[str, ...] = given_shapes()
    ranges: tuple[str, ...] = given_ranges()
    data: DataSource | None = given_data()
    batch: int = option(
        1, "--batch", "size of the batch dims", label="Batch:", minimum=1, maximum=4096
    )
    device: str = spelled(
        "",
        "--device",
        metavar="NAME",
        help="profile on this device (`edgestudio device add`; default: this machine)",
    )

    def title(self) -> str:
        """Name the model (and the device)."""
        where = f" on {self.device}" if self.device else ""
        return f"Profile: {self.model.rsplit('/', 1)[-1]}{where}"

    def input_paths(self) -> list[str]:
        """The model."""
        return [self.model]

    @classmethod
    def result_type(cls) -> type[Profile]:
        """The per-op profile (its warnings: nodes that fell back, …)."""
        return Profile


@dataclass(frozen=True)
class DeviceCheckRecipe(Recipe["DeviceInfo"]):
    """What a device has: OS, CPU flags, memory, Python, onnxruntime and its providers."""

    kind: ClassVar[str] = "device_check"
    command: ClassVar[tuple[str, ...]] = ("device", "check")
    device: str = positional(help="the device's name")

    def title(self) -> str:
        """Name the device."""
        return f"Check device {self.device}"

    @classmethod
    def result_type(cls) -> type[DeviceInfo]:
        """What the device has."""
        return DeviceInfo


@dataclass(frozen=True)
class ProbeRecipe(Recipe["ProviderProbes"]):
    """Which execution providers this onnxruntime has and whether each really works."""

    kind: ClassVar[str] = "providers"

    def title(self) -> str:
        """Name the job."""
        return "Probe execution providers"

    @classmethod
    def result_type(cls) -> type[ProviderProbes]:
        """Whether each provider works."""
        return ProviderProbes
