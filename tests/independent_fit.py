"""A Bradley-Terry fit written apart from trace_eval's, for tests to check its scores against.

The likelihood of every pair on its own (the first system scored 1, 1/2 or 0), maximised by scipy's
BFGS from zero: no aggregation into counts, no Newton step, nothing shared with
trace_eval/evaluation/bradley_terry.py. Scores on the arena scale: 400 log10(strength) + 1000 with
the geometric mean of the strengths 1. With `prior_games`, every system also plays that many ties
against a virtual system of strength 1 (the weak prior that keeps scores finite when a system wins or
loses every pair).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize


def bradley_terry_scores(
    first: np.ndarray, second: np.ndarray, scored_by_first: np.ndarray, n: int, prior_games: float = 0.0
) -> np.ndarray:
    first, second = np.asarray(first), np.asarray(second)
    scored_by_first = np.asarray(scored_by_first, dtype=float)

    def negative_log_likelihood(theta: np.ndarray) -> float:
        margin = theta[first] - theta[second]
        prior = prior_games * np.sum(0.5 * np.logaddexp(0, -theta) + 0.5 * np.logaddexp(0, theta))
        return float(
            np.sum(scored_by_first * np.logaddexp(0, -margin) + (1 - scored_by_first) * np.logaddexp(0, margin)) + prior
        )

    found = optimize.minimize(negative_log_likelihood, np.zeros(n), method="BFGS", options={"gtol": 1e-10})
    theta = found.x - found.x.mean()
    return 1000 + 400 * theta / math.log(10)
