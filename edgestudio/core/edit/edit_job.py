"""The ``edit`` job: apply the recipe's edits to a copy of the model, write it, and check it.

The check: the edited model passes onnx's checker, loads in onnxruntime, and on the original's
input specification each of its outputs equals the original's tensor of the same name (before
renaming) — for an extracted subgraph, fed with the original's own values of the tensors it
starts at — within the recipe's tolerance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from edgestudio.core.convert.convert import result_unusable
from edgestudio.core.edit.edit_recipe import Edit, EditRecipe
from edgestudio.core.edit.streamed import has_external_weights, save_streamed
from edgestudio.core.edit.surgery import (
    PASS_THROUGH,
    EditError,
    add_outputs,
    bypass,
    extract,
    rename,
)
from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.inputs.input_spec import InputSpecError
from edgestudio.core.job_api.report import CheckCase, EquivalenceCheck, JobReport
from edgestudio.core.model.external_data import check_external_data
from edgestudio.core.model.model_files import load_full_model, load_structure, save_model
from edgestudio.core.model.sessions import cpu_session
from edgestudio.core.model.validate import compare_outputs, short
from edgestudio.core.progress import Reporter


def apply_edits(
    model: onnx.ModelProto, recipe: EditRecipe, reporter: Reporter
) -> tuple[onnx.ModelProto, list[str]]:
    """The edited model and what was done, in the recipe's order (a bypassed node that
    computes something is warned about: the check is then expected to differ)."""
    done: list[str] = []
    if recipe.inputs or recipe.outputs:
        inputs = list(recipe.inputs) or [
            v.name
            for v in model.graph.input
            if v.name not in {t.name for t in model.graph.initializer}
        ]
        outputs = list(recipe.outputs) or [o.name for o in model.graph.output]
        before = len(model.graph.node)
        model = extract(model, inputs, outputs)
        if not recipe.inputs:  # the graph's inputs the part reads, not every one of them
            read = {t for n in model.graph.node for t in n.input}
            kept = [
                v
                for v in model.graph.input
                if v.name in read or v.name in {o.name for o in model.graph.output}
            ]
            del model.graph.input[:]
            model.graph.input.extend(kept)
            inputs = [v.name for v in kept]
        done.append(
            f"extracted {len(model.graph.node)} of {before} nodes, from "
            f"{', '.join(inputs)} to {', '.join(outputs)}"
        )
    for node in recipe.bypass:
        op = next((n.op_type for n in model.graph.node if n.name == node), "")
        done.append(bypass(model, node))
        if op not in PASS_THROUGH:
            reporter.warn(
                f"{op} '{node}' computes something: bypassing it changes what the "
                "model computes after it, so the check against the original is "
                "expected to differ there."
            )
    if recipe.add_outputs:
        add_outputs(model, list(recipe.add_outputs))
        done.append(f"added as outputs: {', '.join(recipe.add_outputs)}")
    renames = recipe.renames()
    if renames:
        rename(model, renames)
        done.append("renamed " + ", ".join(f"{a} → {b}" for a, b in renames.items()))
    if recipe.simplify:
        reporter.stage("Simplifying (onnxslim)", 0.4)
        before = len(model.graph.node)
        model = _simplified(model)
        done.append(f"simplified by onnxslim: {before} → {len(model.graph.node)} nodes")
    return model, done


def _simplified(model: onnx.ModelProto) -> onnx.ModelProto:
    import onnxslim

    try:
        slim: onnx.ModelProto = onnxslim.slim(model)
    except Exception as exc:  # onnxslim raises what its passes raise
        raise EditError(f"onnxslim could not simplify the model: {short(exc)}") from exc
    return slim


# A model whose weights outside its file exceed this is not run beside its edit (the check
# then proves the edit loads and runs on its own, and says it could not compare).
COMPARE_LIMIT = 2_000_000_000


def run_edit(recipe: EditRecipe, reporter: Reporter, staging: Path) -> JobReport[Edit]:
    """Edit ``recipe.model`` into ``staging``, then check the result against the original.
    A model with external weights is edited as its structure, the kept weights streamed."""
    source = Path(recipe.model)
    reporter.stage("Reading the model", 0.0)
    try:
        recipe.renames()
    except ValueError as exc:
        raise EditError(str(exc)) from exc
    structure = load_structure(source)
    streamed = has_external_weights(structure)
    if streamed and recipe.simplify:
        raise EditError(
            "--simplify needs every weight in memory, and this model keeps its "
            "weights in external files: cut it first, then simplify the part."
        )
    original = structure if streamed else load_full_model(source)
    reporter.stage("Editing" + (" the structure (weights stay on disk)" if streamed else ""), 0.2)
    edited = onnx.ModelProto()
    edited.CopyFrom(original)
    edited, done = apply_edits(edited, recipe, reporter)
    for line in done:
        reporter.log(line)
    name = Path(recipe.output or source.name).name
    if streamed:
        reporter.stage("Copying the weights it keeps", 0.4)
        files = save_streamed(edited, source.parent, staging, name)
    else:
        reporter.stage("Writing the result", 0.5)
        files = save_model(edited, staging, name)
    reporter.stage("Checking against the original", 0.6)
    weights = (
        sum(f.size_bytes for f in check_external_data(structure, source.parent)) if streamed else 0
    )
    if weights > COMPARE_LIMIT:
        check = _check_alone(staging / name, weights, recipe, reporter)
    else:
        full = load_full_model(source) if streamed else original
        check = _check(staging / name, source, full, edited, recipe, reporter)
    failed = result_unusable(check)
    if failed:
        raise EditError(failed)
    reporter.stage(f"Done: {check.verdict()}", 1.0)
    return JobReport(
        kind=recipe.kind,
        files=files,
        check=check,
        result=Edit(
            edits=done,
            nodes=len(edited.graph.node),
            streamed=streamed,
            inputs=[v.name for v in edited.graph.input],
            outputs=[o.name for o in edited.graph.output],
        ),
    )


def _checked(path: Path, recipe: EditRecipe) -> EquivalenceCheck:
    """A check with onnx's checker run on ``path`` (full: shapes and types too)."""
    check = EquivalenceCheck(atol=recipe.tolerance.atol, rtol=recipe.tolerance.rtol)
    try:
        onnx.checker.check_model(str(path), full_check=True)
        check.checker_ok, check.checker_message = True, "valid"
    except Exception as exc:  # onnx raises several unrelated types here
        check.checker_message = f"{type(exc).__name__}: {short(exc)}"
    return check


