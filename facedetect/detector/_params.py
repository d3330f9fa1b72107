"""Scan settings: what ``detect``'s flags and ``facedetect.detect``'s keywords set, checked
once. Plain data, so that the command line reads its defaults without loading the scanner.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParameter
from ..limits import check_limited
from ..modelfile._detection import WINDOW_SCAN
from ..modelfile._fields import PYRAMIDS, SCAN_LIMITS

__all__ = ["DetectionParams", "InvalidScanSetting", "check_setting_names"]


@dataclass(kw_only=True)
class DetectionParams:
    """Scan settings. A model's own settings (its ``detection`` section, chosen at
    training from held-out data) come from :func:`params_for`; these defaults are
    OpenCV's ``detectMultiScale`` rule at the raw threshold 0, on area-averaged levels.

    Parameters
    ----------
    scale_factor : float
        Pyramid step, in [1.01, 10].
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
        How levels are resized (:mod:`._pyramid`): ``"area"`` (area averages, as training
        faces are made) or ``"linear"`` (OpenCV's bilinear resize). ``step="auto"``
        resizes as OpenCV does whatever this says.

    See Also
    --------
    facedetect.detector.params_for : a model's own settings with overrides.
    facedetect.Detector : a model and its settings, loaded once.

    Examples
    --------
    >>> params = DetectionParams(scale_factor=1.2, min_neighbors=2)
    >>> params.validate()
    >>> DetectionParams(scale_factor=1.0).validate()
    Traceback (most recent call last):
        ...
    facedetect.detector._params.InvalidScanSetting: scale_factor must be ... in [1.01, 10], got 1.0
    """

    # the defaults are a model file's scan at its window operating point (one definition)
    scale_factor: float = WINDOW_SCAN["scale_factor"]
    step: int | str = WINDOW_SCAN["step"]  # pixels, "auto" (OpenCV's rule) or "refine"
    min_size: int = 19
    max_size: int | None = None
    threshold: float = 0.0
    min_neighbors: int = WINDOW_SCAN["min_neighbors"]
    neighbor_margin: float = WINDOW_SCAN["neighbor_margin"]
    pyramid: str = WINDOW_SCAN["pyramid"]

    @property
    def scan_threshold(self) -> float:
        """Windows above this are kept by the scan: the neighbours a group may count."""
        return self.threshold - self.neighbor_margin

    def validate(self):
        """Refuse settings no scan can honour, naming the parameter; numpy scalars are
        taken as the numbers they are (and stored as Python numbers)."""
        if self.step in ("auto", "refine"):
            names = [name for name in SCAN_LIMITS if name != "step"]
        else:
            names = list(SCAN_LIMITS)
        try:
            for name in names:
                setattr(self, name, check_limited(name, getattr(self, name), SCAN_LIMITS,
                                                  InvalidScanSetting))
        except InvalidScanSetting as error:
            if error.parameter != "step":
                raise
            raise InvalidScanSetting("step must be a positive integer, 'auto' or 'refine', "
                                     f"got {self.step!r}", "step") from None
        if self.max_size is not None and self.max_size < self.min_size:
            raise InvalidScanSetting(f"max_size must be at least min_size ({self.min_size}), "
                                     f"got {self.max_size}", "max_size")
        if self.pyramid not in PYRAMIDS:
            raise InvalidScanSetting(f"pyramid must be one of {', '.join(PYRAMIDS)}, got "
                                     f"{self.pyramid!r}")


def check_setting_names(settings: dict) -> None:
    """Refuse a keyword that is no scan setting, naming it and the choices.

    Examples
    --------
    >>> check_setting_names({"threshold": 1.0})
    >>> check_setting_names({"foo": 1})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    facedetect.detector._params.InvalidScanSetting: unknown scan setting 'foo'; choose from ...
    """
    unknown = sorted(set(settings) - set(DetectionParams.__dataclass_fields__))
    if unknown:
        raise InvalidScanSetting(f"unknown scan setting {unknown[0]!r}; choose from "
                                 f"{', '.join(DetectionParams.__dataclass_fields__)}",
                                 unknown[0])


class InvalidScanSetting(InvalidParameter):
    """A scan setting out of its range or of the wrong type (also a ``ValueError``)."""
