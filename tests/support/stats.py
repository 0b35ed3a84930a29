"""Independent reference computations for the statistics tests (SciPy, not the app's functions)."""

import numpy as np
from scipy.optimize import minimize


def bt_penalised_nll(theta, comparisons, ridge):
    """−Σ [s log σ(θi − θj) + (1 − s) log σ(θj − θi)] + ridge/2 ‖θ‖²."""
    i, j, s = (np.asarray(c) for c in zip(*comparisons))
    d = theta[i.astype(int)] - theta[j.astype(int)]
    return float(np.sum(s * np.logaddexp(0, -d) + (1 - s) * np.logaddexp(0, d)) + 0.5 * ridge * theta @ theta)


def bt_map(comparisons, n_items, ridge):
    """Bradley–Terry θ under the Gaussian prior of precision ``ridge``, by a general optimiser, centred."""
    result = minimize(bt_penalised_nll, np.zeros(n_items), args=(comparisons, ridge), method="BFGS",
                      options={"gtol": 1e-10})
    return result.x - result.x.mean()
