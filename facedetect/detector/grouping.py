"""Grouping overlapping detections the way OpenCV's ``groupRectangles`` does, keeping scores.

Windows are clustered by OpenCV's similarity rule (corners within ``eps`` of the mean size,
transitively), each cluster is averaged, clusters with ``min_neighbors`` or fewer members
are dropped, and a cluster lying inside a much stronger one is dropped. The result equals
``cv2.groupRectangles`` (tested against it); unlike it, each group also keeps the best
score of its members.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

CHUNK = 2048


def _similar_pairs(rects: np.ndarray, eps: float):
    x, y, w, h = (rects[:, k].astype(np.float64) for k in range(4))
    rows, cols = [], []
    for start in range(0, len(rects), CHUNK):
        sl = slice(start, start + CHUNK)
        delta = eps * (np.minimum(w[sl, None], w[None]) + np.minimum(h[sl, None], h[None])) * 0.5
        close = ((np.abs(x[sl, None] - x[None]) <= delta)
                 & (np.abs(y[sl, None] - y[None]) <= delta)
                 & (np.abs(x[sl, None] + w[sl, None] - x[None] - w[None]) <= delta)
                 & (np.abs(y[sl, None] + h[sl, None] - y[None] - h[None]) <= delta))
        i, j = np.nonzero(close)
        rows.append(i + start)
        cols.append(j)
    return np.concatenate(rows), np.concatenate(cols)


def group_rectangles(rects, scores, min_neighbors: int = 3, eps: float = 0.2):
    """Group ``(x, y, w, h)`` integer rectangles.

    Returns ``(boxes, scores, counts)``: the averaged integer rectangles, the best member
    score and the number of members of each group. With ``min_neighbors <= 0`` the input
    comes back ungrouped, as in OpenCV.
    """
    rects = np.asarray(rects, dtype=np.int64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64)
    if min_neighbors <= 0 or len(rects) == 0:
        return rects.copy(), scores.copy(), np.ones(len(rects), dtype=np.int64)
    i, j = _similar_pairs(rects, eps)
    graph = coo_matrix((np.ones(len(i), bool), (i, j)), shape=(len(rects),) * 2)
    n_groups, labels = connected_components(graph, directed=False)
    # OpenCV numbers the classes in order of first appearance.
    _, first = np.unique(labels, return_index=True)
    renumber = np.empty(n_groups, dtype=np.int64)
    renumber[np.argsort(first)] = np.arange(n_groups)
    labels = renumber[labels]
    counts = np.bincount(labels, minlength=n_groups)
    sums = np.zeros((n_groups, 4))
    np.add.at(sums, labels, rects)
    best = np.full(n_groups, -np.inf)
    np.maximum.at(best, labels, scores)
    # saturate_cast<int> rounds half away from zero... to even, as cvRound does.
    averaged = np.rint(sums / counts[:, None]).astype(np.int64)
    # Drop a group that lies inside a stronger one (OpenCV's second pass), all pairs at once.
    strong = counts > min_neighbors
    x, y, w, h = (averaged[:, k] for k in range(4))
    dx = np.rint(w * eps).astype(np.int64)
    dy = np.rint(h * eps).astype(np.int64)
    n1, n2 = counts[:, None], counts[None, :]
    inside = ((x[:, None] >= x[None] - dx[None]) & (y[:, None] >= y[None] - dy[None])
              & (x[:, None] + w[:, None] <= x[None] + w[None] + dx[None])
              & (y[:, None] + h[:, None] <= y[None] + h[None] + dy[None])
              & ((n2 > np.maximum(3, n1)) | (n1 < 3)) & strong[None, :])
    np.fill_diagonal(inside, False)
    keep = np.flatnonzero(strong & ~inside.any(axis=1))
    return averaged[keep], best[keep], counts[keep]
