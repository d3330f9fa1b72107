"""Multi-scale detection: an image pyramid scanned in strips, grouped, mapped to face boxes
(:mod:`._detections`)."""

from __future__ import annotations

import time
from contextlib import nullcontext
from functools import partial

import cv2
import numpy as np

from .._utils.threads import numba_threads
from ..errors import FacedetectError
from ._detections import Detections, box_mapping, window_to_box
from ._grouping import MAX_WINDOWS, group_rectangles
from ._level_pool import level_threads, ordered_map
from ._params import DetectionParams, check_setting_names
from ._pyramid import Pyramid
from ._scan import REFINE_MARGIN, LevelScanner

STRIP_ROWS = 256
MIN_SCALE = 0.5   # the largest enlargement of the image is 1 / MIN_SCALE


SCAN_FIELDS = ("scale_factor", "step", "min_size", "threshold", "min_neighbors",
               "neighbor_margin", "pyramid")


def params_for(model, **overrides) -> DetectionParams:
    """The scan settings for ``model``: its detection section's (an image operating point,
    or its window operating point with OpenCV's grouping); then every override that is
    not None.

    Parameters
    ----------
    model : HaarDetectorModel
    **overrides
        :class:`DetectionParams` fields.

    Returns
    -------
    DetectionParams
        Checked (:meth:`DetectionParams.validate`).

    Raises
    ------
    InvalidScanSetting
        An override out of range, named (also a ValueError).

    See Also
    --------
    DetectionParams : the settings.
    facedetect.modelfile.detection_section : the model's own.

    Examples
    --------
    >>> class Plain:  # a model without an image operating point, window threshold 1.5
    ...     detection, window_threshold = None, 1.5
    >>> params_for(Plain(), min_neighbors=5)
    DetectionParams(scale_factor=1.1, step='refine', min_size=19, ..., min_neighbors=5, ...)
    """
    # an object without a detection section: the defaults from its own window's size
    settings = {"threshold": float(model.window_threshold),
                "min_size": max(getattr(model, "window", (DetectionParams.min_size,)))}
    if model.detection is not None:
        settings = {name: model.detection[name] for name in SCAN_FIELDS}
    given = {k: v for k, v in overrides.items() if v is not None}
    check_setting_names(given)
    settings.update(given)
    params = DetectionParams(**settings)
    params.validate()
    return params


def step_at(scale: float, params: DetectionParams) -> int:
    """The window stride on a level: ``params.step``, or with ``"auto"`` OpenCV's
    ``detectMultiScale`` rule: 2 pixels while the window is at most twice its trained size,
    then 1. ``"refine"`` (coarse to fine, :meth:`.LevelScanner.scan`) stays as it is."""
    if params.step == "auto":
        return 2 if scale <= 2.0 else 1
    return params.step


def pyramid_scales(width: int, height: int, window, params: DetectionParams):
    """The scales (window size in image pixels / window) to scan, smallest first.

    ``window`` is ``(width, height)`` (or one side of a square): each side must fit the
    image's own side, so a wide window scans a wide image. ``min_size`` and ``max_size``
    bound the window's longer side. A ``min_size`` below the window starts below scale 1:
    those levels are the image enlarged (at most ``1 / MIN_SCALE`` times), for faces
    smaller than the window maps to.

    Examples
    --------
    >>> params = DetectionParams(scale_factor=2.0, min_size=48)
    >>> pyramid_scales(200, 60, (48, 24), params)   # 48x24 fits 200x60 at 1 and 2
    [1.0, 2.0]
    """
    win_w, win_h = (window, window) if np.isscalar(window) else window
    longer = max(win_w, win_h)
    scales = []
    scale = max(MIN_SCALE, min(1.0, params.min_size / longer))
    while True:
        if win_w * scale > width or win_h * scale > height or (
                params.max_size and longer * scale > params.max_size):
            break
        if longer * scale >= params.min_size * (1 - 1e-9) or scale == MIN_SCALE:
            scales.append(scale)
        scale *= params.scale_factor
    return scales


