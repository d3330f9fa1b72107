"""A fitted ensemble of decision stumps: its fitted attributes and its prediction, apart
from the training loop that fits it (:mod:`._boosting`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data


@dataclass
class TrainingState:
    """Everything needed to continue a run: enough for an exact checkpoint."""

    weights: np.ndarray
    log_acc_pos: float = 0.0
    log_acc_neg: float = 0.0
    stumps: list = field(default_factory=list)      # (feature, threshold, polarity)
    alphas: list = field(default_factory=list)
    history: list = field(default_factory=list)     # per-round diagnostics
    finished: bool = False


class StumpEnsemble:
    """``sum_t alpha_t h_t(x)`` over the stumps ``(features_, thresholds_, polarities_)``:
    the prediction half of :class:`._boosting.BoostedStumps`."""

    def _set_fitted(self, state: TrainingState):
        self.features_ = np.array([s[0] for s in state.stumps], dtype=np.int64)
        self.thresholds_ = np.array([s[1] for s in state.stumps], dtype=np.float64)
        self.polarities_ = np.array([s[2] for s in state.stumps], dtype=np.int8)
        self.alphas_ = np.array(state.alphas, dtype=np.float64)
        self.n_rounds_ = len(state.alphas)
        history = state.history
        self.roots_solved_ = np.array([h["roots"] for h in history], dtype=np.int64)
        self.errors_ = np.array([(h["e_pos"], h["e_neg"]) for h in history]).reshape(-1, 2)
        self.bounds_ = np.array([h["bound"] for h in history])
        self.round_losses_ = np.array([h["loss"] for h in history])
        self.round_seconds_ = np.array([h["seconds"] for h in history])

    def _check_fitted(self):
        check_is_fitted(self, "alphas_")

    def _weak_outputs(self, X) -> np.ndarray:
        """(n_rounds, n_samples) outputs of every stump."""
        self._check_fitted()
        X = validate_data(self, X, dtype=[np.float32, np.float64], reset=False)
        columns = X[:, self.features_].T
        return np.where(columns > self.thresholds_[:, None], self.polarities_[:, None],
                        -self.polarities_[:, None])

    def decision_function(self, X) -> np.ndarray:
        """``sum_t alpha_t h_t(x)``: positive means the positive class."""
        outputs = self._weak_outputs(X)
        score = np.zeros(outputs.shape[1])
        for alpha, row in zip(self.alphas_, outputs):  # stump by stump, as the scanner adds
            score += alpha * row
        return score

    def staged_decision_function(self, X):
        """The decision after each round, as a generator (like scikit-learn's)."""
        outputs = self._weak_outputs(X)
        total = np.zeros(outputs.shape[1])
        for alpha, row in zip(self.alphas_, outputs):
            total = total + alpha * row
            yield total

    def predict(self, X) -> np.ndarray:
        """Labels in the encoding of ``y`` (``classes_[1]`` where the decision is > 0)."""
        return np.where(self.decision_function(X) > 0, self.classes_[1], self.classes_[0])
