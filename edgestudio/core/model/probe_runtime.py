"""Child-process probe of the installed onnxruntime: version, providers and newest opset.

onnxruntime has no API for the newest opset it implements, so we ask it: build a one-node model
at each opset and see which ones load. Run as ``python -m edgestudio.core.model.probe_runtime``;
prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import json
import sys

import edgestudio  # noqa: F401  (disables onnxruntime telemetry before its import)
from edgestudio.core.paths import exit_child


def _loads(opset: int) -> bool:
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def probe() -> dict[str, object]:
    """Return ``{"version", "providers", "max_opset"}`` of the installed onnxruntime."""
    import onnxruntime as ort

    low, high = 7, 64  # opset 7 always loads; 64 is far beyond any release
    while high - low > 1:
        mid = (low + high) // 2
        if _loads(mid):
            low = mid
        else:
            high = mid
    return {
        "version": ort.__version__,
        "providers": list(ort.get_available_providers()),
        "max_opset": low,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the probe's JSON on the last line of stdout."""
    sys.stdout.write("\n" + json.dumps(probe()) + "\n")
    return 0


if __name__ == "__main__":
    exit_child(main())