def _scan_levels(grey: np.ndarray, scanner: LevelScanner, params: DetectionParams):
    """Per pyramid level: ``(level image, (sx, sy), xs, ys, scores, windows scanned)``.

    Levels are scanned side by side (:mod:`._level_pool`) and come back in order. With
    ``step="auto"`` the geometry is OpenCV's ``detectMultiScale`` too, so that an
    exported cascade finds the same boxes: the scale as a float32, level sizes and boxes
    rounded from it, ``INTER_LINEAR_EXACT`` resizing, a window at every position that
    fits (the level's last row and column too), and (the scanner's part,
    :func:`scanner_for`) no window of a standard deviation of at most 10 grey levels nor,
    along a row, the one after a window the first stage rejects."""
    height, width = grey.shape
    win_w, win_h = scanner.window
    like_opencv = params.step == "auto"
    levels = []
    for scale in pyramid_scales(width, height, (win_w, win_h), params):
        if like_opencv:
            scale = float(np.float32(scale))
        level_w, level_h = int(round(width / scale)), int(round(height / scale))
        if level_h < win_h or level_w < win_w:
            break
        levels.append((scale, level_w, level_h))
    free = level_threads()
    workers = min(free, len(levels))
    pyramid = None if like_opencv or not levels else Pyramid(
        grey, params.pyramid, smallest=levels[-1][1:])
    # Levels side by side run serial kernels; a level alone runs the parallel ones on the
    # cores left free. All of numba's threads beside a busy core made each parallel call
    # wait for the thread that shares it: mining took 10x its idle time, not 2x.
    scan = partial(_scan_level, grey, scanner, params, like_opencv, pyramid,
                   threads=1 if workers > 1 else free)
    yield from ordered_map(scan, levels, workers)


