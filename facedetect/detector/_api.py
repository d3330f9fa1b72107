"""The detector's front door: load a model by name or path, find faces in an image.

``facedetect.detect`` and ``facedetect.load_model`` are these functions. The ``detect``
command runs the same steps (a :class:`Detector`, then :func:`find_faces` per image), so the
two give the same boxes for the same image and model.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import FacedetectError
from ..images import DEFAULT_MAX_PIXELS
from ._image_input import InvalidImage, checked_max_pixels, grey_pixels
from ._detections import Detections
from ._multiscale import DetectionParams, detect_faces, params_for, scan_best, scanner_for
from ._params import check_setting_names
from ._model import HaarDetectorModel
from ._scan import LevelScanner

__all__ = ["OPENCV_FORMS", "SHIPPED_MODELS", "Detector", "InvalidImage", "detect", "find_faces",
           "grey_pixels", "load_model", "model_path", "shipped_model_path"]

SHIPPED_MODELS = ("default", "haar")
# The shipped default has channel features, which OpenCV's cascade format cannot hold;
# export-opencv writes its Haar companion: the same recipe trained with --no-channels.
OPENCV_FORMS = {"default": "haar"}
# Shipped before, and what stands in for it now: the default model rejects early, and
# exports as an OpenCV cascade that runs faster than it did (docs/cascades.md).
RETIRED_MODELS = {"cascade": "the default model now does its work: it rejects early, "
                             "exports as an OpenCV cascade (export-opencv default), and finds "
                             "more faces at every false-positive budget; train a cascade of "
                             "your own with --stages"}


def shipped_model_path(name: str = "default") -> Path:
    """The file of a model shipped with the package.

    Parameters
    ----------
    name : {"default", "haar"}
        ``"default"``: the detector ``detect`` uses. ``"haar"``: the same recipe on Haar
        features only (``--no-channels``), the form ``export-opencv default`` writes for
        OpenCV.

    Returns
    -------
    pathlib.Path

    See Also
    --------
    facedetect.load_model : load a shipped model by name.

    Examples
    --------
    >>> shipped_model_path("default").name
    'default.json'
    """
    if name in RETIRED_MODELS:
        raise FacedetectError(f"the model {name!r} is no longer shipped: "
                              f"{RETIRED_MODELS[name]}")
    if name not in SHIPPED_MODELS:
        raise FacedetectError(f"no shipped model {name!r}; choose from "
                              f"{', '.join(SHIPPED_MODELS)}")
    return Path(str(resources.files("facedetect") / "models" / f"{name}.json"))


def load_model(model: str | os.PathLike | HaarDetectorModel | None = None
               ) -> HaarDetectorModel:
    """A detector model: a model file, or a shipped model by name.

    Parameters
    ----------
    model : str, path, HaarDetectorModel or None
        A path to a model file (JSON), or a shipped model's name (``"default"``, or
        ``"haar"``: the same recipe on Haar features only, the form OpenCV runs); a file
        of that name in the working folder wins, as a path always does. None is
        ``"default"``; a model is returned as it is.

    Returns
    -------
    HaarDetectorModel
        The model, its checksum and schema verified.

    Raises
    ------
    FacedetectError
        No such file or shipped model; a file that is not a facedetect model, fails its
        checksum or any field's check (one line naming the field).

    See Also
    --------
    Detector : the model with its scan settings, prepared for images.

    Examples
    --------
    >>> model = load_model("default")
    >>> model.window, model.n_stumps > 0
    ((24, 24), True)
    """
    if isinstance(model, HaarDetectorModel):
        return model
    return HaarDetectorModel.load(model_path(model))


def model_path(model: str | os.PathLike | None = None) -> Path:
    """The file a model name or path reads: a shipped model's (unless a file of that name
    is in the working folder), or the path itself.

    Examples
    --------
    >>> model_path("haar").name, model_path("my_model.json").name
    ('haar.json', 'my_model.json')
    """
    if model is not None and not isinstance(model, (str, os.PathLike)):
        raise FacedetectError(f"model must be a shipped model's name, a model file or a "
                              f"HaarDetectorModel, got {_short(model)}")
    name = "default" if model is None else os.fspath(model)
    path = Path(name)
    if name in (*SHIPPED_MODELS, *RETIRED_MODELS) and not path.exists():
        path = shipped_model_path(name)
        if not path.exists():
            raise FacedetectError(f"the shipped model {path} is missing; pass a model file")
    return path


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def find_faces(grey: np.ndarray, model: HaarDetectorModel, params: DetectionParams,
               scanner: LevelScanner, source: str = "image") -> Detections:
    """Faces in grey pixels at a :class:`Detector`'s prepared settings; an image smaller
    than the model's window is refused, naming ``source``."""
    width, height = model.window
    if grey.shape[0] < height or grey.shape[1] < width:
        raise FacedetectError(f"{source}: image is {grey.shape[1]}x{grey.shape[0]}, "
                              f"smaller than the {width}x{height} window")
    smallest = params.min_size / max(width, height)   # min_size bounds the longer side
    if width * smallest > grey.shape[1] + 1e-9 or height * smallest > grey.shape[0] + 1e-9:
        raise FacedetectError(f"{source}: no window fits the {grey.shape[1]}x{grey.shape[0]} "
                              f"picture at min_size {params.min_size} (the smallest side "
                              "a face may have)")
    return detect_faces(grey, model, params, scanner, checked=True)


