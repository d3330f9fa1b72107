"""Whole-image accuracy: detections matched one-to-one to annotated faces at IoU >= 0.5."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import FacedetectError
from .._utils.files import read_bounded
from ._multiscale import DetectionParams, group_detections, scan_raw, window_to_box

IOU_MATCH = 0.5
MAX_ANNOTATION_BYTES = 64 * 2 ** 20
MAX_COORDINATE = 1e6   # pixels; no image is this large


def read_annotations(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """``name x_min y_min x_max y_max`` per line -> {name: (n, 4) x, y, w, h boxes}.

    Parameters
    ----------
    path : str or path
        A UTF-8 text file: one face a line, its image's file name and its box's corners,
        separated by white space. Blank lines are skipped.

    Returns
    -------
    dict of str to (n, 4) float64 array
        The boxes of each image named, ``x, y, w, h``, in the file's order.

    Raises
    ------
    FacedetectError
        A file that cannot be read, is not UTF-8 or holds more than
        ``MAX_ANNOTATION_BYTES``; a line (named by its number) without five fields, with
        a coordinate that is not a number, beyond ``MAX_COORDINATE`` in size or out of
        order (``x_min < x_max``, ``y_min < y_max`` are required), with control characters
        in its name, or with the same image and box as an earlier line.

    See Also
    --------
    evaluation_images : the images with these boxes.
    inside_boxes : the boxes clipped to their image.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "faces.txt"
    ...     _ = path.write_text("a.jpg 10 20 50 70\\na.jpg 100 20 130 60\\n\\nb.png 0 0 8 8\\n")
    ...     boxes = read_annotations(path)
    >>> sorted(boxes), boxes["a.jpg"].tolist()
    (['a.jpg', 'b.png'], [[10.0, 20.0, 40.0, 50.0], [100.0, 20.0, 30.0, 40.0]])
    """
    boxes = defaultdict(list)
    try:
        lines = read_bounded(path, MAX_ANNOTATION_BYTES, "annotations").decode(
            "utf-8-sig").splitlines()   # a byte-order mark is not part of the first name
    except OSError as error:
        raise FacedetectError(f"{path}: cannot read annotations ({error.strerror})") from None
    except UnicodeDecodeError:
        raise FacedetectError(f"{path}: annotations are not UTF-8 text") from None
    expected = ("expected 'name x_min y_min x_max y_max' with x_min < x_max, y_min < y_max, "
                f"each within +-{MAX_COORDINATE:g}")
    seen = set()
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        try:
            if len(parts) != 5:
                raise ValueError
            x0, y0, x1, y1 = (float(v) for v in parts[1:5])
        except ValueError:
            raise FacedetectError(f"{path}:{number}: {expected}") from None
        if not parts[0].isprintable():
            raise FacedetectError(f"{path}:{number}: the image name {parts[0]!r} holds "
                                  "control characters")
        if not (np.isfinite([x0, y0, x1, y1]).all() and x0 < x1 and y0 < y1
                and max(abs(x0), abs(y0), abs(x1), abs(y1)) <= MAX_COORDINATE):
            raise FacedetectError(f"{path}:{number}: {expected}")
        if (parts[0], x0, y0, x1, y1) in seen:
            # Counted twice, a face could only ever be half found.
            raise FacedetectError(f"{path}:{number}: the same box twice for {parts[0]}")
        seen.add((parts[0], x0, y0, x1, y1))
        boxes[parts[0]].append((x0, y0, x1 - x0, y1 - y0))
    return {name: np.array(b, dtype=np.float64) for name, b in boxes.items()}


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of every box of ``a`` with every box of ``b`` (x, y, w, h).

    Parameters
    ----------
    a : (n, 4) array_like
        Boxes ``x, y, w, h``.
    b : (m, 4) array_like
        Boxes ``x, y, w, h``.

    Returns
    -------
    (n, m) float64 array
        The IoU of ``a[i]`` with ``b[j]`` at ``[i, j]``; 0 where both boxes are empty.

    See Also
    --------
    match : detections matched to faces by it.

    Examples
    --------
    >>> iou_matrix([[0, 0, 10, 10]], [[0, 0, 10, 10], [5, 0, 10, 10], [20, 20, 5, 5]])
    array([[1.        , 0.33333333, 0.        ]])
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    left = np.maximum(a[:, None, 0], b[None, :, 0])
    top = np.maximum(a[:, None, 1], b[None, :, 1])
    right = np.minimum(a[:, None, 0] + a[:, None, 2], b[None, :, 0] + b[None, :, 2])
    bottom = np.minimum(a[:, None, 1] + a[:, None, 3], b[None, :, 1] + b[None, :, 3])
    inter = np.clip(right - left, 0, None) * np.clip(bottom - top, 0, None)
    union = (a[:, 2] * a[:, 3])[:, None] + (b[:, 2] * b[:, 3])[None] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def match(detections: np.ndarray, scores: np.ndarray, truth: np.ndarray) -> int:
    """Faces found: detections taken by descending score, each taking the free face of
    highest IoU if it is at least 0.5.

    Parameters
    ----------
    detections : (n, 4) array
        Detected boxes ``x, y, w, h``.
    scores : (n,) array
        Their scores: the order they take faces in (ties in the given order).
    truth : (m, 4) array
        The annotated faces ``x, y, w, h``.

    Returns
    -------
    int
        The faces matched, each to one detection (``IOU_MATCH``); the other detections
        are false positives.

    See Also
    --------
    iou_matrix : the overlaps it matches by.

    Examples
    --------
    >>> truth = np.array([[0, 0, 10, 10], [50, 50, 10, 10]])
    >>> detections = np.array([[1, 1, 10, 10], [0, 0, 10, 10], [100, 100, 5, 5]])
    >>> match(detections, np.array([1.0, 2.0, 3.0]), truth)   # two boxes on one face
    1
    """
    if len(detections) == 0 or len(truth) == 0:
        return 0
    overlap = iou_matrix(detections, truth)
    taken = np.zeros(len(truth), dtype=bool)
    found = 0
    for d in np.argsort(-np.asarray(scores), kind="stable"):
        candidates = np.where(taken, -1.0, overlap[d])
        best = int(np.argmax(candidates))
        if candidates[best] >= IOU_MATCH:
            taken[best] = True
            found += 1
    return found


def inside_boxes(path: str | os.PathLike, truth: np.ndarray, shape: tuple[int, int]
                 ) -> np.ndarray:
    """The annotated faces of an image, clipped to it.

    Real annotation sets hold faces the border cuts (a close-up whose box reaches past two
    edges): such a box is clipped to the image, with one warning for the whole run. A box
    wholly outside its image can never be found: it is named in a warning and skipped.

    Parameters
    ----------
    path : str or path
        The image: its file name is named in warnings.
    truth : (n, 4) float array
        Its annotated faces ``x, y, w, h``.
    shape : (height, width)
        The image's size in pixels.

    Returns
    -------
    (k, 4) float array
        The faces that overlap the image, clipped to it, in the order of ``truth``.

    Warns
    -----
    UserWarning
        For each face wholly outside the image, and (once, under Python's default
        warning filter) where faces were clipped.

    See Also
    --------
    read_annotations : the faces of each image.

    Examples
    --------
    >>> import warnings
    >>> truth = np.array([[-5.0, 10.0, 20.0, 20.0], [200.0, 0.0, 10.0, 10.0]])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     boxes = inside_boxes("photo.jpg", truth, (100, 150))
    >>> boxes.tolist(), len(caught)   # the second face lies right of the 150 columns
    ([[0.0, 10.0, 15.0, 20.0]], 2)
    """
    import warnings
    height, width = shape
    x0 = np.clip(truth[:, 0], 0, width)
    y0 = np.clip(truth[:, 1], 0, height)
    x1 = np.clip(truth[:, 0] + truth[:, 2], 0, width)
    y1 = np.clip(truth[:, 1] + truth[:, 3], 0, height)
    outside = (x1 <= x0) | (y1 <= y0)
    for x, y, w, h in truth[outside]:
        warnings.warn(f"{Path(path).name}: the annotated face ({x:g}, {y:g}, {x + w:g}, "
                      f"{y + h:g}) lies wholly outside the {width}x{height} image; skipped")
    clipped = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)[~outside]
    if (clipped != truth[~outside]).any():
        warnings.warn("annotated face boxes that reach past their image's border are "
                      "clipped to the image")
    return clipped


def near_misses(results, threshold: float, min_neighbors: int, scale: float, shift: float,
                neighbor_margin: float = 0.0, low: float = 0.2) -> tuple[int, int]:
    """``(false positives overlapping a face at IoU in [low, 0.5), detections)``: many
    near misses mean boxes of another convention (tight face-only boxes) than the
    detector's, not a detector that misses."""
    near = detections = 0
    for result in results:
        windows, best, _ = group_detections(result.raw_rects, result.raw_scores, threshold,
                                            min_neighbors, neighbor_margin)
        boxes = window_to_box(windows, scale, shift)
        detections += len(boxes)
        if len(boxes) and len(result.truth):
            overlap = iou_matrix(boxes, result.truth).max(axis=1)
            near += int(((overlap >= low) & (overlap < IOU_MATCH)).sum())
    return near, detections