def _scan_level(grey, scanner: LevelScanner, params: DetectionParams, like_opencv: bool,
                pyramid: Pyramid | None, level_size, threads: int = 1):
    """One level of :func:`_scan_levels`, its parallel kernels on ``threads`` threads
    (1: the serial kernels, on this thread only)."""
    scale, level_w, level_h = level_size
    height, width = grey.shape
    win_w, win_h = scanner.window
    # OpenCV 4 scores the windows on a level's last row and column too (measured with a
    # cascade that accepts every window: tests/test_staging.py).
    window_rows, window_cols = level_h - win_h + 1, level_w - win_w + 1
    if pyramid is not None:
        level = pyramid.level((level_w, level_h))
    else:
        level = grey if (level_w, level_h) == (width, height) else cv2.resize(
            grey, (level_w, level_h), interpolation=cv2.INTER_LINEAR_EXACT)
    step = step_at(scale, params)
    # A refined scan covers the step-1 grid (and evaluates about a quarter of it).
    grid = 1 if step == "refine" else step
    scanned = (-(-window_rows // grid)) * (-(-window_cols // grid))
    with numba_threads(threads) if threads > 1 else nullcontext():
        found = [scanner.scan(level, step, row, min(row + STRIP_ROWS, window_rows),
                              serial=threads == 1)
                 for row in range(0, window_rows, STRIP_ROWS)]
    xs, ys, scores = (np.concatenate([f[k] for f in found]) for k in range(3))
    factors = (scale, scale) if like_opencv else (width / level_w, height / level_h)
    return level, factors, xs, ys, scores, scanned


def scan_raw(grey: np.ndarray, scanner: LevelScanner, params: DetectionParams):
    """All windows above threshold, as integer ``(x, y, w, h)`` in image pixels, with scores."""
    win_w, win_h = scanner.window
    rects, scores, scanned, kept = [], [], 0, 0
    for _, (sx, sy), xs, ys, level_scores, level_scanned in _scan_levels(grey, scanner, params):
        scanned += level_scanned
        kept += len(xs)
        if kept > MAX_WINDOWS:
            # Stop before the windows fill memory: no face needs this many.
            raise FacedetectError(f"more than {MAX_WINDOWS:,} windows score above "
                                  f"{scanner.threshold:g}: the threshold is far below any "
                                  "face's score; raise it")
        if len(xs):
            rects.append(np.column_stack([np.rint(xs * sx), np.rint(ys * sy),
                                          np.full(len(xs), round(win_w * sx)),
                                          np.full(len(xs), round(win_h * sy))]))
            scores.append(level_scores)
    if not rects:
        return np.empty((0, 4), np.int64), np.empty(0), scanned
    return np.vstack(rects).astype(np.int64), np.concatenate(scores), scanned


def scan_best(grey: np.ndarray, scanner: LevelScanner, params: DetectionParams,
              limit: int | None = None):
    """:func:`scan_raw` that keeps the ``limit`` best windows instead of refusing more:
    ``(rects, scores, floor)``, where ``floor`` is the score at or below which windows
    were dropped (``-inf`` if none was). Above the floor the windows are all there: a weak
    model's false alarms can still be counted there."""
    limit = MAX_WINDOWS if limit is None else limit
    win_w, win_h = scanner.window
    rects, scores, kept, floor = [], [], 0, -np.inf
    for _, (sx, sy), xs, ys, level_scores, _ in _scan_levels(grey, scanner, params):
        if len(xs):
            rects.append(np.column_stack([np.rint(xs * sx), np.rint(ys * sy),
                                          np.full(len(xs), round(win_w * sx)),
                                          np.full(len(xs), round(win_h * sy))]))
            scores.append(level_scores)
            kept += len(xs)
        if kept > 2 * limit:   # trimmed now and then, so that the work stays linear
            rects, scores, floor = _best(rects, scores, limit, floor)
            kept = limit
    if not rects:
        return np.empty((0, 4), np.int64), np.empty(0), floor
    rects, scores, floor = _best(rects, scores, limit, floor)
    return rects[0].astype(np.int64), scores[0], floor


def _best(rects: list, scores: list, limit: int, floor: float):
    """The ``limit`` best of the windows so far, as one-element lists, and the new floor."""
    rects, scores = np.vstack(rects), np.concatenate(scores)
    if len(scores) > limit:
        order = np.argsort(scores, kind="stable")[::-1]
        floor = max(floor, float(scores[order[limit]]))
        keep = scores > floor   # ties at the floor go together
        rects, scores = rects[keep], scores[keep]
    return [rects], [scores], floor


def positive_windows(grey: np.ndarray, scanner: LevelScanner, params: DetectionParams):
    """The pixels of every window the detector accepts, as ``(n, h, w)`` uint8 patches
    cut from the pyramid level where it was scanned, and how many windows were scanned: on
    a face-free image, exactly the false positives to add as hard negatives, and the
    denominator of the share of windows the detector accepts (opencv_traincascade's
    acceptance ratio)."""
    win_w, win_h = scanner.window
    patches, scanned = [], 0
    for level, _, xs, ys, _, level_scanned in _scan_levels(grey, scanner, params):
        scanned += level_scanned
        if len(xs):
            # One gather from a strided view: an early stage accepts a good share of
            # the windows, and cutting them one by one in Python took most of its mining.
            view = np.lib.stride_tricks.sliding_window_view(level, (win_h, win_w))
            patches.append(view[np.asarray(ys, np.intp), np.asarray(xs, np.intp)])
    found = np.concatenate(patches) if patches else np.empty((0, win_h, win_w), np.uint8)
    return found, scanned


def scanner_for(model, params: DetectionParams, pruning: bool = True,
                parallel_min_windows: int | None = None) -> LevelScanner:
    """The scanner ``params`` asks for: it keeps every window above the scan threshold.
    A refined scan looks closer around coarse windows within ``REFINE_MARGIN`` of the
    threshold, as without a neighbour margin (or down to the scan threshold if that is
    lower); support windows further down are kept where that finds them.
    ``parallel_min_windows``: see :class:`.LevelScanner`.

    Parameters
    ----------
    model : HaarDetectorModel
    params : DetectionParams
    pruning : bool
        Use the model's learnt rejection thresholds.
    parallel_min_windows : int, optional
        Calls of fewer windows run on the calling thread.

    Returns
    -------
    LevelScanner

    See Also
    --------
    detect_faces : a whole scan.

    Examples
    --------
    >>> import facedetect
    >>> model = facedetect.load_model()
    >>> scanner = scanner_for(model, params_for(model))
    >>> scanner.threshold == params_for(model).threshold
    True
    """
    coarse = min(params.threshold - REFINE_MARGIN, params.scan_threshold)
    return LevelScanner(model, params.scan_threshold, pruning=pruning, coarse_threshold=coarse,
                        parallel_min_windows=parallel_min_windows,
                        like_opencv=params.step == "auto",
                        decision_threshold=params.threshold)


def group_detections(rects: np.ndarray, scores: np.ndarray, threshold: float,
                     min_neighbors: int, neighbor_margin: float = 0.0):
    """Group raw windows with hysteresis: every window scoring above
    ``threshold - neighbor_margin`` is a neighbour (OpenCV's clustering and averaging,
    :func:`.group_rectangles`), and a group is kept when it has more than
    ``min_neighbors`` members and its best window scores above ``threshold``.

    A face draws many windows that score well but not all above the threshold; texture
    draws a few that score high. Counting the near misses as support separates the two
    better than one threshold does. ``neighbor_margin=0`` is OpenCV's rule.
    Returns ``(windows, best scores, member counts)``."""
    keep = scores > threshold - neighbor_margin
    windows, best, counts = group_rectangles(rects[keep], scores[keep], min_neighbors)
    strong = best > threshold
    return windows[strong], best[strong], counts[strong]


def detect_faces(grey: np.ndarray, model, params: DetectionParams | None = None,
                 scanner: LevelScanner | None = None, *, checked: bool = False
                 ) -> Detections:
    """Faces in a uint8 grey image. A ``scanner`` passed in must keep the windows above
    ``params.scan_threshold``.

    Parameters
    ----------
    grey : (h, w) uint8 array
    model : HaarDetectorModel
    params : DetectionParams, optional
        Default: ``DetectionParams()``; :func:`params_for` gives the model's own.
    scanner : LevelScanner, optional
        Reused across images (default: :func:`scanner_for`).
    checked : bool
        ``params`` were validated already (a prepared detector's own).

    Returns
    -------
    Detections

    Raises
    ------
    InvalidScanSetting
        A scan setting out of range (also a ValueError).

    See Also
    --------
    facedetect.Detector : the same scan with the model loaded once.
    params_for : the settings it scans with.

    Examples
    --------
    >>> from skimage import data
    >>> from facedetect.detector._model import HaarDetectorModel
    >>> from facedetect.images import to_grey
    >>> from PIL import Image
    >>> import importlib.resources
    >>> model = HaarDetectorModel.load(
    ...     importlib.resources.files("facedetect") / "models" / "default.json")
    >>> found = detect_faces(to_grey(Image.fromarray(data.astronaut())), model,
    ...                      params_for(model))
    >>> [int(v) for v in found.boxes[found.scores.argmax()]]   # the best: her face
    [157, 57, 138, 138]
    """
    params = params or DetectionParams()
    if not checked:
        params.validate()
    start = time.perf_counter()
    scanner = scanner or scanner_for(model, params)
    rects, scores, scanned = scan_raw(np.ascontiguousarray(grey, dtype=np.uint8), scanner,
                                      params)
    windows, best, counts = group_detections(rects, scores, params.threshold,
                                             params.min_neighbors, params.neighbor_margin)
    return Detections(window_to_box(windows, *box_mapping(model)), best, counts, windows,
                      len(rects), scanned,
                      time.perf_counter() - start)
