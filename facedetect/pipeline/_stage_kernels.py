"""The compiled kernel of :mod:`._stage_features`, apart from it: a stage's bins assembled
from the kept positives' columns and the columns computed for the stage, with the bins no
window holds dropped as they are written."""

from __future__ import annotations

import numba
import numpy as np

from ..training._binned_kernels import N_BINS, compact_row

_pjit = numba.njit(cache=True, parallel=True, boundscheck=False)


@_pjit
def assemble_compacted(kept, fresh, kept_column, fresh_column, edges, out, out_edges,
                       out_n_edges, n_blocks):
    """``out[f, j] = kept[f, kept_column[j]]`` where that is not negative, else
    ``fresh[f, fresh_column[j]]``; then each row compacted (:func:`compact_row`: its
    empty bins dropped, its cuts into ``out_edges``, their number into ``out_n_edges``)
    while it is in cache. Features in blocks run in parallel (numpy's column indexing of
    a feature-major array took a second a stage)."""
    n_features = out.shape[0]
    for blk in numba.prange(n_blocks):
        occupied = np.empty(N_BINS, np.bool_)
        remap = np.empty(N_BINS, np.uint8)
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            kept_row, fresh_row, out_row = kept[f], fresh[f], out[f]
            for j in range(out_row.size):
                column = kept_column[j]
                out_row[j] = kept_row[column] if column >= 0 else fresh_row[fresh_column[j]]
            out_n_edges[f] = compact_row(out_row, edges[f], out_edges[f], occupied, remap)
