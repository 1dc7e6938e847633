"""The target check job: where each node of a model runs on the target, why not the others,
and the same after the fixes the app can make (dynamic dims fixed to the input sizes)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.progress import Reporter
from edgestudio.core.targets.target_recipe import (
    FOLDED,
    NodePlacement,
    TargetCheck,
    TargetCheckRecipe,
    TargetCompile,
    TargetCompileRecipe,
)

if TYPE_CHECKING:
    import onnx

FOLDED_BY_FIX = "computed once from the fixed sizes: folded into a constant by the fix"


def dynamic_inputs(model: onnx.ModelProto) -> list[str]:
    """The graph inputs with a dim that is not a fixed number."""
    return [
        value.name
        for value in model.graph.input
        if any(
            not d.HasField("dim_value") or d.dim_value < 1 for d in value.type.tensor_type.shape.dim
        )
    ]


def _unshare_params(model: onnx.ModelProto, sizes: dict[str, list[int]]) -> None:
    """Clear, everywhere in ``model``, each dim name that ``sizes`` gives different values
    (a Paddle export names every free dim "?"): onnxruntime's tool fixes a named dim through
    the whole graph, so the first size would stand for all and the second be refused."""
    given: dict[str, set[int]] = {}
    for value in model.graph.input:
        for dim, size in zip(
            value.type.tensor_type.shape.dim, sizes.get(value.name, []), strict=False
        ):
            if dim.HasField("dim_param"):
                given.setdefault(dim.dim_param, set()).add(size)
    shared = {name for name, values in given.items() if len(values) > 1}
    if not shared:
        return
    graph = model.graph
    for value in [*graph.input, *graph.output, *graph.value_info]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in shared:
                dim.Clear()  # unknown: fixed where it stands


def _fix_output_shapes(model: onnx.ModelProto) -> None:
    """The graph outputs' shapes that follow from the fixed inputs, where onnx infers them
    (onnxruntime's ``fix_output_shapes`` without its model check, which refuses an output
    declared without a shape: a 16-bit QDQ tensor exposed for per-layer error, whose
    com.microsoft operators onnx cannot infer)."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    for output, known in zip(model.graph.output, inferred.graph.output, strict=True):
        dims = known.type.tensor_type.shape.dim
        if known.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            output.type.tensor_type.shape.CopyFrom(known.type.tensor_type.shape)


class FixedCopy(NamedTuple):
    """What :func:`fixed_copy` changed: in words, and the nodes it folded (name, operator)."""

    fixes: list[str]
    folded: list[tuple[str, str]]


def fixed_copy(path: Path, sizes: dict[str, list[int]], out: Path) -> FixedCopy:
    """``path`` written to ``out`` with every input's dims fixed to ``sizes``, the output
    shapes that follow (onnxruntime's own tools) and what became constant folded, QDQ kept;
    what was fixed, in words."""
    import onnx
    from onnxruntime.tools.onnx_model_utils import make_input_shape_fixed

    from edgestudio.core.model.model_files import load_full_model
    from edgestudio.core.targets.constant_fold import fold_constants

    model = load_full_model(path)
    _unshare_params(model, sizes)
    fixed = []
    for name in dynamic_inputs(model):
        if name in sizes:
            make_input_shape_fixed(model.graph, name, sizes[name])
            fixed.append(f"{name} fixed to {'x'.join(map(str, sizes[name]))}")
    _fix_output_shapes(model)
    folded = fold_constants(model)
    if folded:
        fixed.append(
            f"{len(folded)} nodes computed once from the fixed sizes (folded into constants)"
        )
    onnx.save(model, str(out))
    return FixedCopy(fixed, folded)


def _cpu_refusal(path: Path) -> str:
    """Why onnxruntime's CPU session does not load ``path`` ("" when it does)."""
    import onnxruntime as ort

    from edgestudio.core.model.validate import short

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        return short(exc)
    return ""


def run_target_check(
    recipe: TargetCheckRecipe, reporter: Reporter, staging: Path
) -> JobReport[TargetCheck]:
    """Check ``recipe.model`` on its target: as it is, then with its dynamic dims fixed."""
    from edgestudio.core.inputs.input_probe import job_inputs
    from edgestudio.core.model.model_files import load_structure
    from edgestudio.core.targets import qnn_htp

    provider = qnn_htp.provider_version()  # a missing package fails the job with how to get it
    path = Path(recipe.model)
    model = load_structure(path)
    reporter.stage(f"Asking {provider} which nodes the emulated HTP takes", 0.1)
    before = qnn_htp.placement(path, recipe.htp_arch)
    reporter.log(f"As it is: {before.text()}")
    check = TargetCheck(str(path), recipe.target, recipe.htp_arch, before, provider=provider)
    dynamic = dynamic_inputs(model)
    if recipe.fix_shapes and dynamic:
        reporter.stage("Finding the input sizes the model runs on", 0.4)
        spec = job_inputs(path, model, recipe.shapes, recipe.ranges, reporter=reporter).spec
        sizes = {e.name: [int(d) for d in e.shape] for e in spec.inputs}
        with tempfile.TemporaryDirectory(dir=staging) as scratch:
            fixed = Path(scratch) / "fixed.onnx"
            made = fixed_copy(path, sizes, fixed)
            check.fixes = made.fixes
            reporter.stage("Checking again with the dims fixed", 0.6)
            after = qnn_htp.placement(fixed, recipe.htp_arch)
            broken = _cpu_refusal(fixed) if after.session_error else ""
            if broken:  # the fix's doing, not the provider's: say so, and the way around it
                after.session_error = (
                    f"with its sizes fixed the model no longer loads, even on the CPU ({broken}): "
                    "a branch or shape written for other sizes; check it as it is "
                    "(--keep-dynamic) or give the sizes it runs at (--shape)"
                )
            # the nodes the fix folded are in the model the user has: placed as folded
            after.nodes += [NodePlacement(n, op, FOLDED, FOLDED_BY_FIX) for n, op in made.folded]
            check.after = after
        reporter.log(f"With {', '.join(check.fixes)}: {check.after.text()}")
    for reason, count in check.final.reasons().items():
        reporter.log(f"  {count} node(s) on the CPU: {reason}")
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, result=check)


