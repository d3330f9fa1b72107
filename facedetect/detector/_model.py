"""A trained Haar-feature detector: the stumps, their rectangles, and window scoring.

Training works on the full pool's feature matrix; a saved detector keeps only the features
its stumps use, so scoring a window computes a few hundred rectangle sums instead of
63,960 features.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..haar import integral_image, squared_integral_image
from ..haar._features import corner_weights
from ..haar._channels import stack_channel_integrals
from ..haar._integral import normalization_factors, tilted_integral_image
from ..modelfile._io import calibrated_probability, load_document, reseal, save_document


@dataclass
class HaarDetectorModel:
    """A boosted stump classifier on Haar features of a fixed window.

    Attributes
    ----------
    window : (width, height)
    rects : list per stump of ``(x, y, w, h, weight)`` rectangles
    thresholds, polarities, alphas : arrays, one entry per stump
    cost : (Cp, Cn) it was trained for
    document : the full model file content (metadata, split, diagnostics)

    See Also
    --------
    facedetect.load_model : load one by name or path.
    facedetect.Detector : scan whole images with it.

    Examples
    --------
    >>> import importlib.resources
    >>> model = HaarDetectorModel.load(
    ...     importlib.resources.files("facedetect") / "models" / "default.json")
    >>> model.window, model.n_stumps, model.cost
    ((24, 24), 1500, (1.0, 10.0))
    >>> windows = np.full((2, 24, 24), 128, np.uint8)
    >>> model.decision_function(windows).shape
    (2,)
    """

    window: tuple[int, int]
    rects: list
    thresholds: np.ndarray
    polarities: np.ndarray
    alphas: np.ndarray
    cost: tuple[float, float]
    normalize: bool
    document: dict

    @property
    def n_stumps(self) -> int:
        return len(self.alphas)

    def __repr__(self) -> str:
        # the document holds every rectangle and training file name: not for a REPL
        stages = f", stages={len(self.stages)}" if self.stages else ""
        return (f"HaarDetectorModel(window={self.window}, stumps={self.n_stumps}, "
                f"cost={self.cost}{stages}, window_threshold={self.window_threshold:.4g})")

    @functools.cached_property
    def tilted(self) -> np.ndarray:
        """(n_stumps,) bool: which stumps' features are tilted (``features.tilted`` of
        the file; a file without it has none)."""
        marks = self.document.get("features", {}).get("tilted")
        return (np.zeros(self.n_stumps, bool) if marks is None
                else np.asarray(marks, dtype=bool))

    @functools.cached_property
    def channels(self) -> np.ndarray:
        """(n_stumps,) int: the gradient channel a stump's channel feature sums over
        (``features.channels`` of the file), -1 for a Haar feature (a file without it has
        none)."""
        marks = self.document.get("features", {}).get("channels")
        return (np.full(self.n_stumps, -1, np.int64) if marks is None
                else np.asarray(marks, dtype=np.int64))

    @functools.cached_property
    def _gathers(self) -> dict:
        return {}

    def gathers(self, start: int = 0, stop: int | None = None) -> tuple:
        """Where the corners of stumps ``start:stop`` lie in the integral images that
        :func:`haar_values` stacks for them (:func:`corner_gathers`), worked out once per
        model: the verifier scores a few patches per picture."""
        stop = self.n_stumps if stop is None else stop
        if (start, stop) not in self._gathers:
            self._gathers[start, stop] = corner_gathers(
                self.rects[start:stop], self.window, self.tilted[start:stop],
                self.channels[start:stop])
        return self._gathers[start, stop]

    @functools.cached_property
    def framing(self) -> float:
        """How many eye distances wide the window frames a face (what the box mapping
        follows)."""
        return float(self.document["detection"]["framing"])

    @functools.cached_property
    def stages(self) -> list[tuple[int, float]] | None:
        """An attentional cascade's ``(stumps, threshold)`` per stage, or None for a
        one-stage detector. A window passes a stage when the sum of that stage's stumps
        exceeds its threshold, and is a detection when it passes them all. Read once: a
        loop over 100,000 stages that asked for it again each time took hours."""
        found = self.document["detection"].get("stages")
        return None if not found else [(int(st["stumps"]), float(st["threshold"]))
                                       for st in found]

    @functools.cached_property
    def _stage_ends(self) -> np.ndarray:
        counts = [n for n, _ in self.stages] if self.stages else [self.n_stumps]
        return np.cumsum(counts) - 1

    def stage_ends(self) -> np.ndarray:
        """Index of the last stump of every stage (one stage: the last stump)."""
        return self._stage_ends

    @property
    def rejection(self):
        """``(reference, thresholds)`` of learnt rejection (see :mod:`._pruning`), or None."""
        found = self.document["detection"].get("rejection")
        return None if not found else (float(found["reference"]),
                                       np.array(found["thresholds"], dtype=np.float64))

    def with_rejection(self, face_windows: np.ndarray, reference: float = 0.0, *,
                       threshold: float | None = None, max_loss: float = 0.0):
        """A copy carrying rejection thresholds learnt from ``face_windows`` (training
        faces); unchanged if no face passes ``reference``. With ``threshold`` and a
        ``max_loss`` above 0, soft rejection: see
        :func:`~facedetect.detector._pruning.soft_rejection_thresholds`."""
        from ._pruning import rejection_thresholds, soft_rejection_thresholds
        record = {"reference": float(reference)}
        if threshold is not None and max_loss > 0:
            found = soft_rejection_thresholds(self, face_windows, threshold, max_loss,
                                              reference)
            if found is None:
                return self
            thresholds, quantile, loss = found
            record.update(quantile=quantile, max_loss=float(max_loss), loss=round(loss, 6),
                          at_threshold=float(threshold))
        else:
            thresholds = rejection_thresholds(self, face_windows, reference)
            if thresholds is None:
                return self
        return self.with_detection({"rejection": dict(
            record, thresholds=[float(v) for v in thresholds])})

    def with_detection(self, changes: dict):
        """A copy whose ``detection`` section has ``changes`` (an image operating point,
        rejection thresholds, stages) over its own."""
        return self.with_sections(detection=changes)

    def with_training(self, changes: dict):
        """A copy whose ``training`` record has ``changes`` over its own."""
        return self.with_sections(training=changes)

    def with_sections(self, **changes: dict):
        """A copy whose named sections (``detection``, ``training``, ``operating_point``)
        have the given changes over their own, sealed once."""
        # The stumps, rectangles and window do not change: the copy shares them, and its
        # document differs in the named sections (no section is changed in place).
        import copy
        import dataclasses

        document = dict(self.document)
        for name, change in changes.items():
            document[name] = dict(document.get(name) or {}, **copy.deepcopy(change))
        return dataclasses.replace(self, document=reseal(document))

    def one_stage(self):
        """The model without its verifier (itself where it has none): the proposer's
        source, and what ``export-opencv`` writes."""
        if "verifier" not in self.document:
            return self
        import dataclasses
        document = {k: v for k, v in self.document.items() if k != "verifier"}
        return dataclasses.replace(self, document=reseal(document))

    @functools.cached_property
    def verifier(self):
        """The model file's :class:`~facedetect.detector._verifier.Verifier`, or None (a
        one-stage model)."""
        from ._verifier import Verifier
        section = self.document.get("verifier")
        return None if section is None else Verifier.from_section(section, type(self))

    @property
    def detection(self) -> dict:
        """Everything the detector reads besides the stumps' features (the model file's
        ``detection`` section, :mod:`facedetect.modelfile._detection`): window, framing, box
        mapping, scan settings, and stages and rejection where the model has them."""
        return self.document["detection"]

    @property
    def calibration(self) -> dict:
        """How the operating points for pictures were chosen (the model file's
        ``calibration`` section, :mod:`facedetect.modelfile._calibration`): ``image`` and
        ``opencv`` records, empty where none was chosen. Provenance: no scan reads it."""
        return self.document.get("calibration") or {}

    @property
    def image_point(self) -> dict | None:
        """The detection section where its threshold and grouping were chosen on negative
        pictures at training (:mod:`facedetect.detector._calibrate`), else None (it scans
        at the window operating point)."""
        detection = self.document["detection"]
        return detection if detection["applies_to"] == "images" else None

    @property
    def operating_point(self) -> dict | None:
        """The window operating point chosen at training (see
        :mod:`facedetect.training._operating_point`), or None for a model without one."""
        return self.document.get("operating_point")

    @property
    def window_threshold(self) -> float:
        """The decision threshold on windows (:meth:`predict`, ``evaluate-detector``): the
        window operating point's; for a cascade, its last stage's; else the raw 0. Not the
        threshold ``detect`` scans photographs at: that is :attr:`image_threshold`."""
        point = self.operating_point
        if point is not None:
            return float(point["threshold"])
        return self.stages[-1][1] if self.stages else 0.0

    @property
    def image_threshold(self) -> float:
        """The threshold ``detect`` scans photographs at by default: the image operating
        point's (chosen on negative pictures at training), else the window threshold."""
        return float(self.detection["threshold"])

    @property
    def threshold(self) -> float:
        """The old name of :attr:`window_threshold` (warns; goes in the next release)."""
        import warnings
        warnings.warn("HaarDetectorModel.threshold is the window threshold: read "
                      "window_threshold (image_threshold is the one detect scans at); the "
                      "old name goes in the next release", FutureWarning, stacklevel=2)
        return self.window_threshold

    def predict_proba(self, windows: np.ndarray) -> np.ndarray:
        """P(face) of each window from the stored calibration map.

        Parameters
        ----------
        windows : (n, height, width) uint8 array
            Windows of the model's size.

        Returns
        -------
        (n,) float array
            The calibrated probability of a face, from the map fitted on the
            calibration windows at training (``operating_point.calibration``).

        Raises
        ------
        FacedetectError
            A model trained without a calibration map.

        Examples
        --------
        >>> import importlib.resources
        >>> model = HaarDetectorModel.load(
        ...     importlib.resources.files("facedetect") / "models" / "default.json")
        >>> p = model.predict_proba(np.full((2, 24, 24), 128, np.uint8))
        >>> p.shape, bool(((0 <= p) & (p <= 1)).all())
        ((2,), True)
        """
        point = self.operating_point
        if point is None or point.get("calibration") is None:
            from ..errors import FacedetectError
            raise FacedetectError("this model has no calibration map (train with "
                                  "--calibration sigmoid or isotonic)")
        return calibrated_probability(point["calibration"], self.decision_function(windows))

    @classmethod
    def from_document(cls, document: dict) -> "HaarDetectorModel":
        features = document.get("features", {"kind": "matrix"})
        if features.get("kind") != "haar":
            from ..errors import FacedetectError
            raise FacedetectError("this model was not trained on Haar features; it cannot "
                                  "scan images")
        stumps, window = document["stumps"], document["detection"]["window"]
        return cls((window[0], window[1]),
                   [[tuple(r) for r in feature] for feature in features["rects"]],
                   np.array([s["threshold"] for s in stumps], dtype=np.float64),
                   np.array([s["polarity"] for s in stumps], dtype=np.int8),
                   np.array([s["alpha"] for s in stumps], dtype=np.float64),
                   tuple(document["cost"]), features["normalization"] == "opencv-variance",
                   document)

    @classmethod
    def load(cls, path) -> "HaarDetectorModel":
        """A model file read, its checksum and every field checked.

        Parameters
        ----------
        path : path
            A facedetect model file (JSON).

        Returns
        -------
        HaarDetectorModel

        Raises
        ------
        FacedetectError
            A missing file, or one that is not a sound facedetect model (one line).

        See Also
        --------
        facedetect.load_model : the same, by path or by a shipped model's name.
        """
        return cls.from_document(load_document(path))

    def save(self, path):
        """Write the model atomically as JSON, with a fresh checksum.

        Parameters
        ----------
        path : path
            Where to write (its folder must exist).

        Returns
        -------
        pathlib.Path

        Examples
        --------
        >>> import importlib.resources, tempfile
        >>> from pathlib import Path
        >>> model = HaarDetectorModel.load(
        ...     importlib.resources.files("facedetect") / "models" / "default.json")
        >>> copy = HaarDetectorModel.load(model.save(Path(tempfile.mkdtemp()) / "m.json"))
        >>> copy.n_stumps == model.n_stumps
        True
        """
        return save_document(path, self.document)

    def feature_values(self, windows: np.ndarray) -> np.ndarray:
        """(n_windows, n_stumps) float32 values of the stumps' features, normalised as in
        training (raw sum times float32(1/nf))."""
        return haar_values(windows, self.rects, self.window, self.normalize, self.tilted,
                           self.channels, self.gathers())

    def running_scores(self, windows: np.ndarray) -> np.ndarray:
        """(n_windows, n_stumps): the score after each stump, added stump by stump in the
        scanner's order, so a window scores bit for bit what the scanner gives it. In a
        cascade each stage's sum starts from zero."""
        values = self.feature_values(windows)
        votes = self.alphas * self.polarities.astype(np.float64)
        outputs = np.where(values > self.thresholds, votes, -votes)
        scores = np.empty_like(outputs)
        running = np.zeros(len(outputs))
        ends = set(self.stage_ends().tolist())
        for t in range(self.n_stumps):
            running = running + outputs[:, t]
            scores[:, t] = running
            if t in ends:
                running = np.zeros(len(outputs))
        return scores

    def stage_sums(self, windows: np.ndarray, stage: int) -> np.ndarray:
        """The sum of one cascade stage's stumps on each window, added in the scanner's
        order (bit for bit :meth:`running_scores` at the stage's end)."""
        ends = self.stage_ends()
        start, stop = (ends[stage - 1] + 1 if stage else 0), ends[stage] + 1
        values = haar_values(windows, self.rects[start:stop], self.window, self.normalize,
                             self.tilted[start:stop], self.channels[start:stop],
                             self.gathers(start, stop))
        votes = self.alphas[start:stop] * self.polarities[start:stop].astype(np.float64)
        outputs = np.where(values > self.thresholds[start:stop], votes, -votes)
        running = np.zeros(len(outputs))
        for t in range(stop - start):
            running = running + outputs[:, t]
        return running

    def decision_function(self, windows: np.ndarray) -> np.ndarray:
        """``sum_t alpha_t h_t``, as the scanner adds it (see :meth:`running_scores`). For a
        cascade, the last stage's sum, and -inf for a window an earlier stage rejects: a
        stage is scored only on the windows every earlier one passed.

        Parameters
        ----------
        windows : (n, height, width) uint8 array
            Windows of the model's size (``window`` is width, height).

        Returns
        -------
        (n,) float array
            Each window's score; above :attr:`threshold` is a face.

        Raises
        ------
        ValueError
            Windows of another size.

        Examples
        --------
        >>> import importlib.resources
        >>> model = HaarDetectorModel.load(
        ...     importlib.resources.files("facedetect") / "models" / "default.json")
        >>> model.decision_function(np.zeros((3, 24, 24), np.uint8)).shape
        (3,)
        """
        if not self.stages:
            return self.running_scores(windows)[:, -1]
        windows = np.asarray(windows)
        final = np.full(len(windows), -np.inf)
        alive = np.arange(len(windows))
        for stage, (_, threshold) in enumerate(self.stages):
            sums = self.stage_sums(windows[alive], stage)
            if stage == len(self.stages) - 1:
                final[alive] = sums
            else:
                alive = alive[sums > threshold]
        return final

    def predict(self, windows: np.ndarray, threshold: float | None = None) -> np.ndarray:
        """1 where the score exceeds ``threshold`` (default: the model's operating point).

        Parameters
        ----------
        windows : (n, height, width) uint8 array
        threshold : float, optional
            Default: :attr:`threshold`, the window operating point chosen at training.

        Returns
        -------
        (n,) int8 array of 0 and 1

        Examples
        --------
        >>> import importlib.resources
        >>> model = HaarDetectorModel.load(
        ...     importlib.resources.files("facedetect") / "models" / "default.json")
        >>> model.predict(np.zeros((2, 24, 24), np.uint8)).tolist()   # flat grey: no face
        [0, 0]
        """
        threshold = self.window_threshold if threshold is None else threshold
        return (self.decision_function(windows) > threshold).astype(np.int8)


