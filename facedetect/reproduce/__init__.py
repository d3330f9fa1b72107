"""Reproducing the paper: its tables (transcribed), and our runs of CS, DBN and DB beside them.

``facedetect paper`` (see :mod:`facedetect.reproduce._paper`) trains every method on the
synthetic and UCI sets, for the paper's 19 costs and 3 folds, and writes our tables next to
the paper's.
"""

import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# and the front door start without numpy, numba and OpenCV.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_paper': ['PaperConfig', 'run_paper'],
})

__all__ = ['PaperConfig', 'run_paper']
