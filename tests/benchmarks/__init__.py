"""Benchmarks for ``make bench`` (not collected by pytest): medians and ratios, side by side."""

import os
import tempfile
from pathlib import Path


def run_from_bytecode() -> None:
    """Have every process the benchmarks start run from compiled bytecode, as installed
    packages do (pip compiles them; the frozen app ships them). With PYTHONDONTWRITEBYTECODE
    in the environment, EdgeStudio's own modules (an editable install) would be compiled from
    source at every start while onnxruntime's were not; the bytecode goes to a folder of its
    own instead of the source tree."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        os.environ.setdefault(
            "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "edgestudio-bench-bytecode")
        )
