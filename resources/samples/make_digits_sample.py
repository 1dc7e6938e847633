"""Regenerate the bundled sample: a small CNN trained on the UCI handwritten digits.

Writes, next to this script:

- ``digits_cnn.onnx``     the trained model (input ``image``: float32 [batch, 1, 8, 8], pixel/16;
                          output ``logits``: float32 [batch, 10])
- ``digits_calib.npz``    ``image``: 128 training images for quantization calibration
- ``digits_eval.npz``     ``image`` + ``labels``: the 360 held-out images never seen in training

Needs torch and scikit-learn (``pip install -e .[torch,dev]``); runs offline in a few seconds, since
scikit-learn ships the data set. Deterministic: fixed seeds, single thread.

    python resources/samples/make_digits_sample.py
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

os.environ["ORT_DISABLE_TELEMETRY"] = "1"

HERE = Path(__file__).resolve().parent
SEED = 0


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return (train_x, train_y, test_x, test_y) with images as float32 [N, 1, 8, 8] in [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    train_x, test_x, train_y, test_y = train_test_split(
        x, y, test_size=0.2, random_state=SEED, stratify=y
    )
    return train_x, train_y, test_x, test_y


def build_model():  # type: ignore[no-untyped-def]
    """A small CNN: two conv blocks, a pooling step and a two-layer classifier head."""
    import torch
    from torch import nn

    class DigitsCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                nn.Conv2d(16, 32, 3, padding=1),
                nn.BatchNorm2d(32),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(32, 32, 3, padding=1),
                nn.ReLU(),
            )
            self.classifier = nn.Sequential(
                nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.classifier(self.features(x))

    return DigitsCNN()


def train(model, train_x: np.ndarray, train_y: np.ndarray, epochs: int = 30):  # type: ignore[no-untyped-def]
    """Train with Adam on mini-batches; returns the model in eval mode."""
    import torch

    torch.manual_seed(SEED)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = torch.from_numpy(train_x), torch.from_numpy(train_y)
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(x), generator=gen).split(64):
            opt.zero_grad()
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def main() -> None:
    """Train, export and write the sample files; print the held-out accuracy."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    train_x, train_y, test_x, test_y = load_split()
    model = train(build_model(), train_x, train_y)
    with torch.no_grad():
        acc = float((model(torch.from_numpy(test_x)).argmax(1).numpy() == test_y).mean())

    out = HERE / "digits_cnn.onnx"
    # The legacy exporter writes weights inline in one small file and honours opset 17 exactly.
    torch.onnx.export(
        model,
        (torch.from_numpy(test_x[:2]),),
        str(out),
        input_names=["image"],
        output_names=["logits"],
        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    import onnx

    proto = onnx.load(str(out))
    proto.producer_name = "edgestudio-sample"
    proto.doc_string = "Small CNN trained on the UCI digits; see make_digits_sample.py"
    entry = proto.metadata_props.add()
    entry.key, entry.value = "heldout_top1", f"{acc:.4f}"
    onnx.save(proto, str(out))

    rng = np.random.default_rng(SEED)
    calib = train_x[rng.choice(len(train_x), 128, replace=False)]
    np.savez(HERE / "digits_calib.npz", image=calib)
    np.savez(HERE / "digits_eval.npz", image=test_x, labels=test_y)
    print(f"held-out top-1 accuracy (PyTorch, fp32): {acc:.4f} on {len(test_x)} images")
    print(f"wrote {out.name}, digits_calib.npz, digits_eval.npz")


if __name__ == "__main__":
    main()