def haar_values(windows: np.ndarray, features, window, normalize: bool = True,
                tilted=None, channels=None, gathers: tuple | None = None) -> np.ndarray:
    """(n_windows, n_features) float32 values of Haar features (each a list of ``(x, y, w,
    h, weight)`` rectangles, summed over the tilted integral image where ``tilted`` marks
    them, over gradient channel ``channels[t]`` where it is not -1) on ``windows``, exactly
    as the scanner computes them: integer rectangle sums weighted and added in float32,
    times float32(1/nf). ``gathers``: :func:`corner_gathers` of the features, where the
    caller keeps them."""
    windows = np.asarray(windows)
    width, height = window
    if windows.ndim != 3 or windows.shape[1:] != (height, width):
        raise ValueError(f"windows must have shape (N, {height}, {width})")
    tilted = np.zeros(len(features), bool) if tilted is None else np.asarray(tilted, bool)
    channels = (np.full(len(features), -1) if channels is None
                else np.asarray(channels, np.int64))
    ii = integral_image(windows)
    block = (height + 1) * (width + 1)
    blocks = [ii.reshape(len(windows), block)]   # one row of every table a feature reads
    if tilted.any():
        blocks.append(tilted_integral_image(windows).reshape(len(windows), block))
    if (channels >= 0).any():
        blocks.append(stack_channel_integrals(windows))
    tables = np.concatenate(blocks, axis=1) if len(blocks) > 1 else blocks[0]
    corners, signs, weights = (corner_gathers(features, window, tilted, channels)
                               if gathers is None else gathers)
    values = np.zeros((len(windows), len(features)), dtype=np.float32)
    # a block of features at a time: each gather is (windows, block) int64
    step = max(1, GATHER_ELEMENTS // max(len(windows), 1))
    for lo in range(0, len(features), step):
        hi = min(lo + step, len(features))
        total = values[:, lo:hi]
        for k in range(corners.shape[0]):   # rectangle by rectangle, as the scanner adds
            sums = sum(signs[k, c, lo:hi] * tables[:, corners[k, c, lo:hi]]
                       for c in range(4))
            total += weights[k, lo:hi] * sums.astype(np.float32)
    if normalize:
        nf = normalization_factors(ii, squared_integral_image(windows), width, height)
        values *= (1.0 / nf).astype(np.float32)[:, None]
    return values


GATHER_ELEMENTS = 1 << 22   # about 32 MiB of int64 per gathered corner


def corner_gathers(features, window, tilted: np.ndarray, channels: np.ndarray):
    """``(corners, signs, weights)``, each ``(rectangles, 4 corners, features)`` (weights
    ``(rectangles, features)`` float32): where each rectangle's corners lie in the row
    of tables :func:`haar_values` stacks (the upright integral image, then the tilted one
    where any feature is tilted, then the seven channels'), with their signs and the
    rectangle's weight. A feature with fewer rectangles has weight 0 in the rest.

    Examples
    --------
    >>> corners, signs, weights = corner_gathers([[(0, 0, 1, 1, 1.0)]], (2, 2),
    ...                                          np.zeros(1, bool), np.full(1, -1))
    >>> corners[0, :, 0].tolist(), signs[0, :, 0].tolist()   # 3x3 integral image
    ([0, 1, 3, 4], [1, -1, -1, 1])
    """
    width, height = window
    block = (height + 1) * (width + 1)
    first_channel = 1 + bool(np.any(tilted))
    n_rects = max((len(f) for f in features), default=1)
    corners = np.zeros((n_rects, 4, len(features)), np.int64)
    signs = np.zeros((n_rects, 4, len(features)), np.int64)
    weights = np.zeros((n_rects, len(features)), np.float32)
    for t, feature in enumerate(features):
        table = (1 if tilted[t] else 0) if channels[t] < 0 else first_channel + channels[t]
        for k, rect in enumerate(feature):
            for c, (cx, cy, sign) in enumerate(corner_weights(rect, bool(tilted[t]))):
                if not (0 <= cx <= width and 0 <= cy <= height):
                    raise ValueError(f"feature {t} reaches outside the {width}x{height} "
                                     "window")
                corners[k, c, t] = table * block + cy * (width + 1) + cx
                signs[k, c, t] = sign
            weights[k, t] = rect[4]
    return corners, signs, weights
