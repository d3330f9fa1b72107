"""A scikit-learn meta-estimator: any booster plus its cost-aware operating point."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._splits import stratified_holdout, stratified_kfold
from ._operating_point import CALIBRATIONS, calibrated_probability, choose_operating_point


def _calibrated(meta) -> bool:
    return meta.calibration is not None


class CostSensitiveThreshold(ClassifierMixin, BaseEstimator):
    """Fit ``estimator``, then choose its cost-aware operating point on unseen scores.

    The threshold is chosen from scores the fitted model did not train on: with
    ``cv`` a fraction, a stratified calibration split is carved from the training data
    and the model is fitted on the rest (one training); with ``cv`` an integer k,
    out-of-fold scores of k models choose it and a final model is fitted on everything
    (k + 1 trainings). :class:`sklearn.model_selection.TunedThresholdClassifierCV` does
    the same job with a grid of thresholds; this one searches every cut exactly and
    breaks ties toward the cheaper error (:func:`.cost_optimal_threshold`).

    Parameters
    ----------
    estimator : classifier with ``decision_function``
        A booster from :mod:`facedetect.training` or any scikit-learn classifier.
    cost : (float, float)
        ``(Cp, Cn)``: the cost of a missed positive, then of a false alarm.
    prior : float or None
        The deployment P(positive); None uses the training data's.
    calibration : {"sigmoid", "isotonic", None}
        The calibration map fitted on the same unseen scores (``predict_proba``).
    rule : {"probability", "expected-cost"}
        ``probability`` (default) thresholds the calibrated probability at the Bayes cut
        ``Cn / (Cp + Cn)`` (calibrated AdaMEC with ``AdaBoost``); ``expected-cost`` takes
        the least empirical expected cost on the unseen scores.
    cv : float or int
        A calibration fraction in (0, 1) (default 0.2) or a number of folds >= 2.
    random_state : int
        Seeds the split.

    Examples
    --------
    >>> from facedetect.training import AdaBoostDB
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    >>> model = CostSensitiveThreshold(AdaBoostDB(20, cost=(1, 10)), cost=(1, 10)).fit(X, y)
    >>> bool(model.predict(X).mean() < (y == 1).mean())   # false alarms cost more
    True
    """

    def __init__(self, estimator, cost=(1.0, 1.0), prior=None, calibration="sigmoid",
                 rule: str = "probability", cv=0.2, random_state=0):
        self.estimator = estimator
        self.cost = cost
        self.prior = prior
        self.calibration = calibration
        self.rule = rule
        self.cv = cv
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y, **fit_params):
        """Fit the estimator and choose the operating point (see the class docstring)."""
        if self.calibration not in (None, *CALIBRATIONS):
            raise ValueError(f"calibration must be None, 'sigmoid' or 'isotonic', got "
                             f"{self.calibration!r}")
        X, y = np.asarray(X), np.asarray(y)
        labels = np.unique(y)
        if len(labels) != 2:
            raise ValueError(f"Only binary classification is supported: got {len(labels)} "
                             f"class{'es' if len(labels) != 1 else ''}")
        positive = y == labels[1]
        if isinstance(self.cv, (int, np.integer)) and not isinstance(self.cv, bool):
            scores, source = self._out_of_fold_scores(X, y, positive, fit_params)
            self.estimator_ = clone(self.estimator).fit(X, y, **fit_params)
            calibration_positive = positive
        elif isinstance(self.cv, float) and 0 < self.cv < 1:
            fit_idx, cal_idx = stratified_holdout(positive, self.cv, seed=self.random_state)
            self.estimator_ = clone(self.estimator).fit(X[fit_idx], y[fit_idx], **fit_params)
            scores, source = self.estimator_.decision_function(X[cal_idx]), "calibration-split"
            calibration_positive = positive[cal_idx]
        else:
            raise ValueError(f"cv must be a fraction in (0, 1) or a number of folds >= 2, got "
                             f"{self.cv!r}")
        # Kept so that another cost or rule needs no new training (see operating_point_for).
        self.calibration_scores_, self.calibration_positive_ = scores, calibration_positive
        self._source = source
        self.operating_point_ = self.operating_point_for(self.cost, self.rule)
        self.threshold_ = self.operating_point_.threshold
        self.classes_ = self.estimator_.classes_
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        return self

    def operating_point_for(self, cost, rule: str | None = None):
        """The operating point another cost (or rule) would get from the same unseen
        scores, without training again."""
        check_is_fitted(self, "calibration_scores_")
        return choose_operating_point(
            self.calibration_scores_, self.calibration_positive_, cost, prior=self.prior,
            calibration=self.calibration, rule=rule or self.rule, source=self._source)

    def _out_of_fold_scores(self, X, y, positive, fit_params):
        if self.cv < 2:
            raise ValueError(f"cv must be >= 2 folds, got {self.cv}")
        scores = np.empty(len(y))
        for train, test in stratified_kfold(positive, int(self.cv), seed=self.random_state):
            fold_model = clone(self.estimator).fit(X[train], y[train], **fit_params)
            scores[test] = fold_model.decision_function(X[test])
        return scores, f"{int(self.cv)}-fold out-of-fold"

    def decision_function(self, X) -> np.ndarray:
        """The score minus the threshold: positive means the positive class."""
        check_is_fitted(self, "threshold_")
        return self.estimator_.decision_function(X) - self.threshold_

    def predict(self, X) -> np.ndarray:
        return np.where(self.decision_function(X) > 0, self.classes_[1], self.classes_[0])

    @available_if(_calibrated)
    def predict_proba(self, X) -> np.ndarray:
        """``[P(negative), P(positive)]`` from the calibration map."""
        check_is_fitted(self, "threshold_")
        positive = calibrated_probability(self.operating_point_.calibration,
                                          self.estimator_.decision_function(X))
        return np.column_stack([1 - positive, positive])