@dataclass
class ImageResult:
    name: str
    raw_rects: np.ndarray
    raw_scores: np.ndarray
    truth: np.ndarray
    seconds: float


def summarize(results, threshold: float, min_neighbors: int, scale: float, shift: float,
              neighbor_margin: float = 0.0):
    """(faces found, false positives, total faces) over all images at one setting."""
    found = false_positives = total = 0
    for result in results:
        windows, best, _ = group_detections(result.raw_rects, result.raw_scores, threshold,
                                            min_neighbors, neighbor_margin)
        boxes = window_to_box(windows, scale, shift)
        hits = match(boxes, best, result.truth)
        found += hits
        false_positives += len(boxes) - hits
        total += len(result.truth)
    return found, false_positives, total


def evaluation_images(images_dir: str | os.PathLike, annotations: dict[str, np.ndarray]
                      ) -> list[tuple[Path, np.ndarray]]:
    """Every image of ``images_dir`` with its annotated faces, sorted by name.

    An image the annotations do not name is face-free: whatever is detected there is a
    false positive (the MIT+CMU sets include such images, and a detector that fires on
    them must pay for it). An annotated name with no image is an error.

    Parameters
    ----------
    images_dir : str or path
        A folder of images (named by their suffix; sub-folders are not searched).
    annotations : dict of str to (n, 4) array
        The faces of each image by file name, as :func:`read_annotations` gives them.

    Returns
    -------
    list of (Path, (n, 4) array)
        Each image with its faces (an empty ``(0, 4)`` array where none is annotated).

    Raises
    ------
    FacedetectError
        ``images_dir`` is no folder or holds no images, or an annotated name has no
        image there.

    See Also
    --------
    read_annotations : the annotations.
    inside_boxes : the faces clipped to their image.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import cv2
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     for name in ("b.png", "a.png"):
    ...         _ = cv2.imwrite(str(Path(folder) / name), np.zeros((32, 32), np.uint8))
    ...     images = evaluation_images(folder, {"b.png": np.array([[4.0, 4.0, 20.0, 20.0]])})
    >>> [(path.name, faces.shape) for path, faces in images]
    [('a.png', (0, 4)), ('b.png', (1, 4))]
    """
    from ..images import expand_inputs
    files = expand_inputs([images_dir]) if Path(images_dir).is_dir() else []
    if not files:
        raise FacedetectError(f"{images_dir}: no images found")
    missing = sorted(set(annotations) - {path.name for path in files})
    if missing:
        raise FacedetectError(f"{images_dir}: no image for {len(missing)} annotated "
                              f"name(s), e.g. {missing[0]}")
    empty = np.empty((0, 4), np.float64)
    return [(path, annotations.get(path.name, empty)) for path in files]


