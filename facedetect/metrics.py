"""Evaluation quantities of the paper (section 4.1) and Drummond-Holte cost space.

``PCF = p(+) Cp / (p(+) Cp + p(-) Cn)`` and ``NEC = FN * PCF + FP * (1 - PCF)``: the paper
prints ``FN * PCF + FP``, a typo (see ``../shared/docs/adaboostdb-math.md``). In cost space
a classifier is the line from ``(0, FP)`` to ``(1, FN)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import math

import numpy as np

__all__ = ["BinaryRates", "binary_rates", "normalized_expected_cost", "probability_cost",
           "roc_points"]


@dataclass
class BinaryRates:
    """Counts and rates of a binary decision against labels (1 = positive).

    Attributes
    ----------
    n_positive, n_negative : int
        Labels of each class.
    false_negatives, false_positives : int
        Errors of each kind; ``false_negative_rate`` and ``false_positive_rate`` divide
        them by the class counts.

    See Also
    --------
    binary_rates : what returns it.

    Examples
    --------
    >>> rates = binary_rates([1, 1, 0, 0], [1, 0, 0, 0])
    >>> rates.false_negative_rate, rates.false_positive_rate
    (0.5, 0.0)
    """

    n_positive: int
    n_negative: int
    false_negatives: int
    false_positives: int

    @property
    def false_negative_rate(self) -> float:
        return self.false_negatives / self.n_positive if self.n_positive else float("nan")

    @property
    def false_positive_rate(self) -> float:
        return self.false_positives / self.n_negative if self.n_negative else float("nan")

    @property
    def classification_error(self) -> float:
        return (self.false_negatives + self.false_positives) / (self.n_positive + self.n_negative)

    @property
    def prior_positive(self) -> float:
        return self.n_positive / (self.n_positive + self.n_negative)

    def nec(self, cost=(1.0, 1.0)) -> float:
        """Normalised expected cost at this set's priors and the given costs."""
        return normalized_expected_cost(self.false_negative_rate, self.false_positive_rate,
                                        probability_cost(self.prior_positive, cost))

    def as_dict(self, cost=(1.0, 1.0)) -> dict:
        return {**asdict(self), "false_negative_rate": self.false_negative_rate,
                "false_positive_rate": self.false_positive_rate,
                "classification_error": self.classification_error,
                "nec_at_cost": self.nec(cost), "nec_at_priors": self.nec((1.0, 1.0)),
                "pcf_at_cost": probability_cost(self.prior_positive, cost)}


def binary_rates(labels, predicted) -> BinaryRates:
    """Counts of a {0,1} (or boolean) prediction against {0,1} labels.

    Parameters
    ----------
    labels, predicted : arrays of 0 and 1

    Returns
    -------
    BinaryRates

    See Also
    --------
    normalized_expected_cost : their cost.
    sklearn.metrics.confusion_matrix : the counts.

    Examples
    --------
    >>> rates = binary_rates([1, 1, 0, 0], [1, 0, 0, 1])
    >>> rates.false_negative_rate, rates.false_positive_rate
    (0.5, 0.5)
    """
    labels = np.asarray(labels).astype(bool)
    predicted = np.asarray(predicted).astype(bool)
    if labels.shape != predicted.shape:
        raise ValueError("labels and predictions differ in shape")
    return BinaryRates(int(labels.sum()), int((~labels).sum()),
                       int((labels & ~predicted).sum()), int((~labels & predicted).sum()))


