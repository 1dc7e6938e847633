"""User preferences as typed data (stored by the GUI in QSettings)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

THEMES = ("system", "light", "dark")


@dataclass(frozen=True)
class Preferences:
    """What a user can set once instead of in every form.

    ``output_pattern`` names results: ``{folder}`` is the model's folder, ``{stem}`` its file
    name without ``.onnx``, ``{suffix}`` what the job adds (``opset18``, ``qdq``, …).
    """

    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    threads: tuple[int, ...] = (1,)
    atol: float = 1e-4
    rtol: float = 1e-3
    output_pattern: str = "{folder}/{stem}_{suffix}.onnx"
    theme: str = "system"
    ray_address: str = ""  # auto-tune's candidates go to this Ray cluster ("": this machine)
    parallel_jobs: int = 2  # jobs the window runs at once (auto-tune's candidates included)

    def output_for(self, model: str | Path, suffix: str) -> str:
        """The default output path of a job on ``model``."""
        path = Path(model)
        return self.output_pattern.format(folder=str(path.parent), stem=path.stem, suffix=suffix)

    @classmethod
    def from_settings(cls, data: dict[str, Any]) -> Preferences:
        """Read settings stored by the window (QSettings may hand back strings, a list as "a,b"):
        unknown keys and unusable values fall back to the defaults, so a bad entry never stops
        the window from starting."""
        defaults = cls()
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = data.get(f.name, getattr(defaults, f.name))
            default = getattr(defaults, f.name)
            try:
                if isinstance(default, tuple):
                    items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
                    kind = type(default[0])
                    values[f.name] = tuple(kind(v) for v in items if str(v).strip())
                else:
                    values[f.name] = type(default)(raw)
            except (TypeError, ValueError):
                values[f.name] = default
        if values["theme"] not in THEMES:
            values["theme"] = defaults.theme
        values["parallel_jobs"] = min(16, max(1, values["parallel_jobs"]))
        if "{stem}" not in values["output_pattern"]:
            values["output_pattern"] = defaults.output_pattern
        return cls(**values)
