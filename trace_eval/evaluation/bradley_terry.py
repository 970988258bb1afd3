"""Bradley-Terry scores from pairwise outcomes, fitted for many bootstrap resamples at once.

The arena convention (Chatbot Arena, the TTS arenas): system i beats system j with
probability s_i / (s_i + s_j); a tie counts half a win to each side; the strengths s
maximise the likelihood of the outcomes, with their geometric mean fixed at 1; a
score is 400 log10(s) + 1000, so a 400-point lead means 10-to-1 odds.

The maximum exists, and is unique, exactly when the systems cannot be split into
two groups one of which scored nothing against the other: the graph with an edge
i -> j wherever i scored against j (a win or a tie) is strongly connected (Ford,
1957). Where it is not (a system won or lost every comparison, or two groups never
met), the scores would be infinite: `fit` gives NaN there, never a made-up number.

A leaderboard ranks all the same (as the arenas do): `fit_with_prior` adds a weak
prior, `PRIOR_GAMES` pseudo-game(s) of every system against a virtual system of
strength 1, scored half a win and half a loss (a tie). It keeps every score finite;
how far an undefeated (or winless) system sits from the others is then the prior's
choice, not the data's, which bound that score on one side only (`unbounded`).

Every function takes arrays with leading batch axes (one fit per resample) and is
vectorised over them: Newton's method with one batched linear solve per step.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

__all__ = [
    "BASE",
    "PRIOR_GAMES",
    "SCALE",
    "fit",
    "fit_or_prior",
    "fit_with_prior",
    "ranks",
    "scores",
    "strongly_connected",
    "unbounded",
]

SCALE = 400.0  # points per factor of ten in strength
BASE = 1000.0  # the score of a system of strength 1 (the geometric mean)
PRIOR_GAMES = 1.0  # the weak prior: one tie of every system against a system of strength 1

_MAX_STEP = 2.0  # natural-log units: damps Newton's first steps when strengths are far apart
_MAX_ITERATIONS = 200
_TOLERANCE = 1e-10  # largest change of a log strength at convergence


def _reach(points: np.ndarray) -> np.ndarray:
    """reach[..., i, j]: j can be reached from i along "scored against" edges (i scored against j, ...)."""
    size = points.shape[-1]
    reach = (np.asarray(points) > 0) | np.eye(size, dtype=bool)
    for _ in range(max(1, math.ceil(math.log2(max(size, 2))))):
        reach = np.matmul(reach.astype(np.float32), reach.astype(np.float32)) > 0
    return reach


def strongly_connected(points: np.ndarray) -> np.ndarray:
    """Whether every system can reach every other along "scored against" edges, per batch row.

    `points[..., i, j]` is what i scored against j; the closure is found by repeated squaring.
    """
    return np.asarray(_reach(points).all(axis=(-2, -1)))


def unbounded(points: np.ndarray, games: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(above, below): per batch row and system, whether the likelihood leaves its score unbounded above / below.

    A system's score can grow without end when the systems that can reach it (itself, those that
    scored against it, those that scored against them, ...) are not all of them: that group scored
    everything against the rest. It can fall without end when it cannot reach every system. With
    `games`, a system that played none in a row (a bootstrap resample that drew none of its pairs)
    is unbounded both ways itself, and does not make the others so.
    """
    reach = _reach(points)
    if games is not None:
        absent = np.asarray(games).sum(axis=-1) == 0
        reach = reach | absent[..., None, :] | absent[..., :, None]
        return np.asarray(~reach.all(axis=-2) | absent), np.asarray(~reach.all(axis=-1) | absent)
    return np.asarray(~reach.all(axis=-2)), np.asarray(~reach.all(axis=-1))


def fit(points: np.ndarray, games: np.ndarray) -> np.ndarray:
    """Log strengths (natural log, mean 0 over the systems) that maximise the likelihood.

    `points[..., i, j]`: what system i scored against j (1 per win, 1/2 per tie);
    `games[..., i, j]`: how many times they met (symmetric, zero diagonal), so that
    points[i, j] + points[j, i] == games[i, j]. Rows where the maximum does not exist
    (see `strongly_connected`) or Newton's method does not converge are NaN.
    """
    return _newton(points, games, 0.0)