def probability_cost(prior_positive: float, cost=(1.0, 1.0)) -> float:
    """PCF: the x axis of cost space.

    Parameters
    ----------
    prior_positive : float
        The probability of a positive.
    cost : (float, float)
        ``(Cp, Cn)``.

    Returns
    -------
    float
        ``p Cp / (p Cp + (1 - p) Cn)``.

    See Also
    --------
    normalized_expected_cost : the y axis.

    Examples
    --------
    >>> probability_cost(0.5, (1, 10)), probability_cost(0.5)
    (0.09090909090909091, 0.5)
    """
    cp, cn = cost
    positive, negative = prior_positive * cp, (1 - prior_positive) * cn
    if positive + negative > 0 and math.isfinite(positive + negative):
        return positive / (positive + negative)
    # Products that underflow (subnormal costs, a tiny prior) or overflow: the same
    # ratio in the log domain, 1 / (1 + exp(log negative - log positive)).
    if prior_positive <= 0 or cp <= 0:
        return 0.0
    if prior_positive >= 1 or cn <= 0:
        return 1.0
    log_ratio = (math.log1p(-prior_positive) + math.log(cn)
                 - math.log(prior_positive) - math.log(cp))
    return 1.0 / (1.0 + math.exp(min(log_ratio, 700.0)))


def normalized_expected_cost(fn_rate, fp_rate, pcf):
    """NEC = FN * PCF + FP * (1 - PCF): FP at PCF = 0, FN at PCF = 1.

    Parameters
    ----------
    fn_rate, fp_rate : float or array
    pcf : float or array
        Probability cost (:func:`probability_cost`).

    Returns
    -------
    float or array

    See Also
    --------
    binary_rates : the rates it weighs.
    probability_cost : the x axis of a cost curve.

    Examples
    --------
    >>> round(float(normalized_expected_cost(0.1, 0.3, 0.25)), 6)
    0.25
    """
    pcf = np.asarray(pcf, dtype=np.float64)
    return fn_rate * pcf + fp_rate * (1 - pcf)


def lower_envelope(fn_rates, fp_rates, pcf=None):
    """Pointwise minimum NEC over a family of classifiers.

    Returns ``(pcf, nec)``; with the default grid of 1,001 points in [0, 1].
    """
    pcf = np.linspace(0.0, 1.0, 1001) if pcf is None else np.asarray(pcf)
    fn_rates = np.asarray(fn_rates, dtype=np.float64)[:, None]
    fp_rates = np.asarray(fp_rates, dtype=np.float64)[:, None]
    return pcf, normalized_expected_cost(fn_rates, fp_rates, pcf).min(axis=0)


def envelope_area_between(first, second, pcf=None) -> float:
    """Area between two lower envelopes given as (fn_rates, fp_rates) pairs."""
    grid, env1 = lower_envelope(*first, pcf=pcf)
    _, env2 = lower_envelope(*second, pcf=grid)
    return float(np.trapezoid(np.abs(env1 - env2), grid))


def roc_points(labels, scores, n_points: int = 21):
    """Operating points as the decision threshold moves: (threshold, FN rate, FP rate).

    Thresholds are quantiles of the finite scores (plus both ends), predicting positive
    where ``score > threshold``.

    Parameters
    ----------
    labels : array of 0 and 1
    scores : array
    n_points : int
        Thresholds, at quantiles of the scores.

    Returns
    -------
    list of dict
        ``threshold``, ``false_negative_rate`` and ``false_positive_rate`` of each point.

    See Also
    --------
    sklearn.metrics.roc_curve : scikit-learn's.

    Examples
    --------
    >>> points = roc_points([1, 1, 0, 0], [0.9, 0.4, 0.6, 0.1], n_points=3)
    >>> [(p["false_negative_rate"], p["false_positive_rate"]) for p in points]
    [(0.0, 1.0), (0.0, 1.0), (0.0, 0.5), (0.5, 0.5), (1.0, 0.0)]
    """
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=np.float64)
    # A cascade scores the windows an early stage rejects -inf: the quantiles are of the
    # finite scores, and the lowest threshold lets every finite one pass.
    finite = scores[np.isfinite(scores)]
    if finite.size == 0:
        finite = np.zeros(1)
    thresholds = np.unique(np.r_[finite.min() - 1, np.quantile(finite, np.linspace(0, 1, n_points)),
                                 0.0])
    points = []
    for threshold in thresholds:
        rates = binary_rates(labels, scores > threshold)
        points.append({"threshold": float(threshold),
                       "false_negative_rate": rates.false_negative_rate,
                       "false_positive_rate": rates.false_positive_rate})
    return points
