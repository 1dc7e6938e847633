"""The last step of every model-writing job: load the result in onnxruntime and run it.

A result that does not load or run is never reported as a success. Where onnxruntime itself is
known to crash on some results (it segfaults opening certain fp16 GRU models), the run happens
in a child process (``python -m edgestudio.core.model.result_gate MODEL FEEDS.npz``, or the frozen
app with ``--run-model``), so the crash becomes an answer instead of a dead worker.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgestudio.core.paths import child_command, child_env, exit_child

CHILD_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class GateResult:
    """Whether the result ran; ``crashed`` when onnxruntime killed the process doing it."""

    ok: bool
    reason: str = ""
    crashed: bool = False


def run_in_process(
    path: Path, feeds: dict[str, np.ndarray], extended_only: bool = False
) -> GateResult:
    """Load ``path`` in onnxruntime here and run it once on ``feeds`` (``extended_only``:
    with graph optimisations up to 'extended', without the last level's layout transforms —
    a diagnosis, never the proof)."""
    from edgestudio.core.model.sessions import cpu_session
    from edgestudio.core.model.validate import short

    try:
        session = cpu_session(str(path), level="extended" if extended_only else "all")
    except Exception as exc:  # onnxruntime's own exception classes
        return GateResult(False, f"onnxruntime cannot load it: {short(exc)}")
    try:
        outputs = session.run(None, feeds)
    except Exception as exc:
        return GateResult(False, f"it does not run: {short(exc)}")
    bad = [
        o.name
        for o, v in zip(session.get_outputs(), outputs, strict=True)
        if np.asarray(v).dtype.kind == "f"
        and np.asarray(v).size
        and not np.isfinite(np.asarray(v)).any()
    ]
    if bad:
        return GateResult(False, f"every value of output(s) {', '.join(bad)} is NaN or inf")
    return GateResult(True)


def run_isolated(
    path: Path, feeds: dict[str, np.ndarray], extended_only: bool = False
) -> GateResult:
    """Like :func:`run_in_process`, in a child process that may crash without harm."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "feeds.npz"
        np.savez(data, **feeds)  # type: ignore[arg-type]  # numpy types **kwds as bool
        extra = ["extended"] if extended_only else []
        try:
            done = subprocess.run(
                child_command("--run-model", str(path), str(data), *extra),
                env=child_env(),
                capture_output=True,
                text=True,
                timeout=CHILD_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return GateResult(False, f"it did not finish one run in {CHILD_TIMEOUT_S:.0f} s")
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        return GateResult(
            False, f"onnxruntime crashed ({name}) loading or running it", crashed=True
        )
    if done.returncode != 0:
        lines = [ln for ln in done.stdout.strip().splitlines() if ln]
        return GateResult(False, lines[-1] if lines else done.stderr.strip()[-300:])
    return GateResult(True)


def main(argv: list[str]) -> int:
    """Child entry: load MODEL, run it on FEEDS.npz (optimised up to LEVEL when a third
    argument says ``extended``), print why not on failure."""
    import edgestudio  # noqa: F401  (telemetry off before onnxruntime is imported)

    model, feeds_path, *level = argv
    with np.load(feeds_path, allow_pickle=False) as data:
        feeds = {k: data[k] for k in data.files}
    result = run_in_process(Path(model), feeds, extended_only=level == ["extended"])
    print(result.reason if not result.ok else "ok", flush=True)
    return 0 if result.ok else 1


if __name__ == "__main__":
    exit_child(main(sys.argv[1:]))
