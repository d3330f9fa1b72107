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

CHUNK = 512
# Above this many windows grouping would take minutes and gigabytes (the windows above a
# threshold far below any face's score): refused with a message rather than attempted.
MAX_WINDOWS = 100_000


def _similar_pairs(rects: np.ndarray, eps: float):
    """Index pairs of similar rectangles (OpenCV's rule), comparing each window only with
    those whose x lies within the largest possible tolerance: sorted by x, a chunk's
    candidates are one contiguous slice, so the work follows the local density, not n^2."""
    x, y, w, h = (rects[:, k].astype(np.float64) for k in range(4))
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    reach = eps * (w.max() + h.max()) * 0.5   # no pair's tolerance exceeds this
    rows, cols = [], []
    for start in range(0, len(rects), CHUNK):
        mine = order[start:start + CHUNK]
        low = np.searchsorted(sorted_x, sorted_x[start] - reach, "left")
        high = np.searchsorted(sorted_x, sorted_x[mine.size + start - 1] + reach, "right")
        other = order[low:high]
        delta = eps * (np.minimum(w[mine, None], w[other]) + np.minimum(h[mine, None], h[other])) * 0.5
        close = ((np.abs(x[mine, None] - x[other]) <= delta)
                 & (np.abs(y[mine, None] - y[other]) <= delta)
                 & (np.abs(x[mine, None] + w[mine, None] - x[other] - w[other]) <= delta)
                 & (np.abs(y[mine, None] + h[mine, None] - y[other] - h[other]) <= delta))
        i, j = np.nonzero(close)
        rows.append(mine[i])
        cols.append(other[j])
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
    if len(rects) > MAX_WINDOWS:
        from ..errors import FacedetectError
        raise FacedetectError(f"{len(rects):,} windows to group, more than {MAX_WINDOWS:,}: "
                              "the threshold is far below any face's score; raise it")
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