def scan_dataset(images, scanner, params: DetectionParams, read_grey,
                 progress=None) -> list[ImageResult]:
    """Raw windows (above the scanner's threshold) of every ``(path, faces)`` image."""
    import time
    results = []
    for path, truth in (progress(images) if progress else images):
        grey = read_grey(path)
        truth = inside_boxes(path, truth, grey.shape)
        start = time.perf_counter()
        rects, scores, _ = scan_raw(grey, scanner, params)
        results.append(ImageResult(path.name, rects, scores, truth,
                                   time.perf_counter() - start))
    return results


def opencv_baseline(images, read_grey, cascade_name: str,
                    scale_factor=1.1, min_neighbors=3, min_size=19):
    """Faces found and false positives of one of OpenCV's shipped cascades."""
    import time

    import cv2
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + cascade_name)
    if cascade.empty():
        raise FacedetectError(f"OpenCV cascade {cascade_name} not found")
    found = false_positives = total = 0
    seconds = 0.0
    for path, truth in images:
        grey = read_grey(path)
        truth = inside_boxes(path, truth, grey.shape)
        start = time.perf_counter()
        boxes = cascade.detectMultiScale(grey, scaleFactor=scale_factor,
                                         minNeighbors=min_neighbors,
                                         minSize=(min_size, min_size))
        seconds += time.perf_counter() - start
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        hits = match(boxes, np.zeros(len(boxes)), truth)
        found += hits
        false_positives += len(boxes) - hits
        total += len(truth)
    return {"cascade": cascade_name, "found": found, "faces": total,
            "tpr": found / total if total else float("nan"),
            "false_positives": false_positives, "seconds": seconds}
