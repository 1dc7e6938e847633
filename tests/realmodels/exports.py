"""Corpus models built here from real pretrained weights or real data that public packages ship.

Some packages ship a model's weights (a PyTorch state dict, Hugging Face files) but no ONNX
file; some families (tree ensembles) are trained by their users. Each builder here turns one
package member into the ONNX file a user of that package would export, with the package's own
weights or the data named: nothing is random. Used by ``fetch.py`` (``make realmodels``); they
need torch / transformers / lightgbm (the ``realmodels`` extra).
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _torch_export(
    module: Any,
    args: tuple[Any, ...],
    target: Path,
    inputs: list[str],
    outputs: list[str],
    dynamic: dict[str, dict[int, str]] | None = None,
    opset: int = 17,
) -> None:
    import torch

    with torch.no_grad():
        torch.onnx.export(
            module.eval(),
            args,
            str(target),
            input_names=inputs,
            output_names=outputs,
            opset_version=opset,
            dynamo=False,
            dynamic_axes=dynamic,
        )


def minilm(weights_zip: bytes, target: Path) -> None:
    """The sentence-transformer's BERT encoder (its pretrained weights) to ONNX."""
    import torch
    from transformers import AutoModel

    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(io.BytesIO(weights_zip)) as z:
        z.extractall(tmp)
        model = AutoModel.from_pretrained(tmp).eval()
        ids = torch.ones(1, 16, dtype=torch.long)
        names = ["input_ids", "attention_mask", "token_type_ids"]
        _torch_export(
            model,
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            target,
            names,
            ["last_hidden_state"],
            {n: {0: "batch", 1: "sequence"} for n in names}
            | {"last_hidden_state": {0: "batch", 1: "sequence"}},
            opset=14,
        )


def minilm_qdq(weights_zip: bytes, target: Path) -> None:
    """MiniLM quantized by stock onnxruntime (static QDQ, per-channel, 8 real-vocabulary
    sentences' worth of random ids): the pre-quantized transformer a user may open."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(0)
            self._items = iter(
                [
                    {
                        "input_ids": rng.integers(1000, 30000, (1, 16)),
                        "attention_mask": np.ones((1, 16), np.int64),
                        "token_type_ids": np.zeros((1, 16), np.int64),
                    }
                    for _ in range(8)
                ]
            )

        def get_next(self) -> dict[str, Any] | None:
            return next(self._items, None)

    with tempfile.TemporaryDirectory() as tmp:
        float_model = Path(tmp) / "float.onnx"
        minilm(weights_zip, float_model)
        quantize_static(
            str(float_model), str(target), Reader(), quant_format=QuantFormat.QDQ, per_channel=True
        )


def resemblyzer(state_dict: bytes, target: Path) -> None:
    """Resemblyzer's speaker encoder (3-layer LSTM on 40 mel bands, Linear, ReLU, L2 norm) with
    its recurrent state as inputs and outputs, as a streaming deployment runs it."""
    import torch
    from torch import nn

    class VoiceEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(40, 256, 3, batch_first=True)
            self.linear = nn.Linear(256, 256)
            self.relu = nn.ReLU()

        def forward(self, mels: Any, h0: Any, c0: Any) -> tuple[Any, Any, Any]:
            _out, (h, c) = self.lstm(mels, (h0, c0))
            embeds = self.relu(self.linear(h[-1]))
            return embeds / torch.norm(embeds, dim=1, keepdim=True), h, c

    module = VoiceEncoder()
    weights = torch.load(io.BytesIO(state_dict), map_location="cpu", weights_only=True)
    # similarity_weight/bias scale its training loss only
    module.load_state_dict(
        {k: v for k, v in weights["model_state"].items() if not k.startswith("similarity_")}
    )
    args = (torch.zeros(1, 160, 40), torch.zeros(3, 1, 256), torch.zeros(3, 1, 256))
    _torch_export(
        module,
        args,
        target,
        ["mels", "h0", "c0"],
        ["embedding", "hn", "cn"],
        {
            "mels": {0: "batch", 1: "frames"},
            "h0": {1: "batch"},
            "c0": {1: "batch"},
            "embedding": {0: "batch"},
            "hn": {1: "batch"},
            "cn": {1: "batch"},
        },
    )


def _mtcnn_net(kind: str) -> Any:
    """facenet-pytorch's MTCNN stage networks, layer for layer (names match its state dicts)."""
    from torch import nn

    def conv(cin: int, cout: int, k: int) -> nn.Conv2d:
        return nn.Conv2d(cin, cout, kernel_size=k)

    class PNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.prelu1 = conv(3, 10, 3), nn.PReLU(10)
            self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv2, self.prelu2 = conv(10, 16, 3), nn.PReLU(16)
            self.conv3, self.prelu3 = conv(16, 32, 3), nn.PReLU(32)
            self.conv4_1, self.softmax4_1 = conv(32, 2, 1), nn.Softmax(dim=1)
            self.conv4_2 = conv(32, 4, 1)

        def forward(self, x: Any) -> tuple[Any, Any]:
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.prelu3(self.conv3(self.prelu2(self.conv2(x))))
            return self.conv4_2(x), self.softmax4_1(self.conv4_1(x))

    class RNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.prelu1 = conv(3, 28, 3), nn.PReLU(28)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2, self.prelu2 = conv(28, 48, 3), nn.PReLU(48)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3, self.prelu3 = conv(48, 64, 2), nn.PReLU(64)
            self.dense4, self.prelu4 = nn.Linear(576, 128), nn.PReLU(128)
            self.dense5_1, self.softmax5_1 = nn.Linear(128, 2), nn.Softmax(dim=1)
            self.dense5_2 = nn.Linear(128, 4)

        def forward(self, x: Any) -> tuple[Any, Any]:
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.prelu3(self.conv3(x)).permute(0, 3, 2, 1).contiguous()
            x = self.prelu4(self.dense4(x.view(x.shape[0], -1)))
            return self.dense5_2(x), self.softmax5_1(self.dense5_1(x))

    class ONet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.prelu1 = conv(3, 32, 3), nn.PReLU(32)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2, self.prelu2 = conv(32, 64, 3), nn.PReLU(64)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3, self.prelu3 = conv(64, 64, 3), nn.PReLU(64)
            self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv4, self.prelu4 = conv(64, 128, 2), nn.PReLU(128)
            self.dense5, self.prelu5 = nn.Linear(1152, 256), nn.PReLU(256)
            self.dense6_1, self.softmax6_1 = nn.Linear(256, 2), nn.Softmax(dim=1)
            self.dense6_2 = nn.Linear(256, 4)
            self.dense6_3 = nn.Linear(256, 10)

        def forward(self, x: Any) -> tuple[Any, Any, Any]:
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.pool3(self.prelu3(self.conv3(x)))
            x = self.prelu4(self.conv4(x)).permute(0, 3, 2, 1).contiguous()
            x = self.prelu5(self.dense5(x.view(x.shape[0], -1)))
            return self.dense6_2(x), self.dense6_3(x), self.softmax6_1(self.dense6_1(x))

    return {"pnet": PNet, "rnet": RNet, "onet": ONet}[kind]()


