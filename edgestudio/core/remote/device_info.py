"""What ``device check`` finds on a target device, typed."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DeviceInfo:
    """What ``device check`` found on a device, and why it cannot run models (``problems``)."""

    name: str = ""
    address: str = ""
    runner: int = 0
    os: str = ""
    machine: str = ""
    cpu: str = ""
    cpu_flags: list[str] = field(default_factory=list)
    cores: int | None = None
    memory_bytes: int | None = None
    python: str = ""
    python_path: str = ""
    cache: str = ""
    free_bytes: int | None = None
    numpy: str | None = None
    onnxruntime: str | None = None
    providers: list[str] = field(default_factory=list)
    qnn: str | None = None  # onnxruntime-qnn's version there (it compiles for the NPU)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """True when the device can run models."""
        return not self.problems
