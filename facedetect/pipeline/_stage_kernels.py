"""The compiled kernel of :mod:`._stage_features`, apart from it: a stage's bins assembled
from the kept positives' columns and the columns computed for the stage."""

from __future__ import annotations

import numba

_pjit = numba.njit(cache=True, parallel=True, boundscheck=False)


@_pjit
def assemble_columns(kept, fresh, kept_column, fresh_column, out):
    """``out[f, j] = kept[f, kept_column[j]]`` where that is not negative, else
    ``fresh[f, fresh_column[j]]``: one pass over each feature's row, features in parallel
    (numpy's column indexing of a feature-major array took a second a stage)."""
    for f in numba.prange(out.shape[0]):
        kept_row, fresh_row, out_row = kept[f], fresh[f], out[f]
        for j in range(out_row.size):
            column = kept_column[j]
            out_row[j] = kept_row[column] if column >= 0 else fresh_row[fresh_column[j]]
