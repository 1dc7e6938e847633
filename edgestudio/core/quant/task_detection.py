"""Which task a model's output serves — classification, CTC text, per-position classes,
embeddings, detection, a signal — read from its outputs (shapes of one float run) and its graph
(the operator that makes them, through ops that only move values and into If branches; their
names), always with the reason said. The user can choose another (``--metric``). Pure onnx.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from edgestudio.core.quant.task_names import TASKS

if TYPE_CHECKING:  # onnx only for types: the CLI imports this module to parse its options
    import onnx

# Ops that only move or relabel values between the op that computes an output and the output.
# Means and maxima over time too: a VAD's speech probability is the mean of its frames' Sigmoid
# (Silero), still a probability decided at 0.5.
_PASSTHROUGH = frozenset(
    {
        "Identity",
        "Reshape",
        "Transpose",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
        "Cast",
        "ReduceMean",
        "ReduceMax",
    }
)
_SOFTMAX = frozenset({"Softmax", "LogSoftmax"})
_CLASS_NAME = re.compile(r"logit|prob|score|class|label|pred|softmax|cls", re.IGNORECASE)
_EMBED_NAME = re.compile(
    r"embed|emb$|feature|vector|pool|sentence|hidden|encoder_out|memory|fingerprint",
    re.IGNORECASE,
)
# Regressed values (a property's mean, an energy, a quality score) and pairwise weights: read
# as a signal even when several and named like predictions.
_SIGNAL_NAME = re.compile(r"mean|std|var$|energ|force|regress|attention|attn", re.IGNORECASE)
_PROJECTIONS = frozenset({"MatMul", "Gemm", "MatMulInteger", "MatMulNBits", "QLinearMatMul"})
# Integer outputs that are sizes, not tags: never judged beside the task's output.
_SIZE_OPS = frozenset({"Shape", "Size", "Range", "NonZero", "ConstantOfShape", "Constant"})
_SIZE_NAME = re.compile(r"shape|length|len$|lens$|size|count", re.IGNORECASE)
# What makes a feature vector, not class scores: a squashed hidden state, a recurrent network's
# state, a normalisation (a character-LSTM's embedding read as a 300-class classifier).
_EMBED_OPS = frozenset({"Tanh", "LSTM", "GRU", "RNN", "Loop", "Scan", "LpNormalization"})
# Recurrent states a model hands back to be fed again: never a task output of their own.
_STATE_NAME = re.compile(r"(^|[_./])(h|c|hn|cn|h0|c0|state\w*|hidden_state|cell)\d*$", re.I)
CTC_MIN_CLASSES = 30  # a CTC alphabet: tens to thousands of symbols plus a blank
LM_MIN_VOCAB = 256  # a token vocabulary (byte-level at the least); label sets are smaller
MASK_MAX_CHANNELS = 8  # a mask's classes (DB text maps: 1–3); more reads as a feature map
_TOKEN_INPUT = re.compile(r"input_ids|token|(^|_)ids$", re.IGNORECASE)


@dataclass(frozen=True)
class TaskChoice:
    """Which task the analysis judges, on which output, and why."""

    task: str
    output: str
    why: str
    chosen_by: str = "detected"  # detected | you
    # other metrics that may fit when the detection is unsure (said with --metric beside them)
    alternatives: tuple[str, ...] = ()

    def unsure_text(self) -> str:
        """``Unsure: --metric embedding may fit better`` when there are alternatives."""
        if not self.alternatives:
            return ""
        spelled = " or ".join(f"--metric {a}" for a in self.alternatives)
        return f"Unsure: {spelled} may fit this output better."


# ----- detection ----------------------------------------------------------------------------------
def _producer_op(
    model: onnx.ModelProto | onnx.GraphProto,
    tensor: str,
    outer: dict[str, onnx.NodeProto] | None = None,
) -> tuple[str, onnx.NodeProto | None]:
    """The op that computes ``tensor``, looking through ops that only move values and into
    the branch of an ``If`` that makes it (a VAD's probability comes out of one); a branch
    may pass on a value its enclosing graph computed (``outer``)."""
    graph = model.graph if hasattr(model, "graph") else model  # a ModelProto, or a graph
    producers = {**(outer or {}), **{o: n for n in graph.node for o in n.output}}
    node = producers.get(tensor)
    seen = 0
    while node is not None and node.op_type in _PASSTHROUGH and node.input and seen < 16:
        tensor = node.input[0]
        node = producers.get(tensor)
        seen += 1
    if node is not None and node.op_type == "If":
        index = list(node.output).index(tensor) if tensor in node.output else 0
        branch = next((a.g for a in node.attribute if a.name == "then_branch"), None)
        if branch is not None and index < len(branch.output):
            return _producer_op(branch, branch.output[index].name, producers)
    return (node.op_type if node is not None else "", node)


def _softmax_axis_is_last(node: onnx.NodeProto | None, rank: int) -> bool:
    if node is None:
        return False
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    return axis in (-1, rank - 1)


def _is_normalised(model: onnx.ModelProto, node: onnx.NodeProto | None) -> bool:
    """True when the output is L2-normalised (an embedding head)."""
    if node is None:
        return False
    if node.op_type == "LpNormalization":
        return True
    if node.op_type == "Div":
        producers = {o: n for n in model.graph.node for o in n.output}
        frontier = list(node.input[1:])
        for _ in range(4):
            ops = [producers[t] for t in frontier if t in producers]
            if any(n.op_type in ("ReduceL2", "Sqrt", "LpNormalization") for n in ops):
                return True
            frontier = [t for n in ops for t in n.input]
    return False


def detect_task(
    model: onnx.ModelProto, outputs: dict[str, np.ndarray], alphabet_size: int | None = None
) -> TaskChoice:
    """The model's task from its first float output (shape and values of one float run) and
    its graph; an integer output when there is no float one (tags, ids, an ArgMax).

    ``outputs``: the float model's outputs on one sample, by name, in graph order.
    ``alphabet_size``: the symbols of a dictionary given or found beside the model, which makes
    a ``[N, T, alphabet + blank]`` output a CTC recogniser whatever its class count.
    """
    if not outputs:
        return TaskChoice("generic", "", "the model has no output")
    # A classifier converted from scikit-learn lists its labels (integers) first and its
    # probabilities after: the task is read from the first float output.
    floating = [n for n, a in outputs.items() if _is_float(a)]
    if not floating:
        name = next(iter(outputs))
        return _integer_choice(name, outputs[name])
    return _detect_output(model, floating[0], outputs[floating[0]], alphabet_size)


def detect_tasks(
    model: onnx.ModelProto, outputs: dict[str, np.ndarray], alphabet_size: int | None = None
) -> list[TaskChoice]:
    """Every output that carries the task, the first (as :func:`detect_task`) first.

    Beside the first, an output is judged too when it plainly carries a task of its own:
    integers (tags, ids, an ArgMax), a Sigmoid or Softmax of probabilities (a transcriber's
    three per-frame outputs), a normalised embedding. Recurrent states handed back to be fed
    again, and outputs read only as signals, are not judged.
    """
    first = detect_task(model, outputs, alphabet_size)
    choices = [first]
    for name, array in outputs.items():
        if name == first.output or _STATE_NAME.search(name):
            continue
        if not _is_float(array):
            producer, _ = _producer_op(model, name)
            if (
                np.issubdtype(np.asarray(array).dtype, np.integer)
                and np.ndim(array) >= 1
                and producer not in _SIZE_OPS
                and not _SIZE_NAME.search(name)
            ):
                choices.append(_integer_choice(name, array))
            continue
        op, node = _producer_op(model, name)
        if op in _SOFTMAX or op == "Sigmoid" or _is_normalised(model, node):
            choice = _detect_output(model, name, array, alphabet_size)
            if choice.task not in ("signal", "generic"):
                choices.append(choice)
    return choices


def _is_float(array: np.ndarray) -> bool:
    return bool(np.issubdtype(np.asarray(array).dtype, np.floating))


def _integer_choice(name: str, array: np.ndarray) -> TaskChoice:
    """An integer output: tags, token ids, an ArgMax's classes — judged by the share identical."""
    values = np.asarray(array)
    if not np.issubdtype(values.dtype, np.integer) and values.dtype != np.bool_:
        return TaskChoice("generic", name, f"'{name}' is not a float output")
    dims = "×".join(map(str, values.shape)) or "scalar"
    return TaskChoice(
        "ids",
        name,
        f"'{name}' [{dims}] holds integers (tags, ids or an ArgMax's classes): judged by "
        "the share that stays identical, not by how far the numbers move",
    )


def _detect_output(
    model: onnx.ModelProto, name: str, array: np.ndarray, alphabet_size: int | None
) -> TaskChoice:
    """The task one float output carries."""
    shape = tuple(np.shape(array))
    op, node = _producer_op(model, name)
    rank = len(shape)
    dims = "×".join(map(str, shape))
    detection = detection_layout(shape)
    if rank == 1 and shape[0] > 1 and op == "Sigmoid":
        return TaskChoice(
            "multilabel",
            name,
            f"'{name}' [{dims}] is a Sigmoid at each of {shape[0]} steps (an activation per "
            "frame): judged by the decisions at 0.5, step by step",
            alternatives=("classification",),
        )
    if rank == 1 and shape[0] > 1 and op in _SOFTMAX:
        return TaskChoice(
            "classification",
            name,
            f"'{name}' [{dims}] is a {op} over {shape[0]} classes (the batch axis squeezed)",
        )
    if rank == 2 and shape[1] >= 2 and op == "Sigmoid" and not _is_normalised(model, node):
        return TaskChoice(
            "multilabel",
            name,
            f"'{name}' [{dims}] is a Sigmoid over {shape[1]} classes, each decided on its own "
            "(multi-label): judged by the decisions at 0.5",
            alternatives=("classification",),
        )
    if (rank == 1 or (rank == 2 and shape[1] == 1)) and op == "Sigmoid":
        return TaskChoice(
            "classification",
            name,
            f"'{name}' [{dims}] is one Sigmoid probability: judged by the yes/no decision at 0.5",
        )
    if (
        rank == 2
        and 2 <= shape[1] <= 4
        and op not in _SOFTMAX
        and op != "Sigmoid"
        and not _CLASS_NAME.search(name)
    ):
        return TaskChoice(
            "signal",
            name,
            f"'{name}' [{dims}] holds {shape[1]} values without "
            "a softmax: read as regressed scores (choose 'classification' if "
            "they are class logits)",
        )
    if rank == 2 and shape[1] >= 2 and op not in _SOFTMAX and _SIGNAL_NAME.search(name):
        return TaskChoice(
            "signal",
            name,
            f"'{name}' [{dims}] is named as regressed values or weights, with no softmax: "
            "judged by relative error",
            alternatives=("classification", "embedding"),
        )
    if rank == 2 and shape[1] >= 2:
        if _EMBED_NAME.search(name) or _is_normalised(model, node) or op in _EMBED_OPS:
            how = (
                "L2-normalised"
                if _is_normalised(model, node)
                else f"made by {op}, no softmax"
                if op in _EMBED_OPS
                else "by name"
            )
            return TaskChoice(
                "embedding",
                name,
                f"'{name}' [{dims}] is a feature vector ({how})",
                alternatives=() if how == "L2-normalised" else ("classification",),
            )
        if op in _SOFTMAX or op == "Sigmoid":
            return TaskChoice(
                "classification", name, f"'{name}' [{dims}] is a {op} over {shape[1]} classes"
            )
        return TaskChoice(
            "classification",
            name,
            f"'{name}' [{dims}] reads as scores of {shape[1]} classes (no softmax follows)",
            alternatives=("embedding",),
        )
    if rank == 3:
        classes = shape[2]
        if (
            op == "Sigmoid"
            and detection is not None
            and detection[1] >= 1000
            and _takes_images(model)
        ):
            # thousands of anchors of an image model (a layout detector's Sigmoid scores
            # per anchor): a box list, not decisions frame by frame
            return TaskChoice(
                "detection",
                name,
                f"'{name}' [{dims}] holds {detection[1]} candidate boxes of {detection[0]} "
                "values for an image",
                alternatives=("multilabel",),
            )
        if (
            alphabet_size
            and classes in (alphabet_size, alphabet_size + 1, alphabet_size + 2)
            and not _takes_token_ids(model)  # a language model's vocab.txt is no alphabet
            and detection is None  # a detector's label list is no alphabet either
        ):
            return TaskChoice(
                "ctc",
                name,
                f"'{name}' [{dims}] has {classes} symbols at every time step, the dictionary's "
                f"{alphabet_size} and a blank: a CTC recogniser, read greedily",
            )
        if op == "Sigmoid" and shape[1] > 1:
            return TaskChoice(
                "multilabel",
                name,
                f"'{name}' [{dims}] is a Sigmoid over "
                f"{classes} class(es) at each of {shape[1]} time steps: judged by "
                "the decisions at 0.5, frame by frame",
            )
        if (
            classes >= LM_MIN_VOCAB
            and op not in _SOFTMAX
            and _takes_token_ids(model)
            and not _EMBED_NAME.search(name)
            and _projected(model, node)  # hidden states end in a normalisation, logits do not
        ):
            return TaskChoice(
                "language-model",
                name,
                f"'{name}' [{dims}] holds {classes} "
                "token scores at every position of a model fed token ids: a "
                "language model's next-token logits",
            )
        if op in _SOFTMAX and _softmax_axis_is_last(node, rank):
            if classes >= CTC_MIN_CLASSES:
                return TaskChoice(
                    "ctc",
                    name,
                    f"'{name}' [{dims}] is a {op} over {classes} "
                    "symbols at every time step: a CTC recogniser, read greedily",
                )
            return TaskChoice(
                "tokens",
                name,
                f"'{name}' [{dims}] is a {op} over {classes} classes at every position "
                "(a CTC recogniser of a small alphabet is read by its text: give its "
                "dictionary with --alphabet)",
                alternatives=("ctc",),
            )
        if (
            shape[1] == 1
            and shape[0] > 1
            and classes >= CTC_MIN_CLASSES
            and not _EMBED_NAME.search(name)
        ):
            return TaskChoice(
                "ctc",
                name,
                f"'{name}' [{dims}] is time-major (time × batch × "
                f"{classes} symbols), as a recurrent CTC recogniser writes it: "
                "read greedily",
            )
        if detection is not None and not _EMBED_NAME.search(name) and _takes_images(model):
            return TaskChoice(
                "detection",
                name,
                f"'{name}' [{dims}] holds {detection[1]} "
                f"candidate boxes of {detection[0]} values (x, y, w, h, scores)",
            )
        if op in _EMBED_OPS and not _CLASS_NAME.search(name):
            return TaskChoice(
                "embedding",
                name,
                f"'{name}' [{dims}] is one {classes}-wide vector per position made by {op} "
                "(hidden states, no softmax)",
                alternatives=("tokens",),
            )
        if _CLASS_NAME.search(name) or classes <= 64:
            return TaskChoice(
                "tokens",
                name,
                f"'{name}' [{dims}] reads as {classes} class scores at every position",
                alternatives=("ctc", "embedding"),
            )
        return TaskChoice(
            "embedding",
            name,
            f"'{name}' [{dims}] reads as one {classes}-wide vector per position (hidden states)",
            alternatives=("tokens",),
        )
    if rank == 4 and op == "Sigmoid" and 1 <= min(shape[1], shape[3]) <= MASK_MAX_CHANNELS:
        return TaskChoice(
            "mask",
            name,
            f"'{name}' [{dims}] is a Sigmoid map (a text detector's or a segmenter's "
            "probability per pixel): judged by the pixels over 0.5",
        )
    if rank == 4 and op in _SOFTMAX and 2 <= shape[1] <= 1000:
        return TaskChoice(
            "tokens",
            name,
            f"'{name}' [{dims}] is a {op} over {shape[1]} classes per pixel (segmentation)",
        )
    return TaskChoice(
        "signal", name, f"'{name}' [{dims}] reads as a signal or map (judged by relative error)"
    )


def _projected(model: onnx.ModelProto, node: onnx.NodeProto | None) -> bool:
    """True when ``node`` is a projection (MatMul/Gemm, or the Add of its bias): what a
    language model's head ends in, where hidden states end in a LayerNorm (its Add follows a
    Mul)."""
    producers = {o: n for n in model.graph.node for o in n.output}
    frontier = [node] if node is not None else []
    # two steps at most: a bias Add, or a dequantizing Cast and Mul after MatMulInteger; a
    # LayerNorm's Add meets a Div first, an RMSNorm's Mul reaches a MatMul only through the
    # residual Add, three steps up
    for _ in range(3):
        if any(n.op_type in _PROJECTIONS for n in frontier):
            return True
        frontier = [
            producers[t]
            for n in frontier
            if n.op_type in ("Add", "Mul", "Cast")
            for t in n.input
            if t in producers
        ]
    return False


def _takes_images(model: onnx.ModelProto) -> bool:
    """True when a float input has four axes (an image batch): what a detector takes."""
    return any(
        value.type.tensor_type.elem_type in (1, 10, 16)  # FLOAT, FLOAT16, BFLOAT16
        and len(value.type.tensor_type.shape.dim) == 4
        for value in model.graph.input
    )


def _takes_token_ids(model: onnx.ModelProto) -> bool:
    """True when an integer input is named like token ids (``input_ids``, ``tokens``)."""
    integer = {6, 7}  # TensorProto.INT32, INT64 (onnx is imported for types only)
    return any(
        value.type.tensor_type.elem_type in integer and _TOKEN_INPUT.search(value.name)
        for value in model.graph.input
    )


def detection_layout(shape: tuple[int, ...]) -> tuple[int, int] | None:
    """``(values per box, boxes)`` for a YOLO-style ``[1, 4+C, N]`` or ``[1, N, 4+C]``."""
    if len(shape) != 3:
        return None
    a, b = shape[1], shape[2]
    for per_box, count in ((a, b), (b, a)):
        if 5 <= per_box <= 200 and count >= 100 and count >= 5 * per_box:
            return per_box, count
    return None


def choose_task(
    model: onnx.ModelProto,
    outputs: dict[str, np.ndarray],
    metric: str,
    output: str = "",
    alphabet_size: int | None = None,
) -> TaskChoice:
    """The detected task, or the one the user chose (``metric`` not ``auto``)."""
    return choose_tasks(model, outputs, metric, output, alphabet_size)[0]


def choose_tasks(
    model: onnx.ModelProto,
    outputs: dict[str, np.ndarray],
    metric: str,
    output: str = "",
    alphabet_size: int | None = None,
) -> list[TaskChoice]:
    """Every output judged and how: the detected tasks (:func:`detect_tasks`), or the one the
    user chose (``metric`` not ``auto``), which judges the first output alone."""
    if output and output in outputs:
        outputs = {output: outputs[output], **{k: v for k, v in outputs.items() if k != output}}
    detected = detect_tasks(model, outputs, alphabet_size)
    if metric in ("", "auto"):
        return detected
    if metric not in TASKS:
        raise ValueError(f"Unknown metric '{metric}' (choose one of {', '.join(TASKS)}).")
    first = detected[0]
    return [
        TaskChoice(
            metric,
            first.output,
            f"chosen by you (detected: {first.task}, because {first.why})",
            chosen_by="you",
        )
    ]
