"""Cost-aware operating points and calibrated scores, from scores the model did not train on.

A boosted model's raw decision is ``score > 0``. Once boosting separates its training set,
the exponential loss gives the cheaper class the larger margins, and threshold 0 can land on
the wrong side of the costs (Nikolaou et al., 2016). The remedy here is theirs: score data
the model never saw, and put the threshold where the expected cost

    ``Cp * P(face) * FN rate + Cn * (1 - P(face)) * FP rate``

is least on those scores. Optionally the same scores fit a calibration map (Platt's sigmoid
or isotonic regression, fitted by scikit-learn's :class:`~sklearn.calibration.
CalibratedClassifierCV`) so that ``predict_proba`` means a probability; with
``rule="probability"`` the threshold is then where the calibrated probability crosses
``Cn / (Cp + Cn)`` (prior-shifted), which is Nikolaou et al.'s calibrated AdaMEC.

Everything here is plain data in and out, so the same function serves the scikit-learn
wrapper (:class:`.CostSensitiveThreshold`), the ``train-detector`` workflow and the sweeps.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import FacedetectError
from ..metrics import normalized_expected_cost, probability_cost
from ..modelfile._io import calibrated_probability  # noqa: F401  (part of this module's API)
from ..modelfile._schema import CALIBRATIONS



@dataclass(frozen=True)
class _OperatingPoint:
    """A decision threshold on the raw score, and how it was chosen.

    ``extreme`` is ``"accept-all"`` or ``"reject-all"`` when the least expected cost on the
    calibration scores lies beyond every score (the costs outweigh the model), else None.
    ``calibration`` holds the fitted map as plain data (see :func:`fit_calibration`).
    """

    threshold: float
    cost: tuple[float, float]
    prior: float
    rule: str = "expected-cost"
    source: str = "calibration-split"
    n_calibration: int = 0
    expected_cost: float = float("nan")   # normalised: NEC at the prior and costs
    extreme: str | None = None
    calibration: dict | None = field(default=None)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["cost"] = [float(c) for c in self.cost]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "_OperatingPoint":
        data = dict(data)
        data["cost"] = tuple(data["cost"])
        return cls(**data)


def _check_scores(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(labels).ravel()
    if scores.shape != labels.shape or scores.size == 0:
        raise FacedetectError("calibration scores and labels must be two equal, non-empty "
                              "arrays")
    if not np.isfinite(scores).all():
        raise FacedetectError("calibration scores contain NaN or infinite values")
    positive = labels == 1 if labels.dtype != bool else labels
    if positive.all() or not positive.any():
        raise FacedetectError(f"calibration data holds one class only ({scores.size} "
                              f"{'positives' if positive.all() else 'negatives'}): an "
                              "operating point needs both")
    return scores, positive


MIN_PRIOR = 1e-12


def check_prior(prior) -> float:
    """A class prior strictly between 0 and 1 (at least ``MIN_PRIOR`` from either)."""
    try:
        prior = float(prior)
    except (TypeError, ValueError):
        raise FacedetectError(f"prior must be a number in (0, 1), got {prior!r}") from None
    if not MIN_PRIOR <= prior <= 1.0 - MIN_PRIOR:
        # Nearer 0 or 1, the probability cut rounds to 0 or 1 in floating point.
        raise FacedetectError(f"prior must be in [{MIN_PRIOR:g}, 1 - {MIN_PRIOR:g}], got "
                              f"{prior!r}")
    return prior


def _cut_costs(scores, positive, cost, prior):
    """Every distinct cut of the sorted scores and its normalised expected cost.

    Returns ``(edges, nec)``: cut ``i`` predicts positive above ``edges[i]`` and at or below
    ``edges[i + 1]`` nothing changes, so any threshold in ``[edges[i], edges[i + 1])``
    gives ``nec[i]``. ``edges`` starts at -inf (accept everything) and its last cut is the
    highest score (reject everything).
    """
    order = np.argsort(scores, kind="stable")
    sorted_scores, sorted_positive = scores[order], positive[order]
    last_of_value = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]
    # Below-or-equal counts after each distinct value: the misses and kept negatives there.
    pos_below = np.cumsum(sorted_positive)[last_of_value]
    neg_below = np.cumsum(~sorted_positive)[last_of_value]
    fn_rate = np.r_[0, pos_below] / positive.sum()
    fp_rate = 1 - np.r_[0, neg_below] / (~positive).sum()
    pcf = probability_cost(prior, cost)
    edges = np.r_[-np.inf, sorted_scores[last_of_value], np.inf]
    return edges, normalized_expected_cost(fn_rate, fp_rate, pcf)


def cost_optimal_threshold(scores, labels, cost, prior: float | None = None):
    """The threshold of least expected cost on held-out scores.

    Predict positive where ``score > threshold``. Ties between cuts of equal cost are
    settled toward the cheaper error: among the widest run of optimal cuts, the threshold
    sits at the fraction ``1 - PCF`` of the way from its lowest to its highest score, so it
    moves down as missed positives grow dearer, even where the scores do not tell the cuts
    apart (a separable calibration set).

    Parameters
    ----------
    scores : (n,) array
        Decision values of data the model did not train on.
    labels : (n,) array
        1 (or True) for positives.
    cost : (float, float)
        ``(Cp, Cn)``: the cost of a missed positive, then of a false alarm.
    prior : float, optional
        P(positive) at deployment; by default the labels' own proportion.

    Returns
    -------
    threshold : float
    nec : float
        The normalised expected cost at it (0 = no errors).
    extreme : str or None
        ``"accept-all"`` or ``"reject-all"`` when the best cut lies beyond every score.

    Examples
    --------
    >>> scores = [-2.0, -1.0, 0.5, 1.0, 3.0]
    >>> labels = [0, 0, 0, 1, 1]
    >>> threshold, nec, extreme = cost_optimal_threshold(scores, labels, (1, 1))
    >>> 0.5 <= threshold < 1.0, nec, extreme
    (True, 0.0, None)
    >>> cost_optimal_threshold(scores, labels, (1, 1000))[0] >= 0.5
    True
    """
    scores, positive = _check_scores(scores, labels)
    prior = float(positive.mean()) if prior is None else check_prior(prior)
    edges, nec = _cut_costs(scores, positive, cost, prior)
    best = nec.min()
    optimal = np.flatnonzero(nec <= best + 1e-12)
    runs = np.split(optimal, np.flatnonzero(np.diff(optimal) > 1) + 1)
    spans = [edges[run[-1] + 1] - edges[run[0]] for run in runs]
    run = runs[int(np.argmax(spans))]
    low, high = edges[run[0]], edges[run[-1] + 1]
    spread = max(1.0, float(scores.max() - scores.min()))
    if math.isinf(low) and math.isinf(high):      # cannot happen with both classes present
        return 0.0, float(best), None
    if math.isinf(low):
        return float(high - spread), float(best), "accept-all"
    if math.isinf(high):
        return float(low), float(best), "reject-all"
    threshold = low + (high - low) * (1 - probability_cost(prior, cost))
    if not low <= threshold < high:  # rounding at the top edge: the lowest still cuts here
        threshold = low
    return float(threshold), float(best), None


def _score_model():
    """A fitted 'classifier' whose decision function is its input column: lets
    scikit-learn's calibration fit a map on scores alone."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Scores(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            self.classes_ = np.array([0, 1])
            return self

        def decision_function(self, X):
            return np.asarray(X, dtype=np.float64)[:, 0]

        def predict(self, X):
            return (self.decision_function(X) > 0).astype(int)

    return Scores().fit(None, None)