# Fields whose change needs another scanner: what the scan keeps and how it steps.
_SCANNER_FIELDS = ("threshold", "neighbor_margin", "step")


class Detector:
    """A model and its scan settings, prepared once and applied to image after image:
    OpenCV's ``CascadeClassifier(xml).detectMultiScale`` and scikit-image's
    ``Cascade(xml).detect_multi_scale``, for a facedetect model.

    Parameters
    ----------
    model : str, path, HaarDetectorModel or None
        ``"default"`` (None) for the shipped detector, a model file, or a loaded model.
    exact : bool
        Exact early rejection only: ignore the model's learnt rejection thresholds.
    max_pixels : int or None
        Refuse image files above this many pixels before decoding them.
    verifier : bool
        Run the model's verifier where it has one (False: the one-stage model alone,
        at its own operating point, as ``--no-verifier``).
    **settings
        Scan settings in place of the model's own image operating point
        (:class:`DetectionParams` fields); None keeps the model's. With a verifier,
        ``threshold`` is the verified score's: the proposer scans at its own.

    Attributes
    ----------
    model : HaarDetectorModel
    verifier : Verifier or None
        The model's second look at each face, where it has one and it is wanted.
    scan_model : HaarDetectorModel
        The model as the scan runs it: ``model``, or with a verifier its proposer.
    params : DetectionParams
        The settings the scan uses, checked once.
    verified_threshold : float or None
        The verified score a face must pass (None without a verifier).
    scanner : LevelScanner
        The compiled scan, reused by every call.

    Raises
    ------
    FacedetectError
        As :func:`detect`, when the detector is made (the model and the settings) or
        when an image is read.

    See Also
    --------
    detect : one call, with the prepared detector of each model file cached.
    load_model : the model alone, for its ``decision_function`` on windows.

    Examples
    --------
    >>> from skimage import data
    >>> detector = Detector("default")
    >>> found = detector.detect(data.astronaut())
    >>> len(found) >= 1, [int(v) for v in found.boxes[found.scores.argmax()]]
    (True, [157, 56, 135, 135])
    >>> len(detector.detect(data.astronaut(), threshold=1e6))   # a threshold no face reaches
    0
    """

    def __init__(self, model=None, *, exact: bool = False,
                 max_pixels: int | None = DEFAULT_MAX_PIXELS, verifier: bool = True,
                 **settings):
        for name, value in (("exact", exact), ("verifier", verifier)):
            if not isinstance(value, bool):
                raise FacedetectError(f"{name} must be True or False, got {value!r}")
        self.max_pixels = checked_max_pixels(max_pixels)
        self.model = load_model(model)
        self.exact = exact
        # A verified model scans at its proposer's threshold; a threshold given is the
        # verified score's (what a face must pass at the end).
        self.verifier = self.model.verifier if verifier else None
        self.scan_model = (self.model if self.verifier is None
                           else self.verifier.proposer(self.model))
        self.params = params_for(self.scan_model, **self._scan_settings(settings))
        self.verified_threshold = (None if self.verifier is None else
                                   self._verified_threshold(settings.get("threshold")))
        self.scanner = scanner_for(self.scan_model, self.params, pruning=not exact)

    def _scan_settings(self, settings: dict) -> dict:
        """The settings that go to the scan: with a verifier, all but the threshold."""
        return (settings if self.verifier is None
                else {k: v for k, v in settings.items() if k != "threshold"})

    def _verified_threshold(self, threshold) -> float | None:
        """A verified score's threshold (checked as a scan threshold is), or the
        verifier's own where None."""
        if threshold is None:
            return self.verifier.threshold
        replace(self.params, threshold=threshold).validate()
        return float(threshold)

    def __repr__(self) -> str:
        verified = "" if self.verifier is None else (
            f", verifier={self.verifier.model.n_stumps} stumps at "
            f"{self.verified_threshold:.4g}")
        return (f"Detector(window={self.model.window}, stumps={self.model.n_stumps}, "
                f"exact={self.exact}, params={self.params!r}{verified})")

    def settings(self, **overrides) -> tuple[DetectionParams, LevelScanner]:
        """The settings and scanner of one call: this detector's own where ``overrides``
        change nothing (or are None); a scanner is built anew only where the threshold,
        the neighbour margin or the step change."""
        given = {k: v for k, v in self._scan_settings(overrides).items() if v is not None}
        if not given:
            return self.params, self.scanner
        check_setting_names(given)
        params = replace(self.params, **given)
        params.validate()   # before comparing: an array or NaN is refused, not compared
        changed = {k for k in given if getattr(params, k) != getattr(self.params, k)}
        if not changed:
            return self.params, self.scanner
        if not changed & set(_SCANNER_FIELDS):
            return params, self.scanner
        return params, scanner_for(self.scan_model, params, pruning=not self.exact)

    def detect(self, image, **overrides) -> Detections:
        """Faces in one image.

        Parameters
        ----------
        image : path, PIL.Image.Image or array
            See :func:`grey_pixels`.
        **overrides
            Scan settings for this call only (:class:`DetectionParams` fields).

        Returns
        -------
        Detections
        """
        source = os.fspath(image) if isinstance(image, (str, os.PathLike)) else "image"
        return self.find(grey_pixels(image, self.max_pixels), source, **overrides)

    def find(self, grey: np.ndarray, source: str = "image", **overrides) -> Detections:
        """Faces in grey pixels already read (``detect`` reads the image first): the
        scan, then the verifier's second look where the model has one.

        Parameters
        ----------
        grey : (h, w) uint8 array
        source : str
            The image's name, for a refusal.
        **overrides
            Scan settings for this call only (:class:`DetectionParams` fields); with a
            verifier, ``threshold`` is the verified score's.

        Returns
        -------
        Detections
            With a verifier, each face's score is the proposer's plus the verifier's
            weighted decision.

        Examples
        --------
        >>> detector = Detector("default")
        >>> len(detector.find(np.zeros((48, 48), np.uint8)))   # flat grey: no face
        0
        """
        params, scanner = self.settings(**overrides)
        found = find_faces(grey, self.scan_model, params, scanner, source)
        if self.verifier is None:
            return found
        start = time.perf_counter()
        threshold = overrides.get("threshold")
        verified = self.verifier.verify(grey, found, self.verified_threshold
                                        if threshold is None
                                        else self._verified_threshold(threshold))
        return replace(verified, seconds=found.seconds + time.perf_counter() - start)

    def raw_windows(self, image, limit: int | None = None, **overrides):
        """The windows :meth:`detect` groups, before grouping: every window scoring above
        the scan threshold, at most the ``limit`` best (default: as many as ``detect``
        takes).

        Parameters
        ----------
        image : path, PIL.Image.Image or array
            See :func:`grey_pixels`; an image smaller than the window has no window.
        limit : int, optional
            Windows kept at most.
        **overrides
            Scan settings for this call only.

        Returns
        -------
        rects : (n, 4) int64 array
            ``(x, y, w, h)`` of each window in image pixels.
        scores : (n,) float array
        floor : float
            The score at or below which windows were dropped for ``limit`` (``-inf``:
            none): above it, every window is there.

        Examples
        --------
        >>> from skimage import data
        >>> detector = Detector("default")
        >>> rects, scores, floor = detector.raw_windows(data.astronaut())
        >>> len(rects) > len(detector.detect(data.astronaut())), floor
        (True, -inf)
        """
        params, scanner = self.settings(**overrides)
        grey = np.ascontiguousarray(grey_pixels(image, self.max_pixels), dtype=np.uint8)
        return scan_best(grey, scanner, params, limit)


