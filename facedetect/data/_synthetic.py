"""The paper's synthetic sets, "Bayes" and "TwoClouds", and their projection features.

The paper gives no parameters; ours are chosen so the classes overlap enough for costs to
matter (Bayes error about 16% at equal costs) and are fixed here so results reproduce.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

# Bayes: two unit-covariance normal clouds, equal priors, means 2 apart.
BAYES_MEAN_POSITIVE = np.array([1.0, 0.5])
BAYES_MEAN_NEGATIVE = np.array([-1.0, -0.5])
BAYES_COVARIANCE = np.eye(2) * 1.25
# TwoClouds: positives uniform in a disc, negatives in an annulus around another centre.
TWO_CLOUDS_POSITIVE = ((0.0, 0.0), 0.0, 1.0)
TWO_CLOUDS_NEGATIVE = ((0.6, 0.3), 0.5, 1.6)


def make_bayes(n_samples: int = 2000, seed: int = 0):
    """Points from the Bayes set; ``y`` is 1 for positives, 0 for negatives (equal priors).

    Parameters
    ----------
    n_samples : int
        Points in all, half of each class.
    seed : int
        Seeds the generator.

    Returns
    -------
    X : (n_samples, 2) float64 array
    y : (n_samples,) int array, 1 for positives

    See Also
    --------
    BayesOptimalClassifier : the Bayes decision on these points.
    make_two_clouds : another two-class toy set.

    Examples
    --------
    >>> X, y = make_bayes(100, seed=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((100, 2), [0, 1])
    """
    rng = np.random.default_rng(seed)
    y = (np.arange(n_samples) < n_samples // 2).astype(np.int8)
    means = np.where(y[:, None] == 1, BAYES_MEAN_POSITIVE, BAYES_MEAN_NEGATIVE)
    chol = np.linalg.cholesky(BAYES_COVARIANCE)
    points = means + rng.standard_normal((n_samples, 2)) @ chol.T
    order = rng.permutation(n_samples)
    return points[order], y[order]


class BayesOptimalClassifier:
    """The minimum-risk classifier of the Bayes set for costs ``(Cp, Cn)``.

    Predict positive when ``Cp p(+) f+(x) > Cn p(-) f-(x)``; with equal covariances this is
    the linear rule ``w . x > t``.

    Parameters
    ----------
    cost : (float, float)
        ``(Cp, Cn)``.
    prior_positive : float
        The probability of a positive.

    See Also
    --------
    make_bayes : the points it classifies.

    Examples
    --------
    >>> X, y = make_bayes(1000, seed=0)
    >>> bayes = BayesOptimalClassifier(cost=(1, 10))
    >>> bool((bayes.predict(X) == y).mean() > 0.5), [round(e, 3) for e in bayes.error_rates()]
    (True, [0.56, 0.016])
    """

    def __init__(self, cost=(1.0, 1.0), prior_positive: float = 0.5):
        self.cost = tuple(float(c) for c in cost)
        self.prior_positive = prior_positive
        inverse = np.linalg.inv(BAYES_COVARIANCE)
        self.w_ = inverse @ (BAYES_MEAN_POSITIVE - BAYES_MEAN_NEGATIVE)
        quad = (BAYES_MEAN_POSITIVE @ inverse @ BAYES_MEAN_POSITIVE
                - BAYES_MEAN_NEGATIVE @ inverse @ BAYES_MEAN_NEGATIVE) / 2
        cp, cn = self.cost
        self.threshold_ = quad + np.log(cn * (1 - prior_positive) / (cp * prior_positive))

    def decision_function(self, points) -> np.ndarray:
        return np.asarray(points) @ self.w_ - self.threshold_

    def predict(self, points) -> np.ndarray:
        return (self.decision_function(points) > 0).astype(np.int8)

    def error_rates(self) -> tuple[float, float]:
        """Analytic (false negative rate, false positive rate)."""
        sigma = np.sqrt(self.w_ @ BAYES_COVARIANCE @ self.w_)
        mean_pos = self.w_ @ BAYES_MEAN_POSITIVE
        mean_neg = self.w_ @ BAYES_MEAN_NEGATIVE
        fn = ndtr((self.threshold_ - mean_pos) / sigma)
        fp = 1 - ndtr((self.threshold_ - mean_neg) / sigma)
        return float(fn), float(fp)


def _uniform_annulus(rng, n, centre, r_inner, r_outer):
    angle = rng.uniform(0, 2 * np.pi, n)
    # Uniform over the area: the radius squared is uniform.
    radius = np.sqrt(rng.uniform(r_inner ** 2, r_outer ** 2, n))
    return np.column_stack([centre[0] + radius * np.cos(angle),
                            centre[1] + radius * np.sin(angle)])


def make_two_clouds(n_samples: int = 2000, seed: int = 0):
    """Positives uniform in a disc, negatives uniform in an overlapping annulus.

    Parameters
    ----------
    n_samples : int
        Points in all, half of each class.
    seed : int
        Seeds the generator.

    Returns
    -------
    X : (n_samples, 2) float64 array
    y : (n_samples,) int array, 1 for positives

    See Also
    --------
    make_bayes : another two-class toy set.

    Examples
    --------
    >>> X, y = make_two_clouds(100, seed=0)
    >>> X.shape, int(y.sum())
    ((100, 2), 50)
    """
    rng = np.random.default_rng(seed)
    n_pos = n_samples // 2
    pos = _uniform_annulus(rng, n_pos, *TWO_CLOUDS_POSITIVE)
    neg = _uniform_annulus(rng, n_samples - n_pos, *TWO_CLOUDS_NEGATIVE)
    points = np.vstack([pos, neg])
    y = np.r_[np.ones(n_pos, np.int8), np.zeros(n_samples - n_pos, np.int8)]
    order = rng.permutation(n_samples)
    return points[order], y[order]


def projection_features(points, n_angles: int = 64) -> np.ndarray:
    """Projections of 2-D points on ``n_angles`` directions evenly spread over [0, pi).

    A stump on projection ``k`` is a half-plane whose normal has angle ``k*pi/n_angles``;
    both polarities cover the opposite directions.

    Parameters
    ----------
    points : (n, 2) array
    n_angles : int
        Directions, evenly spread over [0, pi).

    Returns
    -------
    (n, n_angles) float64 array

    See Also
    --------
    make_two_clouds : points to project.

    Examples
    --------
    >>> projection_features(np.array([[1.0, 0.0]]), n_angles=4).round(3).tolist()
    [[1.0, 0.707, 0.0, -0.707]]
    """
    angles = np.arange(n_angles) * np.pi / n_angles
    directions = np.column_stack([np.cos(angles), np.sin(angles)])
    return np.asarray(points, dtype=np.float64) @ directions.T


def make_toy_windows(n_faces: int = 40, n_non_faces: int = 60, seed: int = 0):
    """A tiny CBCL-shaped data set for examples and quick tests: 19x19 "faces" (grey with a
    dark band where eyes would be) and uniform noise as non-faces.

    Parameters
    ----------
    n_faces, n_non_faces : int
        Windows of each class.
    seed : int
        Seeds the noise.

    Returns
    -------
    CBCLData

    See Also
    --------
    load_cbcl : the real windows.

    Examples
    --------
    >>> data = make_toy_windows()
    >>> data.images.shape, int(data.labels.sum()), data.names[0]
    ((100, 19, 19), 40, 'train/face/0.pgm')
    """
    from pathlib import Path

    from ._cbcl import CBCLData

    rng = np.random.default_rng(seed)
    faces = np.clip(rng.normal(150, 20, (n_faces, 19, 19)), 0, 255).astype(np.uint8)
    faces[:, 6:9, :] = 40
    others = rng.integers(0, 256, (n_non_faces, 19, 19), dtype=np.uint8)
    labels = np.r_[np.ones(n_faces), np.zeros(n_non_faces)].astype(np.int8)
    names = ([f"train/face/{i}.pgm" for i in range(n_faces)]
             + [f"train/non-face/{i}.pgm" for i in range(n_non_faces)])
    return CBCLData(np.concatenate([faces, others]), labels, names, Path("toy"))
