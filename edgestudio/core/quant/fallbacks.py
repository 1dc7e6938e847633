"""What to keep in float (or float32) after onnxruntime rejected or crashed on a quantized
result: the node it names, the operator type, what computes a node's parameters, or the types
a bisection finds."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgestudio.core.model.opsets import iter_nodes
from edgestudio.core.model.result_gate import run_isolated
from edgestudio.core.model.validate import ort_gist
from edgestudio.core.progress import RecordingReporter, Reporter
from edgestudio.core.quant.fp16_bisect import Bisection, float32_types_needed
from edgestudio.core.quant.quant_recipes import (
    STATIC_MODES,
    QuantRecipe,
)
from edgestudio.core.quant.quantizers import run_fp16

# onnxruntime (1.32) segfaults opening the fp16 forms of these on some models (GRU audio models
# reproduced without EdgeStudio); they are kept in float32 when the fp16 result crashes it.
FP16_CRASH_SUSPECTS = ("GRU", "LSTM", "RNN")


# How many times an fp16 result is re-made keeping in float32 what onnxruntime named (each
# round names the next node it rejects; real models needed one or two).
FP16_FALLBACK_ROUNDS = 8


NODE_IN_ERROR = (
    re.compile(r"in node \(([^)]*)\)"),
    re.compile(r"node with name '([^']*)'"),
    re.compile(r"Name:'([^']*)'"),
    re.compile(r"\w+ node '([^']*)'"),
)


# ("... node 'NAME'" is how model/validate.py's ort_gist names it)
OP_IN_ERROR = re.compile(
    r"of operator \((\w+)\)|implementation for (\w+)\(|running (\w+) node"
    r"|(\w+) node '"
)


def fp16_fallback(
    reason: str, float_path: Path, recipe: QuantRecipe, blocked: tuple[str, ...], fp16_rounds: int
) -> tuple[str, tuple[str, ...], dict[str, Any]] | None:
    """What to keep in float32 after onnxruntime rejected an fp16 result with ``reason``.

    onnxruntime names the node it rejects (a float-only operator such as Celu, IsInf before
    opset 20); that node, and only it, is kept in float32. When a second node of an operator
    type already kept fails, the type has no float16 kernel here (ScatterElements with
    reduction 'add'): every node of it is kept. A node that fails again although kept gets
    what computes its parameters kept too (a Resize whose scales are computed in float16). An
    unnamed node is kept by its operator type. Returns (what, op block list, recipe changes),
    or None when the error names nothing new or the rounds are spent.
    """
    if fp16_rounds >= FP16_FALLBACK_ROUNDS:
        return None
    graph = onnx.load(str(float_path), load_external_data=False).graph
    by_name = {n.name: n for n in iter_nodes(graph) if n.name}
    named = [
        n
        for n in dict.fromkeys(
            m.group(1) for pattern in NODE_IN_ERROR for m in pattern.finditer(reason)
        )
        if n in by_name
    ]
    fresh = [n for n in named if n not in recipe.exclude]
    kept_types = {by_name[n].op_type for n in recipe.exclude if n in by_name}
    repeated = sorted({by_name[n].op_type for n in fresh} & kept_types - set(blocked))
    if repeated:
        return f"every {', '.join(repeated)} node", (*blocked, *repeated), {}
    if fresh:
        what = ", ".join(f"{by_name[n].op_type} node '{n}'" for n in fresh)
        return what, blocked, {"exclude": (*recipe.exclude, *fresh)}
    feeders = [
        n
        for n in parameter_producers(graph, [by_name[n] for n in named])
        if n not in recipe.exclude
    ]
    if feeders:
        return (
            f"the {len(feeders)} node(s) computing the parameters of "
            f"{', '.join(repr(n) for n in named)}",
            blocked,
            {"exclude": (*recipe.exclude, *feeders)},
        )
    ops = [next(g for g in m.groups() if g) for m in OP_IN_ERROR.finditer(reason)]
    ops = [op for op in dict.fromkeys(ops) if op not in blocked]
    if ops:
        return f"every {', '.join(ops)} node", (*blocked, *ops), {}
    return None


# How many attempts an integer result gets when onnxruntime rejects a node of it (each round
# keeps the node it names in float).
INTEGER_FALLBACK_ROUNDS = 6


def rejected_nodes(reason: str, float_path: Path, recipe: QuantRecipe) -> list[str]:
    """The float model's nodes that onnxruntime's refusal of a quantized result names, not
    already kept in float (a QDQ Transpose it cannot load, say).

    A refusal can name a node the float model lacks: one onnxruntime's optimiser made while
    loading the result (``Transpose node 'Transpose_token_7': Invalid attribute perm {0, 2, 3,
    1}, input shape = {36}`` after static quantization of a tf2onnx transcriber). The
    operator type it names is then kept in float, every node of it."""
    graph = onnx.load(str(float_path), load_external_data=False).graph
    nodes = [n for n in iter_nodes(graph) if n.name]
    names = {n.name for n in nodes}
    named = dict.fromkeys(m.group(1) for pattern in NODE_IN_ERROR for m in pattern.finditer(reason))
    found = [n for n in named if n in names and n not in recipe.exclude]
    if found or any(n in names for n in named):
        return found
    ops = {next(g for g in m.groups() if g) for m in OP_IN_ERROR.finditer(reason)}
    return [n.name for n in nodes if n.op_type in ops and n.name not in recipe.exclude]


def ort_cause(reason: str) -> str:
    """The part of an onnxruntime error that says why (see :func:`ort_gist`)."""
    return ort_gist(reason, 200)


def parameter_producers(
    graph: onnx.GraphProto, nodes: list[onnx.NodeProto], limit: int = 64
) -> list[str]:
    """The named nodes that compute ``nodes``' inputs after the first (scales, sizes, shapes),
    nearest first, at most ``limit``."""
    producers = {out: n for n in graph.node for out in n.output}
    frontier = [t for node in nodes for t in node.input[1:] if t]
    found: dict[str, None] = {}
    while frontier and len(found) < limit:
        node = producers.get(frontier.pop(0))
        if node is None or not node.name or node.name in found:
            continue
        found[node.name] = None
        frontier.extend(t for t in node.input if t)
    return list(found)


def int8_activations_may_help(recipe: QuantRecipe) -> bool:
    """True for a static uint8-activation recipe that int8 activations would keep valid."""
    return (
        recipe.mode in STATIC_MODES
        and recipe.activation_type == "uint8"
        and recipe.weight_type == "int8"
    )


def bisect_fp16_crash(
    float_path: Path,
    recipe: QuantRecipe,
    blocked: tuple[str, ...],
    feeds: dict[str, np.ndarray],
    work: Path,
    reporter: Reporter,
) -> Bisection:
    """The operator types to keep in float32 for an fp16 result onnxruntime crashes on (see
    :mod:`~edgestudio.core.quant.fp16_bisect`); each try converted and run in a child."""
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST

    graph = onnx.load(str(float_path), load_external_data=False).graph
    counts: dict[str, int] = {}
    for node in iter_nodes(graph):
        if node.op_type not in blocked and node.op_type not in DEFAULT_OP_BLOCK_LIST:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
    types = sorted(counts, key=lambda op: (-counts[op], op))
    reporter.stage(
        f"Finding what crashes onnxruntime: trying {len(types)} operator types kept in float32",
        0.86,
    )
    quiet = RecordingReporter()

    def runs(kept: tuple[str, ...]) -> bool:
        reporter.check_cancelled()
        out = work / "fp16_try.onnx"
        run_fp16(replace(recipe, op_block_list=(*blocked, *kept)), float_path, out, None, quiet)
        ok = run_isolated(out, feeds).ok
        reporter.log(
            f"fp16 keeping {', '.join(kept) or 'nothing more'} in float32: "
            + ("runs" if ok else "crashes or fails")
        )
        return ok

    return float32_types_needed(types, runs)


def fp16_suspects(model: onnx.ModelProto, blocked: tuple[str, ...]) -> list[str]:
    """The recurrent operator types in ``model`` onnxruntime is known to crash on in float16
    (:data:`FP16_CRASH_SUSPECTS`), not already kept in float32."""
    present = {n.op_type for n in iter_nodes(model.graph)}
    return [op for op in FP16_CRASH_SUSPECTS if op in present and op not in blocked]