# Prepared detectors of model files, by path, inode, size and times: a second
# ``detect(path)`` loads nothing. A few models at most are in use at a time.
_DETECTORS: OrderedDict = OrderedDict()
_CACHED_DETECTORS = 8
_DETECTORS_LOCK = threading.Lock()   # detect() may be called from several threads


def cached_detector(model="default", exact: bool = False, verifier: bool = True) -> Detector:
    """The prepared detector of a shipped model or model file (a loaded model: prepared
    now), kept while the file is unchanged."""
    if isinstance(model, HaarDetectorModel):
        return Detector(model, exact=exact, verifier=verifier)
    path = model_path(model)
    try:
        stat = path.stat()
    except OSError:
        return Detector(path, exact=exact, verifier=verifier)   # load_model says what is wrong
    # A file rewritten in place with its size and time kept (cp -p, rsync -t, tar) has
    # another change time, which no copy can set, or another inode.
    key = (str(path.resolve()), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns,
           stat.st_ctime_ns, exact, verifier)
    with _DETECTORS_LOCK:
        found = _DETECTORS.get(key)
        if found is not None:
            _DETECTORS.move_to_end(key)
            return found
    detector = Detector(path, exact=exact, verifier=verifier)   # loaded outside the lock
    with _DETECTORS_LOCK:
        _DETECTORS[key] = detector
        while len(_DETECTORS) > _CACHED_DETECTORS:
            _DETECTORS.popitem(last=False)
    return detector