def fit_calibration(scores, labels, method: str = "sigmoid") -> dict:
    """A calibration map from held-out scores, as plain data.

    scikit-learn's :class:`~sklearn.calibration.CalibratedClassifierCV` fits it (on a
    frozen score model); the fitted map is read out so a model file can hold it:
    ``{"method": "sigmoid", "a": a, "b": b}`` (``P = 1 / (1 + exp(a s + b))``) or
    ``{"method": "isotonic", "x": [...], "y": [...]}`` (piecewise linear, clipped).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> labels = np.r_[np.zeros(200), np.ones(200)]
    >>> scores = rng.normal(labels * 2 - 1)
    >>> cal = fit_calibration(scores, labels)
    >>> p = calibrated_probability(cal, np.array([-3.0, 0.0, 3.0]))
    >>> bool(p[0] < 0.5 < p[2])
    True
    """
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator
    from sklearn.isotonic import IsotonicRegression

    if method not in CALIBRATIONS:
        raise FacedetectError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got "
                              f"{method!r}")
    scores, positive = _check_scores(scores, labels)
    if min(positive.sum(), (~positive).sum()) < 2:
        raise FacedetectError("calibration needs at least 2 held-out windows of each class; "
                              "use more data or a larger calibration split")
    if method == "isotonic":
        # What CalibratedClassifierCV fits for "isotonic", read from its public attributes.
        fitted = IsotonicRegression(out_of_bounds="clip").fit(scores, positive.astype(float))
        return {"method": "isotonic", "x": [float(v) for v in fitted.X_thresholds_],
                "y": [float(v) for v in fitted.y_thresholds_]}
    # A frozen model is fitted once, on all the scores (cv is not used).
    fitted = CalibratedClassifierCV(FrozenEstimator(_score_model()), method=method,
                                    cv=2).fit(scores[:, None], positive.astype(int))
    return {"method": "sigmoid", **_sigmoid_parameters(fitted, scores)}


