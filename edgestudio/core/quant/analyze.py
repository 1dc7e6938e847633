"""Per-layer and whole-model error of a quantized model, streamed sample by sample.

Both models run on the same replayable samples; every matched activation is compared as it
comes and only running sums are kept, so memory stays at one sample's activations (ORT's
``qdq_loss_debug`` keeps every activation of every sample). The SQNR is the same quantity as
``qdq_loss_debug.compute_signal_to_quantization_noice_ratio`` over all samples concatenated:
20·log10(‖float‖ / ‖float − quantized‖), both norms floored at float eps; a tensor whose float
values are all zero has no SQNR ("n/a") instead of a misleading 0 dB.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgestudio.core.inputs.calib_data import DataError, open_samples
from edgestudio.core.inputs.data_source import SPEC_KINDS, provenance
from edgestudio.core.inputs.input_probe import job_inputs
from edgestudio.core.job_api.recipe import Tolerance
from edgestudio.core.job_api.report import JobReport
from edgestudio.core.model.model_files import load_structure
from edgestudio.core.progress import Reporter, scaled, within
from edgestudio.core.quant.activation_match import (
    ErrorStats,
    Match,
    elem_types,
    match_activations,
)
from edgestudio.core.quant.activation_store import ActivationStore
from edgestudio.core.quant.alphabets import find_alphabet
from edgestudio.core.quant.deployed import (
    Deployed,
    compare_on_target,
    cpu_session,
    quantized_activations,
    release,
)
from edgestudio.core.quant.failed_modes import failed_choices
from edgestudio.core.quant.headroom import (
    DECISION_FIGURES,
    judged_under_stress,
    with_error_scaled,
)
from edgestudio.core.quant.quant_recipes import AnalyzeRecipe
from edgestudio.core.quant.quant_results import (
    Accuracy,
    Analysis,
    LayerError,
    OutputDrift,
    WeightError,
)
from edgestudio.core.quant.quantized_graph import quantized_nodes, suggestion_targets
from edgestudio.core.quant.task_detection import choose_tasks
from edgestudio.core.quant.task_figures import TaskResult
from edgestudio.core.quant.task_metrics import TaskMeter
from edgestudio.core.quant.task_names import TASK_LABELS
from edgestudio.core.quant.verdicts import analysis_verdict
from edgestudio.core.quant.weight_errors import weight_errors
from edgestudio.core.serialise import from_json

CLIP_WARN_FRACTION = 0.01

SAVE_SUFFIX = "_edgestudio_saved"


def compared_outputs(model: onnx.ModelProto) -> tuple[list[str], list[str]]:
    """The outputs an analysis compares, in the graph's order, and what it says of the others.

    A tensor output is compared as it is. A sequence of maps written by ZipMap (a
    scikit-learn classifier's probabilities per class) is compared through the tensor it maps,
    which holds the same numbers; any other output that is not a tensor is left out, said.
    """
    producers = {out: n for n in model.graph.node for out in n.output}
    names, left_out = [], []
    for value in model.graph.output:
        if value.type.HasField("tensor_type"):
            names.append(value.name)
            continue
        node = producers.get(value.name)
        if node is not None and node.op_type == "ZipMap":
            names.append(node.input[0])
        else:
            kind = value.type.WhichOneof("value") or "unknown"
            left_out.append(f"Output '{value.name}' is not a tensor ({kind}): not compared.")
    return list(dict.fromkeys(names)), left_out


def qdq_boundary_tensors(model: onnx.ModelProto) -> list[str]:
    """Activations entering or leaving a QuantizeLinear/DequantizeLinear node."""
    inits = {t.name for t in model.graph.initializer}
    found = []
    for node in model.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and node.input[0] not in inits:
            found += [node.input[0], node.output[0]]
    return list(dict.fromkeys(found))


def _with_outputs(
    model: onnx.ModelProto, names: list[str], also_block: list[str] | None = None
) -> tuple[bytes, list[str]]:
    """``model`` with every tensor of ``names`` exposed as a flattened graph output.

    Like ``qdq_loss_debug``, each tensor gets a Reshape(-1) consumer whose output is the graph
    output: a real consumer stops ORT from fusing the tensor away (a QDQ pair into an integer
    kernel, Conv+Relu into one node), so the model can still run with its optimizations on.
    Returns the serialized model and the output names in the order of ``names``.
    """
    augmented = onnx.ModelProto()
    augmented.CopyFrom(model)
    types = elem_types(augmented)
    shape = f"{SAVE_SUFFIX}_shape"
    augmented.graph.initializer.append(numpy_helper.from_array(np.array([-1], np.int64), shape))
    outputs = []
    for name in list(dict.fromkeys([*names, *(also_block or [])])):
        saved = name + SAVE_SUFFIX
        augmented.graph.node.append(helper.make_node("Reshape", [name, shape], [saved], name=saved))
        augmented.graph.output.append(
            helper.make_tensor_value_info(saved, types.get(name, TensorProto.FLOAT), [-1])
        )
        outputs.append(saved)
    data: bytes = augmented.SerializeToString()
    return data, outputs[: len(names)]


def run_analyze(recipe: AnalyzeRecipe, reporter: Reporter, staging: Path) -> JobReport[Analysis]:
    """Compare ``recipe.quant_model`` with ``recipe.float_model`` on ``recipe.data``.

    Memory stays bounded on models of billions of parameters: both models are parsed without
    their external weights (each weight is read when compared), one onnxruntime session is
    alive at a time — the float model over every sample, then the quantized model as the
    layers see it, then as it ships — and the float activations wait in an
    :class:`ActivationStore` (on disk beyond its budget) until compared.
    """
    reporter.stage("Reading both models", 0.0)
    float_path, quant_path = Path(recipe.float_model), Path(recipe.quant_model)
    float_model, quant_model = load_structure(float_path), load_structure(quant_path)
    spec = None
    if recipe.data.kind in SPEC_KINDS:  # drawn from inputs the model is proven to run on
        spec = job_inputs(
            float_path, float_model, recipe.shapes, recipe.ranges, reporter=reporter
        ).spec
    samples = open_samples(recipe.data, float_model, spec, float_path)
    try:  # read before any work: a wrong --alphabet is said at once
        alphabet, spelled_by = find_alphabet(float_model, float_path, recipe.alphabet)
    except ValueError as exc:
        raise DataError(str(exc)) from exc
    data = provenance(recipe.data, len(samples), samples.note)
    reporter.log(f"Data: {data.text()}")
    warnings = samples.validate()
    matches = match_activations(float_model, quant_model)
    reporter.log(f"{len(matches)} activations matched between the two models")
    reporter.stage("Comparing weights", 0.05)
    weights = weight_errors(float_model, quant_model, float_path.parent, quant_path.parent)

    float_outputs, left_out = compared_outputs(float_model)
    quant_outputs, _ = compared_outputs(quant_model)
    warnings += left_out
    if not float_outputs:
        raise DataError("The model has no tensor output to compare: " + " ".join(left_out))
    f_names = list(dict.fromkeys(float_outputs + [m.tensor for m in matches]))
    q_names = list(dict.fromkeys(quant_outputs + [m.quant_tensor for m in matches]))
    total = max(1, len(samples))
    with tempfile.TemporaryDirectory(dir=staging) as scratch:
        store = ActivationStore(Path(scratch))
        reporter.stage("Running the float model", 0.1)
        step = within(reporter, 0.1, 0.4)
        f_model, f_saved = _with_outputs(float_model, f_names)
        sess_f = cpu_session(f_model, float_path.parent)
        del f_model
        for k, sample in enumerate(samples):
            store.put(k, dict(zip(f_names, sess_f.run(f_saved, sample), strict=True)))  # type: ignore[attr-defined]
            step((k + 1) / total)
        release(sess_f)  # its weights leave memory before the quantized model's arrive
        del sess_f
        if store.spilled_bytes:
            reporter.log(
                f"{store.spilled_bytes / 2**20:,.0f} MiB of float activations kept "
                "on disk until compared"
            )

        reporter.stage("Running the quantized model (layer by layer comparison)", 0.4)
        step = within(reporter, 0.4, 0.7)
        # Every tensor around a Q/DQ pair gets a consumer, so the QDQ graph runs as written
        # (as in qdq_loss_debug) instead of being fused into integer kernels.
        q_model, q_saved = _with_outputs(quant_model, q_names, qdq_boundary_tensors(quant_model))
        sess_q = cpu_session(q_model, quant_path.parent)
        del q_model
        simulated = [ErrorStats() for _ in float_outputs]  # unfused graph, as layers see it
        for k, sample in enumerate(samples):
            f_vals = store.get(k)
            q_vals = dict(zip(q_names, sess_q.run(q_saved, sample), strict=True))  # type: ignore[attr-defined]
            for i, (fo, qo) in enumerate(zip(float_outputs, quant_outputs, strict=False)):
                test = np.asarray(q_vals[qo])
                simulated[i].add(np.asarray(f_vals[fo]).reshape(test.shape), test)
            _compare_layers(matches, f_vals, q_vals)
            step((k + 1) / total)
        release(sess_q)
        del sess_q

        # Whole-model figures come from the model as it ships: ORT fuses QDQ pairs into
        # integer kernels there, whose numbers can differ from the simulated QDQ graph.
        reporter.stage("Running the quantized model as it ships", 0.7)
        step = within(reporter, 0.7, 0.95)
        quantized_layers = quantized_activations(quant_model, matches, recipe.target)
        deploy = Deployed(
            quant_model,
            quant_outputs,
            quant_path,
            recipe.target,
            Path(scratch),
            [q.quantized for q in quantized_layers.values()],
        )
        if recipe.target != "cpu":
            reporter.stage(f"Running the quantized model on {deploy.where}", 0.7)
        deploy.run_all(samples, scaled(reporter, 0.7, 0.9))
        outcome = _OutputComparison(float_outputs, recipe.tolerance)
        for k, sample in enumerate(samples):
            f_vals = store.get(k)
            deployed = deploy.run(sample)
            compare_on_target(matches, quantized_layers, f_vals, deployed)
            if not outcome.meters:  # the task is read from the first sample's real outputs
                # The saved float outputs are flattened: give them the deployed model's shapes,
                # and their own types (an ArgMax's tags are judged as integers).
                shaped = {
                    fo: np.asarray(f_vals[fo])
                    .reshape(np.shape(deployed[qo]))
                    .astype(np.asarray(deployed[qo]).dtype, copy=False)
                    for fo, qo in zip(float_outputs, quant_outputs, strict=False)
                }
                choices = choose_tasks(
                    float_model,
                    shaped,
                    recipe.metric,
                    alphabet_size=len(alphabet) if alphabet else None,
                )
                for choice in choices:
                    reporter.log(
                        f"Task metric: {TASK_LABELS[choice.task]} — {choice.why}"
                        + (f" {choice.unsure_text()}" if choice.alternatives else "")
                    )
                    outcome.meters.append(TaskMeter(choice, samples.labels, alphabet, spelled_by))
                    outcome.stressed.append(TaskMeter(choice, None, alphabet, spelled_by))
            outcome.add(f_vals, [deployed[qo] for qo in quant_outputs], attention_mask(sample))
            store.drop(k)
            step((k + 1) / total)
        if deploy.seconds:
            layers_there = deploy.layers_note(any(m.on_target.count for m in matches))
            warnings.append(f"{deploy.rate_note(len(samples))}; {layers_there}.")
        deploy.close()

    layers = []
    for m in matches:
        if not (m.stats.count or m.stats.non_finite):
            continue  # nothing compared (a layer whose every value went inf/NaN still counts)
        clipped = (
            m.stats.clipped / m.stats.count if m.qrange is not None and m.stats.count else None
        )
        layers.append(
            {
                "tensor": m.tensor,
                "node": m.node,
                "op_type": m.op_type,
                **m.stats.figures(),
                "clipped_fraction": clipped,
                "sqnr_db_target": m.on_target.sqnr_db() if m.on_target.count else None,
            }
        )
        if clipped is not None and clipped > CLIP_WARN_FRACTION:
            warnings.append(
                f"'{m.tensor}': {clipped:.1%} of evaluation values fall outside the "
                "calibrated range and are clipped."
            )
    tol = recipe.tolerance
    outputs = [
        {
            "output": name,
            **s.figures(),
            "max_rel": outcome.max_rel[i],
            "allclose": outcome.allclose[i],
            "atol": tol.atol,
            "rtol": tol.rtol,
            "sqnr_db_simulated": simulated[i].sqnr_db(),
        }
        for i, (name, s) in enumerate(zip(float_outputs, outcome.stats, strict=True))
    ]
    for o in outputs:
        deployed_db, sim = o["sqnr_db"], o["sqnr_db_simulated"]
        if isinstance(deployed_db, float) and isinstance(sim, float) and sim - deployed_db > 6:
            warnings.append(
                f"Output '{o['output']}': {deployed_db:.1f} dB as onnxruntime runs it, but "
                f"{sim:.1f} dB in the simulated QDQ graph: its integer kernels lose more than "
                "the per-layer figures show (on x86 without VNNI, 8-bit products can saturate; "
                "try reduce-range)."
            )
    tasks = outcome.task_results()
    # the verdict names the worst of the outputs that carry the task
    task = max(tasks, key=lambda t: t.deciding_level()) if tasks else None
    accuracy = next((a for m in outcome.meters if (a := m.accuracy()) is not None), None)
    for w in warnings:
        reporter.warn(w)
    quant_ops = sorted({n.op_type for n in quant_model.graph.node})
    quantized = quantized_nodes(float_model, quant_model)
    targets = suggestion_targets(float_model, quantized)
    float_ops = {n.op_type for n in float_model.graph.node}
    verdict = analysis_verdict(
        outputs,
        accuracy,
        layers,
        quant_ops,
        per_channel=any(w["per_channel"] for w in weights) if weights else None,
        has_matmul=bool(float_ops & {"MatMul", "Attention"}) and "Conv" not in float_ops,
        warnings=warnings,
        data=data,
        task=task,
        tasks=tasks,
        excludable=targets,
        failed=failed_choices(Path(recipe.float_model)),
    )
    for line in verdict.text_lines():
        reporter.log(line)
    reporter.stage(f"Done: {verdict.label.lower()}", 1.0)
    analysis = Analysis(
        float_model=recipe.float_model,
        quant_model=recipe.quant_model,
        samples=len(samples),
        layers=from_json(list[LayerError], layers),
        weights=from_json(list[WeightError], weights),
        outputs=from_json(list[OutputDrift], outputs),
        accuracy=from_json(Accuracy, accuracy),
        verdict=verdict,
        data=data,
        task=task,
        tasks=tasks if len(tasks) > 1 else [],
        quantized_nodes=sorted(quantized),
        targets=targets,
        measured_on=recipe.target,
    )
    return JobReport(kind=recipe.kind, warnings=warnings, result=analysis)


def _compare_layers(
    matches: list[Match], f_vals: dict[str, np.ndarray], q_vals: dict[str, np.ndarray]
) -> None:
    """Fold one sample's matched activations into each match's running sums, one tensor at
    a time (a spilled float tensor is read from disk as it is compared)."""
    for m in matches:
        test = np.asarray(q_vals[m.quant_tensor])
        ref = np.asarray(f_vals[m.tensor])
        if ref.shape != test.shape:
            continue
        m.stats.add(ref, test)
        if m.qrange is not None:
            low, high = m.qrange
            m.stats.clipped += int(((ref < low) | (ref > high)).sum())


@dataclass
class _OutputComparison:
    """The whole-model figures of each output, as the quantized model ships, sample by sample."""

    names: list[str]
    tolerance: Tolerance
    meters: list[TaskMeter] = field(default_factory=list)  # one per output judged by its task
    # the same, judged with each output's error doubled (the headroom of its decisions)
    stressed: list[TaskMeter] = field(default_factory=list)
    stats: list[ErrorStats] = field(default_factory=list)
    allclose: list[bool] = field(default_factory=list)
    max_rel: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stats = [ErrorStats() for _ in self.names]
        self.allclose = [True] * len(self.names)
        self.max_rel = [0.0] * len(self.names)

    def add(
        self,
        f_vals: dict[str, np.ndarray],
        deployed: list[np.ndarray],
        attention: np.ndarray | None = None,
    ) -> None:
        """Fold in one sample: the float run's saved outputs and the deployed model's
        (``attention``: the sample's attention mask, for per-position task figures)."""
        tol = self.tolerance
        judged = {m.choice.output: m for m in self.meters}
        stressed = {m.choice.output: m for m in self.stressed}
        for i, (name, value) in enumerate(zip(self.names, deployed, strict=False)):
            test = np.asarray(value).astype(np.float64)
            ref = np.asarray(f_vals[name]).reshape(test.shape)
            self.stats[i].add(ref, test)
            self.allclose[i] &= bool(np.allclose(test, ref, rtol=tol.rtol, atol=tol.atol))
            mask = np.abs(ref) > tol.atol
            if mask.any():
                self.max_rel[i] = max(
                    self.max_rel[i], float((np.abs(test - ref)[mask] / np.abs(ref[mask])).max())
                )
            if name in judged:
                judged[name].add(ref, test, attention)
                if judged_under_stress(value) and name in stressed:
                    stressed[name].add(ref, with_error_scaled(ref, test), attention)

    def task_results(self) -> list[TaskResult]:
        """Each judged output's task figures, with its decision figures at doubled error."""
        results = []
        for meter, stressed in zip(self.meters, self.stressed, strict=True):
            result = meter.result()
            if stressed.samples:
                result.at_double_error = {
                    f.key: f.value
                    for f in stressed.result().figures
                    if f.key in DECISION_FIGURES and f.deciding
                }
            results.append(result)
        return results


def attention_mask(sample: dict[str, np.ndarray]) -> np.ndarray | None:
    """The sample's attention mask (an input named like ``attention_mask`` or ``mask``), which
    marks the real positions of a padded sequence; None when the model takes none."""
    for name, value in sample.items():
        if "mask" in name.lower() and np.asarray(value).ndim == 2:
            return np.asarray(value)
    return None


def is_class_scores(output: np.ndarray) -> bool:
    """True for a ``[batch, classes]`` output with several classes: where top-1 means
    something (a single score, a box list or a feature map has no top-1)."""
    return output.ndim == 2 and output.shape[1] >= 2
