"""What to say when no input specification derived from a model's graph ran: which inputs and
dims are still unknown, what the graph fixed, and the ``--shape`` entry that settles them."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import onnx

from edgestudio.core.inputs.input_derivation import declared_inputs
from edgestudio.core.inputs.input_spec import InputSpecification


def needs_attention(model: onnx.ModelProto) -> list[str]:
    """Inputs a user may have to specify when no derived spec runs: unknown dims or ints."""
    names = []
    for inp in declared_inputs(model):
        if any(not isinstance(d, int) for d in inp.shape) or np.issubdtype(
            np.dtype(inp.dtype), np.integer
        ):
            names.append(f"{inp.name} {inp.dtype} {list(inp.shape)}")
    return names


def describe_failure(
    model: onnx.ModelProto, errors: Sequence[str], tried: Sequence[InputSpecification] = ()
) -> str:
    """The message when no candidate ran: which inputs and dims are still unknown, what the
    graph fixed, the ``--shape`` entry that settles them, and onnxruntime's last error."""
    last = errors[-1] if errors else "no candidate could be built"
    attention = needs_attention(model)
    head = (
        f"The model did not run on any of {len(errors)} input specification(s) derived "
        "from its graph" + (f" ({_shapes_tried(tried)})." if tried else ".")
    )
    if not attention:
        return (
            f"{head} Give real data (the Inputs tab's data; --data on the command line). "
            f"The last error: {last}"
        )
    parts = [head]
    first = tried[0] if tried else None
    fixed = [
        f"{e.name}: {why.strip()}"
        for e in (first.inputs if first else ())
        for why in e.reason.split(";")[1:]
    ]
    if fixed:
        parts.append("What the graph fixes: " + "; ".join(fixed) + ".")
    varied = _varied_symbols(tried)
    entries = []
    for e in first.inputs if first else ():
        unknown = [(a, d) for a, d in enumerate(e.declared) if isinstance(d, str) and d in varied]
        if unknown:
            letters = {a: _placeholder(d, e.name) for a, d in unknown}
            shape = "x".join(letters.get(a, str(n)) for a, n in enumerate(e.shape))
            tried_sizes = ", ".join(str(n) for n in varied[unknown[0][1]])
            dims = ", ".join(f"{letters[a]} = {_dim_label(d, e.name, a)}" for a, d in unknown)
            entries.append(f"--shape {e.name}={shape} ({dims}; tried {tried_sizes})")
    listed = ", ".join(attention)
    if entries:
        parts.append(
            f"Still unknown in {listed}: give the sizes your data has, "
            + "; ".join(entries)
            + " — on the command line, or the same entries in "
            "the Inputs tab's Shapes (values: --range NAME=LOW:HIGH, its Ranges), "
            "or real data (--data)."
        )
    else:
        parts.append(
            f"Give the shapes or value ranges of {listed} (the Inputs tab's Shapes "
            "and Ranges; --shape NAME=DIMxDIM / --range NAME=LOW:HIGH on the command "
            "line), or real data (--data)."
        )
    parts.append(f"The last error: {last}")
    return " ".join(parts)


def _shapes_tried(tried: Sequence[InputSpecification], most: int = 3) -> str:
    """``x 1x224x224x3; x 1x320x320x3; … 13 in all``: the shapes the candidates had."""
    shapes = [
        ", ".join(f"{e.name} {'x'.join(map(str, e.shape)) or 'scalar'}" for e in spec.inputs)
        for spec in tried
    ]
    said = "; ".join(shapes[:most])
    return f"tried {said}" + (f"; … {len(shapes)} in all" if len(shapes) > most else "")


def _varied_symbols(tried: Sequence[InputSpecification]) -> dict[str, list[int]]:
    """The symbols the candidates gave different sizes, with the sizes in the order tried."""
    sizes: dict[str, list[int]] = {}
    for spec in tried:
        for symbol, n in spec.sizes:
            sizes.setdefault(symbol, [])
            if n not in sizes[symbol]:
                sizes[symbol].append(n)
    return {s: v for s, v in sizes.items() if len(v) > 1}


def _dim_label(symbol: str, name: str, axis: int) -> str:
    return f"axis {axis}" if symbol.startswith(f"{name}:") else symbol


def _placeholder(symbol: str, name: str) -> str:
    """``N`` for an unnamed dim, the symbol in capitals (``TIME``) for a named one."""
    if symbol.startswith(f"{name}:"):
        return "N"
    return re.sub(r"\W", "_", symbol).upper()
