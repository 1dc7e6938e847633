"""The regions of a mask — what a text detector or a segmenter hands on (each connected blob of
pixels over the threshold is one text line, one object) — and how many of the float model's
regions a quantized model still finds. Numpy only.
"""

from __future__ import annotations

import numpy as np

MIN_REGION_PIXELS = 16  # smaller blobs are specks a detector's post-processing drops
MATCH_IOU = 0.5  # a region is found again when one region overlaps it by this IoU


def label_regions(mask: np.ndarray) -> np.ndarray:
    """4-connected labels of a 2-D boolean ``mask``: 0 outside, each region one positive number
    (the flat index of one of its pixels, plus one).

    Every pixel takes the smallest label among its neighbours inside the mask, then follows
    its label's own label (pointer jumping), until nothing changes: a few dozen vectorised
    passes even for long, thin text lines."""
    h, w = mask.shape
    inside = mask.ravel()
    big = h * w
    labels = np.where(inside, np.arange(big), big)
    pairs = []  # (pixel, neighbour) index pairs of adjacent pixels both inside
    grid = np.arange(big).reshape(h, w)
    for a, b in ((grid[:, :-1], grid[:, 1:]), (grid[:-1, :], grid[1:, :])):
        both = inside[a.ravel()] & inside[b.ravel()]
        pairs.append((a.ravel()[both], b.ravel()[both]))
    left = np.concatenate([p[0] for p in pairs] + [p[1] for p in pairs])
    right = np.concatenate([p[1] for p in pairs] + [p[0] for p in pairs])
    extended = np.append(labels, big)  # index ``big`` stands for "outside"
    while True:
        lowest = extended.copy()
        np.minimum.at(lowest, left, extended[right])
        lowest[:big][inside] = lowest[lowest[:big][inside]]  # jump to the label's label
        if np.array_equal(lowest, extended):
            break
        extended = lowest
    out = np.where(inside, extended[:big] + 1, 0)
    return out.reshape(h, w)


def regions_found(reference: np.ndarray, test: np.ndarray) -> tuple[int, int, int]:
    """(regions of ``reference``, regions of ``test``, reference regions that ``test`` finds
    again) for two 2-D boolean masks; regions under :data:`MIN_REGION_PIXELS` are not counted."""
    ref_labels, test_labels = label_regions(reference), label_regions(test)
    ref_ids, ref_areas = _kept(ref_labels)
    test_ids, test_areas = _kept(test_labels)
    if not ref_ids.size or not test_ids.size:
        return ref_ids.size, test_ids.size, 0
    both = (ref_labels > 0) & (test_labels > 0)
    pairs, overlaps = np.unique(
        np.stack([ref_labels[both], test_labels[both]]), axis=1, return_counts=True
    )
    area_of_ref = dict(zip(ref_ids.tolist(), ref_areas.tolist(), strict=True))
    area_of_test = dict(zip(test_ids.tolist(), test_areas.tolist(), strict=True))
    found = set()
    for (r, t), overlap in zip(pairs.T.tolist(), overlaps.tolist(), strict=True):
        if r in area_of_ref and t in area_of_test:
            union = area_of_ref[r] + area_of_test[t] - overlap
            if overlap / union >= MATCH_IOU:
                found.add(r)
    return ref_ids.size, test_ids.size, len(found)


def _kept(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ids, areas = np.unique(labels[labels > 0], return_counts=True)
    keep = areas >= MIN_REGION_PIXELS
    return ids[keep], areas[keep]
