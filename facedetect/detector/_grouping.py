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
from scipy.spatial import cKDTree

CHUNK = 512
SIZE_BUCKET = 1.1   # windows whose widths differ by less than this factor share a k-d tree
# Above this many windows grouping would take minutes and gigabytes (the windows above a
# threshold far below any face's score): refused with a message rather than attempted.
MAX_WINDOWS = 100_000
# Candidate pairs at most (about 100 bytes each while they are filtered): windows packed
# so densely (a pyramid step near 1) that they pair past this are refused, not grouped.
MAX_PAIRS = 10_000_000


def _similar_pairs(rects: np.ndarray, eps: float):
    """Index pairs ``i < j`` of similar rectangles (OpenCV's rule: each corner within
    ``eps`` times the mean of the smaller sides).

    The rule bounds the Chebyshev distance of the corner points ``(x, y, x + w, y + h)``
    by ``eps`` times either window's mean side, so k-d trees over windows of similar width
    find every candidate pair in O(n log n + pairs); the exact rule then filters them.
    """
    x, y, w, h = (rects[:, k].astype(np.float64) for k in range(4))
    corners = np.column_stack([x, y, x + w, y + h])
    bucket = np.floor(np.log(np.maximum(w, 1.0)) / np.log(SIZE_BUCKET)).astype(np.int64)
    members = [np.flatnonzero(bucket == b) for b in np.unique(bucket)]
    trees = [cKDTree(corners[m]) for m in members]
    reach = [eps * (w[m].max() + h[m].max()) * 0.5 for m in members]
    widths = [(w[m].min(), w[m].max()) for m in members]
    rows, cols = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    pairs = 0
    for a in range(len(members)):
        for b in range(a, len(members)):
            limit = min(reach[a], reach[b])
            if widths[b][0] - widths[a][1] > 2 * limit:
                break   # the widths only grow from here on
            # Counted first, in constant memory: the pairs grow as the square of the
            # windows per face.
            pairs += int(trees[a].count_neighbors(trees[b], limit, p=np.inf))
            if pairs > MAX_PAIRS:
                from ..errors import FacedetectError
                raise FacedetectError(
                    f"the {len(rects):,} windows to group overlap in more than "
                    f"{MAX_PAIRS:,} pairs: the pyramid is too fine or the threshold too low; "
                    "raise scale_factor or the threshold")
            found = trees[a].sparse_distance_matrix(trees[b], limit, p=np.inf,
                                                    output_type="ndarray")
            i, j = members[a][found["i"]], members[b][found["j"]]
            rows.append(i)
            cols.append(j)
    i, j = np.concatenate(rows), np.concatenate(cols)
    delta = eps * (np.minimum(w[i], w[j]) + np.minimum(h[i], h[j])) * 0.5
    close = (i != j) & (np.abs(corners[i] - corners[j]) <= delta[:, None]).all(axis=1)
    return i[close], j[close]


def _inside_stronger(boxes: np.ndarray, counts: np.ndarray, eps: float) -> np.ndarray:
    """For each box, whether it lies inside a stronger one (OpenCV's second pass).

    Compared chunk by chunk with the boxes whose x can qualify (sorted by x, one
    contiguous slice per chunk), so memory stays bounded and the work follows the density.
    """
    x, y, w, h = (boxes[:, k] for k in range(4))
    dx = np.rint(w * eps).astype(np.int64)
    dy = np.rint(h * eps).astype(np.int64)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    inside = np.zeros(len(boxes), dtype=bool)
    if len(boxes) == 0:
        return inside
    # i inside j needs x_j <= x_i + dx_j and x_j >= x_i + w_i - (w_j + dx_j).
    reach_left, reach_right = int((w + dx).max()), int(dx.max())
    for start in range(0, len(boxes), CHUNK):
        mine = order[start:start + CHUNK]
        low = np.searchsorted(sorted_x, x[mine].min() - reach_left, "left")
        high = np.searchsorted(sorted_x, x[mine].max() + reach_right, "right")
        other = order[low:high]
        n1, n2 = counts[mine, None], counts[None, other]
        found = ((x[mine, None] >= x[other] - dx[other]) & (y[mine, None] >= y[other] - dy[other])
                 & (x[mine, None] + w[mine, None] <= x[other] + w[other] + dx[other])
                 & (y[mine, None] + h[mine, None] <= y[other] + h[other] + dy[other])
                 & ((n2 > np.maximum(3, n1)) | (n1 < 3)) & (mine[:, None] != other[None, :]))
        inside[mine] = found.any(axis=1)
    return inside


def group_rectangles(rects, scores, min_neighbors: int = 3, eps: float = 0.2):
    """Group ``(x, y, w, h)`` integer rectangles.

    Returns ``(boxes, scores, counts)``: the averaged integer rectangles, the best member
    score and the number of members of each group. With ``min_neighbors <= 0`` the input
    comes back ungrouped, as in OpenCV.

    Examples
    --------
    >>> boxes, best, counts = group_rectangles(
    ...     [[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [90, 90, 20, 20]],
    ...     [1.0, 5.0, 2.0, 9.0], min_neighbors=2)
    >>> boxes.tolist(), best.tolist(), counts.tolist()   # the lone window has no support
    ([[10, 10, 20, 20]], [5.0], [3])
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
    # OpenCV scales by s = 1.f / n in float32 before rounding: the same arithmetic here.
    scale = np.float32(1.0) / counts.astype(np.float32)
    averaged = np.rint(sums.astype(np.float32) * scale[:, None]).astype(np.int64)
    strong = np.flatnonzero(counts > min_neighbors)
    keep = strong[~_inside_stronger(averaged[strong], counts[strong], eps)]
    return averaged[keep], best[keep], counts[keep]