def _sigmoid_parameters(fitted, scores: np.ndarray) -> dict:
    """``a`` and ``b`` of ``P(s) = 1 / (1 + exp(a s + b))``, from the public
    ``predict_proba`` of a sigmoid-calibrated model at two scores: ``log(1 / P - 1)`` is
    linear in ``s``. The quartiles of the scores keep P away from 0 and 1."""
    low, high = (float(v) for v in np.quantile(scores, [0.25, 0.75]))
    if not high > low:
        high = low + 1.0
    p = fitted.predict_proba(np.array([[low], [high]]))[:, 1]
    p = np.clip(p, np.finfo(float).tiny, 1.0 - np.finfo(float).eps)
    z = np.log1p(-p) - np.log(p)
    a = float((z[1] - z[0]) / (high - low))
    return {"a": a, "b": float(z[0] - a * low)}


def probability_threshold(calibration: dict, cost, prior_shift: float = 1.0,
                          scores=None) -> tuple[float, str | None]:
    """The score where the calibrated probability crosses the Bayes cut ``Cn / (Cp + Cn)``.

    ``prior_shift`` multiplies the odds (deployment prior odds over the calibration data's).
    Returns ``(threshold, extreme)``; for an isotonic map the threshold is the lowest of
    ``scores`` (default: the map's knots) whose probability clears the cut.
    """
    # Positive where shift * p / (1 - p) > cn / cp, i.e. p > cut = cn / (cn + cp * shift).
    # In the log domain: costs of 1e300 or 1e-320 and shifts of 1e12 stay finite there,
    # where cn + cp * shift overflows and 1 / cut - 1 rounds to 0.
    log_odds = _log_cost_odds(cost, prior_shift)     # log(1 / cut - 1)
    if calibration["method"] == "sigmoid":
        a, b = calibration["a"], calibration["b"]
        if a >= 0:  # a decreasing or flat map carries no ranking: fall back to the raw sign
            return 0.0, None
        # 1 / (1 + exp(a s + b)) > cut  <=>  a s + b < log(1 / cut - 1)
        threshold = (log_odds - b) / a
        if not math.isfinite(threshold):   # beyond any score a float can hold
            return (math.copysign(1e300, threshold),
                    "reject-all" if threshold > 0 else "accept-all")
        return float(threshold), None
    cut = 1.0 / (1.0 + math.exp(min(log_odds, 700.0)))
    knots = np.asarray(calibration["x"] if scores is None else np.unique(scores))
    probability = calibrated_probability(calibration, knots)
    above = np.flatnonzero(probability > cut)
    if above.size == len(knots):
        return float(knots[0] - max(1.0, np.ptp(knots))), "accept-all"
    if above.size == 0:
        return float(knots[-1]), "reject-all"
    # The last knot below the cut: everything scoring above it is accepted.
    return float(knots[above[0] - 1]), None


