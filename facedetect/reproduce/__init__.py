"""Reproducing the paper: its tables (transcribed), and our runs of CS, DBN and DB beside them.

``facedetect paper`` (see :mod:`facedetect.reproduce.paper`) trains every method on the
synthetic and UCI sets, for the paper's 19 costs and 3 folds, and writes our tables next to
the paper's.
"""

from .paper import PaperConfig, run_paper

__all__ = ["PaperConfig", "run_paper"]