def detect(image, model="default", *, exact: bool = False,
           max_pixels: int | None = DEFAULT_MAX_PIXELS, verifier: bool = True,
           **overrides) -> Detections:
    """Find faces in an image, as the ``detect`` command does.

    The model file is read once: later calls with the same file (unchanged since) reuse
    its prepared :class:`Detector`. To run over many images, a :class:`Detector` of your
    own does the same without the lookup.

    Parameters
    ----------
    image : path, PIL.Image.Image or array
        See :func:`grey_pixels`.
    model : str, path or HaarDetectorModel
        ``"default"`` (the shipped detector), a model file, or a loaded model.
    exact : bool
        Exact early rejection only: ignore the model's learnt rejection thresholds.
    max_pixels : int or None
        Refuse image files above this many pixels before decoding them.
    verifier : bool
        Run the model's verifier where it has one (False: the one-stage model alone,
        at its own operating point).
    **overrides
        Scan settings in place of the model's own image operating point:
        ``scale_factor``, ``step``, ``min_size``, ``max_size``, ``threshold``,
        ``min_neighbors``, ``neighbor_margin`` (see :class:`DetectionParams`); with a
        verifier, ``threshold`` is the verified score's.

    Returns
    -------
    Detections
        ``boxes`` (n, 4) ``x, y, w, h`` in image pixels, ``scores`` and ``neighbors`` of
        each face, and the windows scanned and seconds taken.

    Raises
    ------
    FacedetectError
        A model file that is missing or fails its checks; an image that cannot be read
        as grey levels (:func:`grey_pixels`) or is smaller than the window; a scan setting
        out of range (``InvalidScanSetting``, also a ``ValueError``).

    See Also
    --------
    Detector : a model prepared once for many images.

    References
    ----------
    .. [1] P. Viola and M. J. Jones, "Robust Real-Time Face Detection", International
       Journal of Computer Vision 57(2), 137-154 (2004),
       doi:10.1023/B:VISI.0000013087.49260.fb.

    Examples
    --------
    >>> from skimage import data
    >>> found = detect(data.astronaut())
    >>> [int(v) for v in found.boxes[found.scores.argmax()]]   # the best: her face
    [157, 56, 135, 135]
    """
    max_pixels = checked_max_pixels(max_pixels)
    if not isinstance(verifier, bool):
        raise FacedetectError(f"verifier must be True or False, got {verifier!r}")
    detector = cached_detector(model, exact, verifier)
    source = os.fspath(image) if isinstance(image, (str, os.PathLike)) else "image"
    return detector.find(grey_pixels(image, max_pixels), source, **overrides)
