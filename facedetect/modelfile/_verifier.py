"""The model file's ``verifier`` section: a second model that looks again at each face the
scan proposes (propose, then verify).

A verified model file is the one-stage model as it was (its stumps, detection section and
operating points: what ``--no-verifier`` and ``export-opencv`` use) plus this section:

- ``proposer``: the scan's permissive ``threshold``, the soft ``rejection`` learnt at
  it and, where given, its pyramid's ``scale_factor``, which replace the detection
  section's when the verifier runs (a coarser pyramid proposes in less time, and the
  verifier's patch frames each face again);
- ``context``: the side of the patch cut around each proposed window, in window sides;
- ``model``: a whole model document (checked as a model file is) scoring those patches;
- ``weight`` and ``threshold``: a face is kept when its proposer score plus ``weight``
  times the verifier's decision is above ``threshold``;
- ``training``: how it was trained and its operating point chosen (free-form record).
"""

from __future__ import annotations

from ._fields import MAX_THRESHOLD, SCAN_LIMITS, fail, is_finite

SECTION_FIELDS = {"proposer", "context", "model", "weight", "threshold", "training"}
MAX_CONTEXT = 4.0      # a patch of four window sides already holds the shoulders
MAX_WEIGHT = 1e3
VERIFIER_WINDOWS = (8, 128)   # the verifier's square patch, in pixels


def check_verifier(path, verifier, n_stumps: int, check_model) -> None:
    """Refuse a ``verifier`` section that is not sound, in one line naming its field.

    Parameters
    ----------
    path : path or str
        The file's name, for the message.
    verifier : object
        The section (untrusted).
    n_stumps : int
        The one-stage model's stumps (the proposer's rejection has one threshold each).
    check_model : callable
        ``check_model(document, path)``: the model file's own check, for the nested model.

    Raises
    ------
    FacedetectError

    Examples
    --------
    >>> check_verifier("m.json", {"context": 1.4}, 10, None)
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: m.json: invalid model file: verifier must hold ...
    """
    from ._detection import _check_rejection
    if not isinstance(verifier, dict) or set(verifier) != SECTION_FIELDS:
        fail(path, f"verifier must hold {', '.join(sorted(SECTION_FIELDS))}")
    proposer = verifier["proposer"]
    proposer_fields = {"threshold", "rejection", "scale_factor"}
    if not (isinstance(proposer, dict) and set(proposer) <= proposer_fields
            and is_finite(proposer.get("threshold"), -MAX_THRESHOLD, MAX_THRESHOLD)):
        fail(path, "verifier.proposer must hold a finite threshold (and rejection, "
                   "scale_factor)")
    scale_limits = SCAN_LIMITS["scale_factor"][1:3]
    if "scale_factor" in proposer and not is_finite(proposer["scale_factor"], *scale_limits):
        fail(path, "verifier.proposer.scale_factor must be a number in "
                   "[{0:g}, {1:g}]".format(*scale_limits))
    if "rejection" in proposer:
        _check_rejection(path, proposer["rejection"], n_stumps, "verifier.proposer.rejection")
    if not is_finite(verifier["context"], 1.0, MAX_CONTEXT):
        fail(path, f"verifier.context must be a number from 1 to {MAX_CONTEXT:g}")
    if not is_finite(verifier["weight"], 0.0, MAX_WEIGHT) or verifier["weight"] == 0:
        fail(path, f"verifier.weight must be a number above 0 and at most {MAX_WEIGHT:g}")
    if not is_finite(verifier["threshold"], -MAX_THRESHOLD, MAX_THRESHOLD):
        fail(path, "verifier.threshold must be a finite number")
    if not isinstance(verifier["training"], dict):
        fail(path, "verifier.training must be an object")
    model = verifier["model"]
    if not isinstance(model, dict) or "verifier" in model:
        fail(path, "verifier.model must be a model document without a verifier of its own")
    check_model(model, f"{path}: verifier.model")
    window = (model.get("detection") or {}).get("window")
    low, high = VERIFIER_WINDOWS
    if not (window and window[0] == window[1] and low <= window[0] <= high):
        fail(path, f"verifier.model's window must be a square of {low} to {high} pixels")
