"""Qualcomm's Hexagon NPU through onnxruntime-qnn's HTP backend, which emulates the NPU on x86:
sessions, and which nodes it takes, in its own words (runs in a job worker).

onnxruntime-qnn is a *plugin* execution provider: registered from its library, picked from
onnxruntime's EP devices. Its per-node verdicts are written only to onnxruntime's verbose log
(``LogNodeSupport``: "Validation FAILED for N nodes in OrtNodeUnit (Op)", each node, then
"REASON : …"), so the log of the session's creation is captured from the process's stderr and
read; where a node ran comes from onnxruntime's own assignment record, never from the log.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.targets.target_recipe import (
    FOLDED,
    ON_CPU,
    ON_TARGET,
    NodePlacement,
    Placement,
)

EP_NAME = "QNNExecutionProvider"
SOC_FOR_ARCH = {"68": "30", "69": "36", "73": "57", "75": "60", "79": "69"}  # a Snapdragon each

_UNIT = re.compile(r"Validation (PASSED|FAILED) for \d+ nodes in OrtNodeUnit \((\S+)\)")
_NODE = re.compile(r"Operator type: (\S+) Node name: (.*?) Node index: \d+")
_REASON = re.compile(r"REASON\s*:\s*(.*)")
_LAYOUT_COPY = re.compile(r"_token_\d+$")
_registered = False
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
FOLDED_WHY = "folded away by onnxruntime (a constant once the sizes are fixed, or a Q/DQ it moved)"


class TargetUnavailableError(EdgeStudioError):
    """The target's provider package is not installed here (said with how to get it): a job
    fails with this message as it is."""


def provider_version() -> str:
    """``onnxruntime-qnn 2.7.0``; raises TargetUnavailableError without the package."""
    try:
        from importlib.metadata import version

        import onnxruntime_qnn  # noqa: F401  (the check that it imports)
    except ImportError as exc:
        raise TargetUnavailableError(
            "onnxruntime-qnn is not installed (pip install onnxruntime-qnn; make installs it "
            "on x86-64 Linux)"
        ) from exc
    return f"onnxruntime-qnn {version('onnxruntime-qnn')}"


def _devices() -> list[Any]:
    """The QNN EP's devices, its library registered once per process."""
    global _registered
    import onnxruntime as ort
    import onnxruntime_qnn

    provider_version()
    if not _registered:
        ort.register_execution_provider_library(EP_NAME, onnxruntime_qnn.get_library_path())
        _registered = True
    devices = [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]
    if not devices:
        raise TargetUnavailableError("onnxruntime-qnn is installed but offers no device here")
    return devices


def session_options(htp_arch: str, fallback: bool = True, verbose: bool = False) -> Any:
    """Session options that put the model on the emulated HTP of ``htp_arch`` (with the CPU
    taking what it refuses, unless ``fallback`` is off)."""
    import onnxruntime as ort
    import onnxruntime_qnn

    options = ort.SessionOptions()
    if verbose:
        options.log_severity_level = 0
    options.add_provider_for_devices(
        _devices(),
        {
            "backend_path": onnxruntime_qnn.get_qnn_htp_path(),
            "htp_arch": htp_arch,
            "soc_model": SOC_FOR_ARCH.get(htp_arch, "0"),
        },
    )
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    if not fallback:
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return options


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """The process's stderr (file descriptor 2, where onnxruntime's C++ logger writes) sent
    to ``path`` for the duration."""
    saved = os.dup(2)
    with open(path, "wb") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def validations(log: str) -> tuple[dict[str, str], set[str]]:
    """From the provider's verbose log: node name → its reason for each node it refused, and
    the nodes it accepted (the first verdict of a node wins: the provider checks the graph
    again after its layout pass, where renamed copies stand for the nodes)."""
    reasons: dict[str, str] = {}
    accepted: set[str] = set()
    pending: list[str] = []
    failed = False
    for line in log.splitlines():
        unit = _UNIT.search(line)
        if unit:
            pending, failed = [], unit.group(1) == "FAILED"
            continue
        node = _NODE.search(line)
        if node:
            name = node.group(2)
            if failed:
                pending.append(name)
            elif name not in reasons:
                accepted.add(name)
            continue
        reason = _REASON.search(line)
        if reason and failed:
            for name in pending:
                if name not in accepted:
                    reasons.setdefault(name, reason.group(1).strip())
            pending = []
    return reasons, accepted


def placement(path: Path, htp_arch: str) -> Placement:
    """Where every node of ``path`` runs with the emulated HTP first and the CPU after it, each
    refusal with the provider's reason; a session the provider cannot build is the verdict."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as scratch:
        log_path = Path(scratch) / "ort.log"
        try:
            with _stderr_to(log_path):
                session = ort.InferenceSession(str(path), session_options(htp_arch, verbose=True))
        except TargetUnavailableError:
            raise
        except Exception as exc:  # the layout pass's NHWC failure, an unsupported model…
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return Placement(session_error=first[:600])
        log = log_path.read_text(errors="replace")
    # The provider's layout pass re-creates a Conv in NHWC as "<name>_token_<k>": the same node
    kernels = [
        Kernel(_LAYOUT_COPY.sub("", n.name), n.op_type, sub.ep_name)
        for sub in session.get_provider_graph_assignment_info()
        for n in sub.get_nodes()
    ]
    model = onnx.load(str(path), load_external_data=False)
    graph = [
        (node.name or f"{node.op_type}_{i}", node.op_type)
        for i, node in enumerate(model.graph.node)
    ]
    return Placement(placed(graph, kernels, *validations(log)))


class Kernel(NamedTuple):
    """One kernel of the session, as onnxruntime's assignment record names it."""

    name: str
    op_type: str
    ep: str


def placed(
    graph: list[tuple[str, str]],
    kernels: list[Kernel],
    reasons: dict[str, str],
    accepted: set[str],
) -> list[NodePlacement]:
    """Where each (name, op type) of the model's graph ran, from the session's kernels (the
    layout pass's copies already named as the node they stand for) and the provider's log."""
    assigned = {k.name: k.ep for k in kernels}
    names = {name for name, _ in graph}
    # A node missing from the record was folded (a shape computation once sizes are fixed) or
    # fused into a kernel of onnxruntime's own; only a CPU kernel that is no node of the model
    # says the second happened on the CPU — a Q or DQ of its own is none: onnxruntime's QDQ
    # clean-up moves them (a graph input's Q) and the layout pass copies them.
    fused_on_cpu = any(
        k.name not in names and k.op_type not in QDQ_OPS for k in kernels if k.ep != EP_NAME
    )
    nodes = []
    for name, op_type in graph:
        ep = assigned.get(name)
        # a node the layout pass rewrote (an activation's DQ becomes "DequantizeLinear_token_k")
        # is where the provider's own validation put it
        if ep == EP_NAME or (ep is None and name in accepted and name not in reasons):
            nodes.append(NodePlacement(name, op_type, ON_TARGET))
            continue
        if ep is None and name not in reasons and not fused_on_cpu:
            nodes.append(NodePlacement(name, op_type, FOLDED, FOLDED_WHY))
            continue
        reason = reasons.get(name) or (
            "left to the CPU and fused there by onnxruntime into a kernel of its own"
            if ep is None
            else "left to the CPU without a reason in the provider's log (a graph input's "
            "Q or output's DQ, which the provider leaves to the CPU by design, or a node "
            "outside any unit it validates)"
        )
        nodes.append(NodePlacement(name, op_type, ON_CPU, reason))
    return nodes
