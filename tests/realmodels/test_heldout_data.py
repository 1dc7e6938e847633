"""The held-out generator makes the corpus's tasks' data another way: other typefaces (never
DejaVu), other texts, shapes the models take, and the same truth kept beside each sample."""

from __future__ import annotations

import numpy as np
import pytest

from tests.realmodels import heldout_data, realdata

pytestmark = pytest.mark.skipif(
    not heldout_data.fonts(),
    reason="no held-out font is installed (make realmodels installs fonts-liberation, "
    "fonts-freefont-ttf and fonts-noto-mono)",
)


def test_the_held_out_data_is_another_distribution_of_the_same_tasks() -> None:
    assert not any("dejavu" in path.lower() for path in heldout_data.fonts())
    x, texts = heldout_data.text_lines(6, seed=300)
    assert x.shape == (6, 3, 48, 480) and x.dtype == np.float32
    assert float(x.min()) >= -1.0 and float(x.max()) <= 1.0  # PaddleOCR's normalisation
    assert not set(texts) & set(realdata.sentences(200, 0))  # other texts
    again, same = heldout_data.text_lines(6, seed=300)
    assert same == texts and np.array_equal(again, x)  # replayable
    lines, labels = heldout_data.direction_lines(4, seed=1)
    assert lines.shape == (4, 3, 48, 192) and labels.tolist() == [0, 1, 0, 1]
    pages, quarters = heldout_data.rotated_pages(4, seed=2)
    assert pages.shape == (4, 3, 224, 224) and quarters.tolist() == [0, 3, 2, 1]
    detector, _ = heldout_data.detector_pages(2, seed=3)
    assert detector.shape == (2, 3, 416, 320)
    # not the corpus generator's pictures: their pixels differ in distribution, not only noise
    ours, _ = realdata.text_lines(6, seed=300)
    assert abs(float(ours.mean()) - float(x[:, :, :, :320].mean())) > 0.02
