"""Scan settings: what ``detect``'s flags and ``facedetect.detect``'s keywords set, checked
once. Plain data, so that the command line reads its defaults without loading the scanner.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FacedetectError
from ..model_schema import PYRAMIDS

__all__ = ["DetectionParams"]


@dataclass(kw_only=True)
class DetectionParams:
    """Scan settings. A model's own settings (its ``detection`` section, chosen at
    training from held-out data) come from :func:`params_for`; these defaults are
    OpenCV's ``detectMultiScale`` rule at the raw threshold 0, on area-averaged levels.

    Parameters
    ----------
    scale_factor : float
        Pyramid step, in [1.001, 10].
    step : int, "auto" or "refine"
        Window stride in pixels; ``"auto"`` is OpenCV's rule (2 up to twice the window,
        then 1) with the rest of its scan (its levels; no window of a standard deviation
        of at most 10 grey levels; along a row, not the window after one the first stage
        rejects); ``"refine"`` scans at 2, then at 1 around windows near the threshold.
    min_size, max_size : int
        Smallest and largest window side in pixels (``max_size`` None: the image).
    threshold : float
        The score a window must exceed.
    min_neighbors : int
        Windows a group needs beyond this.
    neighbor_margin : float
        Windows within this below ``threshold`` count as neighbours (0: OpenCV's rule).
    pyramid : str
        How levels are resized (:mod:`.pyramid`): ``"area"`` (area averages, as training
        faces are made) or ``"linear"`` (OpenCV's bilinear resize). ``step="auto"``
        resizes as OpenCV does whatever this says.

    Examples
    --------
    >>> params = DetectionParams(scale_factor=1.2, min_neighbors=2)
    >>> params.validate()
    >>> DetectionParams(scale_factor=1.0).validate()
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: scale_factor must be in [1.001, 10]
    """

    scale_factor: float = 1.1
    step: int | str = "refine"  # pixels, "auto" (OpenCV's rule, step_at) or "refine" (scan.py)
    min_size: int = 19
    max_size: int | None = None
    threshold: float = 0.0
    min_neighbors: int = 3
    neighbor_margin: float = 0.0
    pyramid: str = "area"

    @property
    def scan_threshold(self) -> float:
        """Windows above this are kept by the scan: the neighbours a group may count."""
        return self.threshold - self.neighbor_margin

    def validate(self):
        if not 1.001 <= self.scale_factor <= 10:
            # Below 1.001 the pyramid has thousands of levels per octave: no end in sight.
            raise FacedetectError("scale_factor must be in [1.001, 10]")
        if self.step not in ("auto", "refine") and not (isinstance(self.step, int)
                                                        and self.step >= 1):
            raise FacedetectError("step must be a positive integer, 'auto' or 'refine'")
        if self.min_size < 1 or (self.max_size is not None and self.max_size < self.min_size):
            raise FacedetectError("min_size must be >= 1 and max_size >= min_size")
        if self.min_neighbors < 0:
            raise FacedetectError("min_neighbors must be >= 0")
        if not 0 <= self.neighbor_margin < float("inf"):
            raise FacedetectError("neighbor_margin must be a finite number >= 0")
        if self.pyramid not in PYRAMIDS:
            raise FacedetectError(f"pyramid must be one of {', '.join(PYRAMIDS)}")
