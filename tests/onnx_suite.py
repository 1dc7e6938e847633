"""onnx's backend conformance cases, regenerated offline from the code in the onnx wheel."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
from onnx import numpy_helper


def write_node_suite(out: Path, with_data: bool = True) -> list[Path]:
    """Write every node test case as ``out/node/NAME/model.onnx`` (+ tensor data sets).

    Returns the model paths. ~1,900 models in ~7 s; data sets are written for cases whose
    inputs and outputs are plain tensors.
    """
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators overflow casts on purpose
        cases = node.collect_testcases(None)
    paths = []
    for case in cases:
        folder = out / "node" / case.name
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "model.onnx"
        path.write_bytes(case.model.SerializeToString())
        paths.append(path)
        if with_data:
            _write_data_sets(folder, case)
    return paths


def _write_data_sets(folder: Path, case: object) -> None:
    model = case.model  # type: ignore[attr-defined]
    for i, (inputs, outputs) in enumerate(case.data_sets):  # type: ignore[attr-defined]
        if not all(isinstance(a, np.ndarray) for a in [*inputs, *outputs]):
            continue
        ds = folder / f"test_data_set_{i}"
        ds.mkdir(exist_ok=True)
        for kind, arrays, infos in (
            ("input", inputs, model.graph.input),
            ("output", outputs, model.graph.output),
        ):
            for j, array in enumerate(arrays):
                name = infos[j].name if j < len(infos) else f"{kind}_{j}"
                try:
                    tensor = numpy_helper.from_array(array, name)
                except Exception:  # exotic dtypes (float8, int4 as object arrays)
                    continue
                (ds / f"{kind}_{j}.pb").write_bytes(tensor.SerializeToString())
