"""Propose, then verify: a second boosted model looks again at each face the scan finds.

The scan runs the one-stage model at a permissive threshold (the proposer), so that it
keeps nearly every face; each group's window is then cut from the picture with more
context around it (``context`` window sides, resized to the verifier's window) and scored
by the verifier. A face is kept when ``proposer score + weight * verifier score`` is above
the verifier's threshold, and that sum is its score. A CNN cascade gets its precision the
same way (MTCNN's later networks look again at each candidate); here both looks are
boosted stumps, and the verifier's patch sees the head's outline and hair, which the
24x24 window cuts off. The section's fields: :mod:`facedetect.modelfile._verifier`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np


__all__ = ["Verifier", "context_patches"]


def context_patches(grey: np.ndarray, windows: np.ndarray, context: float,
                    size: int) -> np.ndarray:
    """A ``size`` square cut around each ``(x, y, w, h)`` window, ``context`` times its
    side about its centre (the border reflected where the square passes the picture),
    shrunk by area averaging or enlarged bilinearly.

    Parameters
    ----------
    grey : (h, w) uint8 array
    windows : (n, 4) array_like
        Square windows ``x, y, w, h`` in the picture's pixels.
    context : float
        The patch's side over the window's (1: the window itself).
    size : int
        The patch's side in pixels after resizing.

    Returns
    -------
    (n, size, size) uint8 array

    Examples
    --------
    >>> grey = np.arange(100, dtype=np.uint8).reshape(10, 10)
    >>> bool((context_patches(grey, [[2, 3, 4, 4]], 1.0, 4)[0] == grey[3:7, 2:6]).all())
    True
    >>> context_patches(grey, [[0, 0, 4, 4]], 2.0, 8).shape   # passes the top left corner
    (1, 8, 8)
    """
    windows = np.asarray(windows, np.float64).reshape(-1, 4)
    out = np.empty((len(windows), size, size), np.uint8)
    if not len(windows):
        return out
    x, y, w, h = windows.T
    sides = np.maximum(np.round(w * context), 1).astype(np.int64)
    x0 = np.round(x + w / 2 - sides / 2).astype(np.int64)
    y0 = np.round(y + h / 2 - sides / 2).astype(np.int64)
    pad = int(max(0, (-x0).max(), (-y0).max(), (x0 + sides - grey.shape[1]).max(),
                  (y0 + sides - grey.shape[0]).max()))
    # one reflected copy of the picture for every patch that passes its border
    padded = (cv2.copyMakeBorder(grey, pad, pad, pad, pad, cv2.BORDER_REFLECT_101)
              if pad else grey)
    for k, (left, top, side) in enumerate(zip(x0 + pad, y0 + pad, sides)):
        out[k] = cv2.resize(padded[top:top + side, left:left + side], (size, size),
                            interpolation=cv2.INTER_AREA if side > size
                            else cv2.INTER_LINEAR)
    return out


@dataclass(frozen=True)
class Verifier:
    """A model file's verifier: its model of patches and how its score joins the scan's.

    Attributes
    ----------
    model : HaarDetectorModel
        Scores ``size`` x ``size`` patches.
    context : float
        The patch's side in window sides.
    weight : float
        Its decision's weight beside the proposer's score.
    threshold : float
        A face is kept above this joint score.
    proposer_threshold : float
        The threshold the scan proposes at.
    proposer_rejection : dict or None
        Soft rejection learnt at ``proposer_threshold`` (the detection section's form).
    proposer_scale : float or None
        The pyramid step the scan proposes at (None: the model's own).

    Examples
    --------
    >>> import facedetect
    >>> verifier = facedetect.load_model("default").verifier   # the shipped default's
    >>> verifier.context, verifier.size, verifier.proposer_threshold
    (2.0, 40, 15.0)
    >>> facedetect.load_model("haar").verifier is None   # a one-stage model
    True
    """

    model: "HaarDetectorModel"   # noqa: F821 (the model type of the file read)
    context: float
    weight: float
    threshold: float
    proposer_threshold: float
    proposer_rejection: dict | None
    proposer_scale: float | None = None

    @classmethod
    def from_section(cls, section: dict, model_type) -> "Verifier":
        """The verifier of a checked model file's ``verifier`` section, its model read by
        ``model_type.from_document`` (the model type reads the section; this module does
        not import it)."""
        proposer = section["proposer"]
        return cls(model_type.from_document(section["model"]), float(section["context"]),
                   float(section["weight"]), float(section["threshold"]),
                   float(proposer["threshold"]), proposer.get("rejection"),
                   proposer.get("scale_factor"))

    @property
    def size(self) -> int:
        return self.model.window[0]

    def proposer(self, model):
        """``model`` as the scan that proposes runs it: at the proposer's threshold, with
        the rejection learnt there (none where none was learnt), at its pyramid step
        where it has one."""
        changes = {"threshold": self.proposer_threshold, "rejection": self.proposer_rejection}
        if self.proposer_scale is not None:
            changes["scale_factor"] = float(self.proposer_scale)
        document = dict(model.document, detection={
            k: v for k, v in dict(model.detection, **changes).items() if v is not None})
        return replace(model, document=document)

    def scores(self, grey: np.ndarray, windows: np.ndarray) -> np.ndarray:
        """The verifier's decision on the patch around each window."""
        windows = np.asarray(windows).reshape(-1, 4)
        if not len(windows):
            return np.zeros(0)
        return self.model.decision_function(
            context_patches(grey, windows, self.context, self.size))

    def verify(self, grey: np.ndarray, found, threshold: float | None = None):
        """The proposals of ``found`` (:class:`~._detections.Detections`) whose joint score
        passes ``threshold`` (default: the verifier's own), scored by it: Detections."""
        threshold = self.threshold if threshold is None else float(threshold)
        joint = np.asarray(found.scores, np.float64) + self.weight * self.scores(
            grey, found.windows)
        keep = joint > threshold
        return replace(found, boxes=found.boxes[keep], scores=joint[keep],
                       neighbors=found.neighbors[keep], windows=found.windows[keep])