def _check_alone(
    path: Path, original_bytes: int, recipe: EditRecipe, reporter: Reporter
) -> EquivalenceCheck:
    """The result checked, loaded and run on its own inputs; not compared with an original too
    big to run beside it (the case says so: the outcome is *unchecked*)."""
    check = _checked(path, recipe)
    if not check.checker_ok:
        return check
    try:
        resolved = job_inputs(
            path, load_structure(path), recipe.shapes, recipe.ranges, reporter=reporter
        )
        check.session_ok, check.session_message = True, "loads"
    except InputSpecError as exc:
        check.session_ok, check.session_message = True, "loads"
        check.note = f"no inputs it runs on: {exc}"
        return check
    except Exception as exc:
        check.session_message = f"{type(exc).__name__}: {short(exc)}"
        return check
    case = CheckCase(
        label="its own inputs ("
        + ", ".join(f"{e.name} {e.shape_text()}" for e in resolved.spec.inputs)
        + ")"
    )
    case.skipped = (
        f"runs; not compared: the original's weights ({original_bytes / 2**30:.1f} "
        "GiB) are not loaded beside it, to keep memory bounded by what the edit "
        "keeps"
    )
    check.cases.append(case)
    return check


def _check(
    path: Path,
    source: Path,
    original: onnx.ModelProto,
    edited: onnx.ModelProto,
    recipe: EditRecipe,
    reporter: Reporter,
) -> EquivalenceCheck:
    """Checker, session, then each output against the original's tensor of its name."""
    tol = recipe.tolerance
    check = _checked(path, recipe)
    if not check.checker_ok:
        return check
    try:
        session = cpu_session(str(path))
        check.session_ok, check.session_message = True, "loads"
    except Exception as exc:
        check.session_message = f"{type(exc).__name__}: {short(exc)}"
        return check
    try:
        spec = job_inputs(source, original, recipe.shapes, recipe.ranges, reporter=reporter).spec
    except InputSpecError as exc:
        check.note = f"no inputs the original runs on: {exc}"
        return check
    back = {new: old for old, new in recipe.renames().items()}
    inits = {t.name for t in edited.graph.initializer}
    ins = [v.name for v in edited.graph.input if v.name not in inits]
    outs = [o.name for o in edited.graph.output]
    wanted = list(dict.fromkeys(back.get(n, n) for n in (*ins, *outs)))
    case = CheckCase(
        label="the original's inputs and tensors ("
        + ", ".join(f"{e.name} {e.shape_text()}" for e in spec.inputs)
        + ")"
    )
    check.cases.append(case)
    try:
        values = _original_values(original, wanted, spec.feeds())
    except Exception as exc:  # the original itself does not run here
        case.skipped = f"the original does not run on these inputs: {short(exc)}"
        return check
    feeds = {n: values[back.get(n, n)] for n in ins}
    try:
        got = session.run(outs, feeds)
    except Exception as exc:
        case.error = f"the result does not run on the original's values: {short(exc)}"
        return check
    case.outputs = compare_outputs(
        outs, got, [values[back.get(n, n)] for n in outs], tol.atol, tol.rtol
    )
    return check


def _original_values(
    model: onnx.ModelProto, names: list[str], feeds: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The original's values of ``names`` (graph inputs, or any tensor it computes)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    present = {o.name for o in probe.graph.output}
    computed = [n for n in names if n not in feeds]
    for n in computed:
        if n not in present:
            probe.graph.output.append(onnx.ValueInfoProto(name=n))
    session = cpu_session(probe.SerializeToString(), optimized=False)
    values = dict(zip(computed, session.run(computed, feeds), strict=True)) if computed else {}
    return {**{n: feeds[n] for n in names if n in feeds}, **values}