def _log_cost_odds(cost, prior_shift: float) -> float:
    """``log(cp * prior_shift / cn)``, the log-odds of the Bayes cut, without overflow.

    Examples
    --------
    >>> round(_log_cost_odds((1e300, 1e300), 1e12), 6) == round(math.log(1e12), 6)
    True
    """
    cp, cn = (float(c) for c in cost)
    if not (cp > 0 and cn > 0 and prior_shift > 0):
        raise FacedetectError(f"costs and the prior shift must be positive, got {cost!r}, "
                              f"{prior_shift!r}")
    return math.log(cp) - math.log(cn) + math.log(prior_shift)


def _prior_shift(prior: float, data_prior: float) -> float:
    """The deployment prior odds over the calibration data's."""
    return math.exp(math.log(prior) - math.log1p(-prior)
                    - math.log(data_prior) + math.log1p(-data_prior))


def choose_operating_point(scores, labels, cost, *, prior: float | None = None,
                           calibration: str | None = "sigmoid", rule: str = "probability",
                           source: str = "calibration-split") -> _OperatingPoint:
    """The operating point for ``cost`` from held-out ``scores``.

    ``rule="probability"`` (default) thresholds the calibrated probability at the Bayes
    cut (with AdaBoost: calibrated AdaMEC; needs ``calibration``); ``rule="expected-cost"``
    minimises the empirical expected cost (:func:`cost_optimal_threshold`). ``prior``
    (default: the labels' proportion) is the deployment P(positive). A threshold beyond
    every calibration score is flagged in ``extreme``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> labels = np.r_[np.zeros(300), np.ones(100)]
    >>> scores = rng.normal(2 * labels - 1)
    >>> strict = choose_operating_point(scores, labels, (1, 10))   # false alarms cost 10
    >>> lenient = choose_operating_point(scores, labels, (10, 1))  # misses cost 10
    >>> bool(lenient.threshold < 0 < strict.threshold), strict.calibration["method"]
    (True, 'sigmoid')
    """
    scores, positive = _check_scores(scores, labels)
    data_prior = float(positive.mean())
    prior = data_prior if prior is None else check_prior(prior)
    fitted = fit_calibration(scores, positive, calibration) if calibration else None
    if rule == "expected-cost":
        threshold, nec, extreme = cost_optimal_threshold(scores, positive, cost, prior)
    elif rule == "probability":
        if fitted is None:
            raise FacedetectError("the probability rule needs a calibration "
                                  "(sigmoid or isotonic)")
        shift = _prior_shift(prior, data_prior)
        threshold, extreme = probability_threshold(fitted, cost, shift, scores)
        if extreme is None and threshold < scores.min():
            extreme = "accept-all"      # every calibration window is accepted
        elif extreme is None and threshold >= scores.max():
            extreme = "reject-all"
        pcf = probability_cost(prior, cost)
        nec = float(normalized_expected_cost(np.mean(scores[positive] <= threshold),
                                             np.mean(scores[~positive] > threshold), pcf))
    else:
        raise FacedetectError(f"rule must be 'expected-cost' or 'probability', got {rule!r}")
    return _OperatingPoint(threshold, tuple(float(c) for c in cost), prior, rule, source,
                          int(scores.size), nec, extreme, fitted)
