"""EdgeStudio: see, convert, quantize and benchmark ONNX models for edge devices."""

import os

# onnxruntime records telemetry unless this is set before its first import (ARCHITECTURE.md). The
# package is imported before anything else in every process we start, so setting it here covers
# the CLI, the GUI and every worker; child processes inherit it.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

__version__ = "0.1.0"
