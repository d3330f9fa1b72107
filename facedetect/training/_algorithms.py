"""The boosting algorithms: small pieces on the one training loop
(:class:`._boosting.BoostedStumps`), and the registry by name that the command line, model
files, the CBCL sweep and the paper's runs all read.

A name is an estimator class with fixed parameters. ``dbn`` is AdaBoostDB with the
exhaustive search, saved in a model file as algorithm ``db`` with search ``exhaustive``:
the file names the class, and its ``search`` and ``selection`` fields the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import FacedetectError
from ._boosting import BoostedStumps
from ..modelfile._registry import ALGORITHMS as REGISTRY
from ..modelfile._registry import FILE_ALGORITHMS
from ._roots import normalized_costs
from ._rules import RoundState, min_loss_brute_force, select_binned


class AdaBoostDB(BoostedStumps):
    """Double-Base Asymmetric AdaBoost (the paper's Algorithm 2, corrected).

    Parameters
    ----------
    n_rounds, cost, random_state, max_features
        See :class:`BoostedStumps`.
    search : {"conditional", "exhaustive"}
        ``conditional`` (DB) solves a root only for candidates that pass the improvement
        test; ``exhaustive`` (DBN) solves every candidate's root. Same model.
    selection : {"root", "loss"}
        ``root`` (the paper's rule, default): the stump with the largest alpha.
        ``loss``: the stump with the smallest minimised loss, Cost-Sensitive AdaBoost's
        criterion; the two differ when ``Cp != Cn`` (see the math notes).

    See Also
    --------
    CostSensitiveAdaBoost : the same cost-sensitive rule, solved for every candidate.

    References
    ----------
    .. [1] I. Landesa-Vázquez and J. L. Alba-Castro, "Double-Base Asymmetric AdaBoost",
       Neurocomputing 118, 101-114 (2013), doi:10.1016/j.neucom.2013.02.019;
       arXiv:1507.02154.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 5))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    >>> model = AdaBoostDB(n_rounds=20, cost=(1, 5)).fit(X, y)
    >>> int(model.features_[0])                       # the informative feature first
    0
    >>> missed = lambda m: np.mean(m.predict(X)[y == 1] == 0)
    >>> bool(missed(AdaBoostDB(20, cost=(5, 1)).fit(X, y)) < missed(model))  # dearer misses
    True
    """

    algorithm = "db"

    def __init__(self, n_rounds: int = 200, cost=(1.0, 1.0), search: str = "conditional",
                 selection: str = "root", balance_classes: bool = True, random_state=None,
                 max_features=None):
        super().__init__(n_rounds, cost, balance_classes, random_state, max_features)
        self.search = search
        self.selection = selection


class CostSensitiveAdaBoost(BoostedStumps):
    """Cost-Sensitive AdaBoost (Masnadi-Shirazi & Vasconcelos 2011; the paper's Algorithm 1).

    Every candidate's alpha is solved from the hyperbolic equation and the stump with the
    smallest loss is kept.

    Parameters
    ----------
    solver : {"vectorized", "scalar", "scipy"}
        ``scalar``: Brent's method (compiled zeroin) per candidate, as the paper ran it.
        ``scipy``: the same through ``scipy.optimize.brentq`` (pure-Python per candidate;
        slow, for small pools). ``vectorized``: all candidates of a chunk of features at
        once with numpy.

    See Also
    --------
    AdaBoostDB : the same costs with the conditional search, far fewer roots solved.

    References
    ----------
    .. [1] H. Masnadi-Shirazi and N. Vasconcelos, "Cost-Sensitive Boosting", IEEE
       Transactions on Pattern Analysis and Machine Intelligence 33(2), 294-309 (2011),
       doi:10.1109/TPAMI.2010.71.

    Examples
    --------
    >>> import numpy as np
    >>> from facedetect.data import make_two_clouds, projection_features
    >>> points, y = make_two_clouds(200, seed=0)
    >>> X = projection_features(points, n_angles=8)
    >>> model = CostSensitiveAdaBoost(n_rounds=5, cost=(10, 1)).fit(X, y)
    >>> predicted = model.predict(X)
    >>> float(np.mean(predicted[y == 1] == 0)), float(np.mean(predicted[y == 0] == 1))
    (0.0, 0.57)
    """

    algorithm = "cs"
    selection = "loss"
    search = "exhaustive"

    def __init__(self, n_rounds: int = 200, cost=(1.0, 1.0), solver: str = "vectorized",
                 balance_classes: bool = True, random_state=None, max_features=None):
        super().__init__(n_rounds, cost, balance_classes, random_state, max_features)
        self.solver = solver

    def _select(self, state: RoundState):
        if state.binned is not None:
            return select_binned(self.selection, self.search, state)
        if self.solver not in ("vectorized", "scalar", "scipy"):
            raise ValueError("solver must be 'vectorized', 'scalar' or 'scipy', "
                             f"got {self.solver!r}")
        return min_loss_brute_force(state, solver=self.solver, features=state.features)


class AdaBoost(BoostedStumps):
    """Discrete AdaBoost, the symmetric baseline: the stump of least weighted error,
    ``alpha = 1/2 log((1 - e) / e)``. Starts from class-balanced weights like the others.

    Parameters
    ----------
    n_rounds : int
        Boosting rounds.
    balance_classes : bool
        Start from equal class masses.
    random_state, max_features
        See :class:`BoostedStumps`.

    See Also
    --------
    AsymmetricInitAdaBoost : the same rounds from cost-proportional initial weights.

    References
    ----------
    .. [1] Y. Freund and R. E. Schapire, "A decision-theoretic generalization of on-line
       learning and an application to boosting", Journal of Computer and System Sciences
       55(1), 119-139 (1997), doi:10.1006/jcss.1997.1504.
    .. [2] P. Viola and M. J. Jones, "Robust Real-Time Face Detection", International
       Journal of Computer Vision 57(2), 137-154 (2004),
       doi:10.1023/B:VISI.0000013087.49260.fb.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 5))
    >>> y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    >>> model = AdaBoost(n_rounds=20).fit(X, y)
    >>> model.n_rounds_, int(model.features_[0]), bool(model.score(X, y) > 0.8)
    (20, 0, True)
    """

    algorithm = "adaboost"
    cost = (1.0, 1.0)  # a class attribute, not a parameter: AdaBoost has no costs

    def __init__(self, n_rounds: int = 200, balance_classes: bool = True, random_state=None,
                 max_features=None):
        self.n_rounds = n_rounds
        self.balance_classes = balance_classes
        self.random_state = random_state
        self.max_features = max_features

    def _update_costs(self, cost):
        return 1.0, 1.0

    def _alpha(self, choice, state: RoundState) -> float:
        error = state.p * choice["e_pos"] + state.q * choice["e_neg"]
        return 0.5 * math.log((1.0 - error) / error)


class AsymmetricInitAdaBoost(AdaBoost):
    """AdaBoost whose initial class masses are proportional to the costs
    (Landesa-Vázquez & Alba-Castro 2012): ``Wp : Wn = Cp : Cn``.

    Parameters
    ----------
    n_rounds : int
        Boosting rounds.
    cost : (float, float)
        ``(Cp, Cn)``: the initial class masses' ratio.
    balance_classes : bool
        Scale the masses to the costs rather than to the class counts.
    random_state, max_features
        See :class:`BoostedStumps`.

    See Also
    --------
    AdaBoostDB : cost-sensitive through the error bounds rather than the initial weights.

    References
    ----------
    .. [1] I. Landesa-Vázquez and J. L. Alba-Castro, "Shedding light on the asymmetric
       learning capability of AdaBoost", Pattern Recognition Letters 33(3), 247-255
       (2012), doi:10.1016/j.patrec.2011.10.022; arXiv:1507.02084.

    Examples
    --------
    >>> from facedetect.data import make_two_clouds, projection_features
    >>> points, y = make_two_clouds(400, seed=0)
    >>> X = projection_features(points, n_angles=16)
    >>> model = AsymmetricInitAdaBoost(n_rounds=10, cost=(1, 10)).fit(X, y)
    >>> model.class_masses_
    (0.09090909090909091, 0.9090909090909091)
    """

    algorithm = "asym-init"

    def __init__(self, n_rounds: int = 200, cost=(1.0, 1.0), balance_classes: bool = True,
                 random_state=None, max_features=None):
        BoostedStumps.__init__(self, n_rounds, cost, balance_classes, random_state,
                               max_features)

    def _initial_class_masses(self):
        cp, cn = normalized_costs(self._cost_pair)
        return cp / (cp + cn), cn / (cp + cn)


@dataclass(frozen=True)
class Algorithm:
    """An estimator class and the parameters that make it this algorithm."""

    estimator: type
    params: dict = field(default_factory=dict)
    uses_cost: bool = True
    description: str = ""


# Each algorithm of the registry (facedetect.modelfile._registry) with its estimator class.
FILE_CLASSES = {cls.algorithm: cls for cls in (AdaBoostDB, CostSensitiveAdaBoost, AdaBoost,
                                               AsymmetricInitAdaBoost)}
ALGORITHMS = {name: Algorithm(FILE_CLASSES[entry.file_name], dict(entry.params),
                              entry.uses_cost, entry.description)
              for name, entry in REGISTRY.items()}
assert set(FILE_CLASSES) == set(FILE_ALGORITHMS), (
    "facedetect.modelfile._registry and the classes differ")


def make_algorithm(name: str, n_rounds: int, cost=(1.0, 1.0), **params) -> BoostedStumps:
    """A fresh estimator of algorithm ``name``; ``params`` add to or override its own.

    Examples
    --------
    >>> make_algorithm("dbn", 10, (1, 5)).search
    'exhaustive'
    >>> make_algorithm("adaboost", 10, (1, 5)).cost   # cost-free: the cost is not its own
    (1.0, 1.0)
    """
    if name not in ALGORITHMS:
        raise FacedetectError(f"unknown algorithm {name!r}; choose from "
                              f"{', '.join(ALGORITHMS)}")
    algorithm = ALGORITHMS[name]
    arguments = dict(algorithm.params, **params)
    if algorithm.uses_cost:
        arguments["cost"] = tuple(cost)
    return algorithm.estimator(n_rounds, **arguments)