def fit_with_prior(points: np.ndarray, games: np.ndarray, prior_games: float = PRIOR_GAMES) -> np.ndarray:
    """Log strengths (mean 0) that maximise the likelihood times the weak prior: `prior_games` ties of every
    system against a virtual system of strength 1. They exist for every row; NaN only where Newton's
    method does not converge."""
    if prior_games <= 0:
        raise ValueError(f"prior_games={prior_games}: expected a positive number of pseudo-games")
    return _newton(points, games, prior_games)


def fit_or_prior(points: np.ndarray, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log strengths, whether they are the maximum-likelihood ones) per batch row: `fit` where its maximum
    exists, `fit_with_prior` where it does not. The one computation behind every ranking (leaderboard.py,
    sessions.interaction.rank), so the same outcomes give the same scores everywhere."""
    theta = fit(points, games)
    no_maximum = np.isnan(theta).any(axis=-1)
    if no_maximum.any():  # a system won or lost every pair: the weak prior keeps the scores finite
        theta[no_maximum] = fit_with_prior(np.asarray(points)[no_maximum], np.asarray(games)[no_maximum])
    return theta, ~no_maximum


def _newton(points: np.ndarray, games: np.ndarray, prior_games: float) -> np.ndarray:
    points = np.asarray(points, dtype=float)
    games = np.asarray(games, dtype=float)
    size = points.shape[-1]
    defined = strongly_connected(points) if prior_games == 0 else np.ones(points.shape[:-2], dtype=bool)
    # Rows without a maximum get a harmless stand-in (every pair met once and tied) so one batched
    # solve serves all rows; their results are replaced by NaN below.
    stand_in = 1.0 - np.eye(size)
    games = np.where(defined[..., None, None], games, stand_in)
    points = np.where(defined[..., None, None], points, stand_in / 2)
    wins = points.sum(axis=-1)
    theta = np.zeros(points.shape[:-1])
    # Without a prior the likelihood does not change when every log strength moves by the same amount;
    # adding the all-ones matrix to the Hessian's Laplacian pins the mean (the gradient sums to zero).
    # The prior's virtual opponent pins the strengths by itself.
    pin = np.ones((size, size)) / size if prior_games == 0 else np.zeros((size, size))
    converged = np.zeros(defined.shape, dtype=bool)
    for _ in range(_MAX_ITERATIONS):
        p = expit(theta[..., :, None] - theta[..., None, :])
        gradient = wins - (games * p).sum(axis=-1)
        curvature = games * p * (1.0 - p)
        laplacian = -curvature  # the negative Hessian: a weighted graph Laplacian
        laplacian[..., np.arange(size), np.arange(size)] += curvature.sum(axis=-1)
        if prior_games:
            against_prior = expit(theta)
            gradient = gradient + prior_games * (0.5 - against_prior)
            laplacian[..., np.arange(size), np.arange(size)] += prior_games * against_prior * (1.0 - against_prior)
        step = np.linalg.solve(laplacian + pin, gradient[..., None])[..., 0]
        largest = np.abs(step).max(axis=-1, keepdims=True)
        step = step * np.minimum(1.0, _MAX_STEP / np.maximum(largest, 1e-300))
        theta = theta + step
        converged = largest[..., 0] < _TOLERANCE
        if converged.all():
            break
    theta = theta - theta.mean(axis=-1, keepdims=True)
    return np.where((defined & converged)[..., None], theta, np.nan)


def scores(theta: np.ndarray) -> np.ndarray:
    """Log strengths on the score scale: 400 log10(s) + 1000."""
    return BASE + SCALE * np.asarray(theta) / math.log(10.0)


def ranks(values: np.ndarray, tolerance: float = 1e-6) -> np.ndarray:
    """1 + how many systems score higher (equal scores share a rank), per batch row; NaN stays NaN."""
    values = np.asarray(values, dtype=float)
    above = (values[..., None, :] > values[..., :, None] + tolerance).sum(axis=-1).astype(float) + 1.0
    return np.where(np.isnan(values), np.nan, above)