def _mtcnn(
    kind: str,
    size: int,
    outputs: list[str],
    external: bool = False,
) -> Callable[[bytes, Path], None]:
    def build(state_dict: bytes, target: Path) -> None:
        import onnx
        import torch

        net = _mtcnn_net(kind)
        net.load_state_dict(
            torch.load(io.BytesIO(state_dict), map_location="cpu", weights_only=True)
        )
        dynamic = (
            {"image": {0: "batch", 2: "height", 3: "width"}}
            if kind == "pnet"
            else {"image": {0: "batch"}}
        )
        _torch_export(net, (torch.zeros(1, 3, size, size),), target, ["image"], outputs, dynamic)
        if external:  # weights beside the graph, as big exports ship them, named after
            # the file the fetch script renames ``target`` to
            model = onnx.load(str(target))
            onnx.save_model(
                model,
                str(target),
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=target.with_suffix(".onnx").name + ".data",
                size_threshold=1024,
            )

    return build


def lightgbm_digits(_: bytes, target: Path) -> None:
    """A LightGBM classifier trained on scikit-learn's handwritten digits (real labelled data),
    converted by onnxmltools: one TreeEnsembleClassifier and a ZipMap of probabilities."""
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    model = lightgbm.LGBMClassifier(n_estimators=60, num_leaves=31, verbose=-1, random_state=0).fit(
        x.astype("float32"), y
    )
    onnx_model = convert_lightgbm(
        model, initial_types=[("input", FloatTensorType([None, 64]))], target_opset=15, zipmap=True
    )
    target.write_bytes(onnx_model.SerializeToString())


def sklearn_pipeline_digits(_: bytes, target: Path) -> None:
    """A scikit-learn pipeline trained on its handwritten digits (real labelled data) —
    standardise, PCA to 32, a 64-unit MLP — converted by skl2onnx: Scaler, MatMul of the
    projection, the MLP's MatMul/Add/Relu, then ArgMax and a ZipMap of probabilities."""
    from skl2onnx import to_onnx
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_digits(return_X_y=True)
    pipeline = make_pipeline(
        StandardScaler(),
        PCA(n_components=32, random_state=0),
        MLPClassifier(hidden_layer_sizes=(64,), max_iter=400, random_state=0),
    ).fit(x.astype("float32"), y)
    onnx_model = to_onnx(pipeline, x[:1].astype("float32"), target_opset=15)
    target.write_bytes(onnx_model.SerializeToString())


BUILDERS: dict[str, Callable[[bytes, Path], None]] = {
    "minilm": minilm,
    "minilm_qdq": minilm_qdq,
    "resemblyzer": resemblyzer,
    "mtcnn_pnet": _mtcnn("pnet", 24, ["boxes", "scores"]),
    "mtcnn_rnet": _mtcnn("rnet", 24, ["boxes", "scores"]),
    "mtcnn_onet": _mtcnn("onet", 48, ["boxes", "landmarks", "scores"], external=True),
    "lightgbm_digits": lightgbm_digits,
    "sklearn_pipeline_digits": sklearn_pipeline_digits,
}