def run_target_compile(
    recipe: TargetCompileRecipe, reporter: Reporter, staging: Path
) -> JobReport[TargetCompile]:
    """Compile ``recipe.model`` for the emulated HTP (dynamic dims fixed first), reload the
    context binary and prove it gives the emulated session's outputs on the model's inputs."""
    import numpy as np
    import onnxruntime as ort

    from edgestudio.core.inputs.input_probe import job_inputs
    from edgestudio.core.model.model_files import load_structure
    from edgestudio.core.targets import qnn_htp

    path = Path(recipe.model)
    model = load_structure(path)
    reporter.stage("Finding the input sizes the model runs on", 0.05)
    spec = job_inputs(path, model, recipe.shapes, recipe.ranges, reporter=reporter).spec
    feeds = spec.feeds()
    name = Path(recipe.output or f"{path.stem}_ctx.onnx").name
    with tempfile.TemporaryDirectory(dir=staging) as scratch:
        source, fixes = path, []
        if dynamic_inputs(model):
            source = Path(scratch) / "fixed.onnx"
            fixes = fixed_copy(
                path, {e.name: [int(d) for d in e.shape] for e in spec.inputs}, source
            ).fixes
        if recipe.device:  # compiled, reloaded and run there, by the device's own QNN build
            return _compiled_on_device(recipe, source, feeds, name, fixes, staging, reporter)
        provider = qnn_htp.provider_version()  # missing here: the job fails saying how to get it
        reporter.stage(f"Compiling with {provider} for HTP v{recipe.htp_arch}", 0.2)
        options = qnn_htp.session_options(recipe.htp_arch, fallback=False)
        options.add_session_config_entry("ep.context_enable", "1")
        options.add_session_config_entry("ep.context_file_path", str(staging / name))
        options.add_session_config_entry("ep.context_embed_mode", "0")
        try:
            emulated = ort.InferenceSession(str(source), options)
        except Exception as exc:  # a node the NPU refuses: no binary runs it whole
            raise EdgeStudioError(
                f"The model cannot be compiled wholly for HTP v{recipe.htp_arch}: {exc}. "
                "`edgestudio target check` names the nodes it refuses and why."
            ) from exc
        expected = emulated.run(None, feeds)
    binaries = sorted(p.name for p in staging.glob("*.bin"))
    if not (staging / name).is_file() or not binaries:
        raise EdgeStudioError("The provider wrote no context model or binary.")
    reporter.stage("Reloading the compiled binary and running it", 0.7)
    reloaded = ort.InferenceSession(
        str(staging / name), qnn_htp.session_options(recipe.htp_arch, fallback=False)
    )
    got = reloaded.run(None, feeds)
    difference = max(
        (
            float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
            for a, b in zip(expected, got, strict=True)
            if np.size(a)
        ),
        default=0.0,
    )
    compiled = TargetCompile(
        str(path),
        recipe.target,
        recipe.htp_arch,
        name,
        binaries[0],
        (staging / binaries[0]).stat().st_size,
        fixes,
        difference,
        provider,
    )
    reporter.log(compiled.text())
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, files=[name, *binaries], result=compiled)


def _compiled_on_device(
    recipe: TargetCompileRecipe,
    source: Path,
    feeds: dict[str, Any],
    name: str,
    fixes: list[str],
    staging: Path,
    reporter: Reporter,
) -> JobReport[TargetCompile]:
    """The compile done on ``recipe.device``: its files written into ``staging``."""
    from edgestudio.core.targets.device_compile import compile_on_device
    from edgestudio.core.targets.qnn_htp import SOC_FOR_ARCH

    arch = recipe.htp_arch
    done = compile_on_device(
        recipe.device, source, feeds, arch, SOC_FOR_ARCH.get(arch, "0"), name, staging, reporter
    )
    binaries = [f for f in done.files if f.endswith(".bin")]
    if name not in done.files or not binaries:
        raise EdgeStudioError(f"{recipe.device} wrote no context model or binary.")
    compiled = TargetCompile(
        recipe.model,
        recipe.target,
        arch,
        name,
        binaries[0],
        (staging / binaries[0]).stat().st_size,
        fixes,
        done.difference,
        done.provider,
        recipe.device,
    )
    reporter.log(compiled.text())
    reporter.stage("Done", 1.0)
    return JobReport(kind=recipe.kind, files=done.files, result=compiled)
