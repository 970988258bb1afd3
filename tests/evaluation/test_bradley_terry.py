"""Bradley-Terry fits against an independent maximum-likelihood fit (tests/independent_fit.py), the cases where no maximum exists,
and the rank correlations against scipy's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from independent_fit import bradley_terry_scores
from scipy import stats

from trace_eval.evaluation import bradley_terry, metrics


def simulate(strengths: np.ndarray, pairs: int, tie_share: float, seed: int):
    """Pairs of distinct systems drawn at random; outcomes from the Bradley-Terry model, a share of them ties."""
    rng = np.random.default_rng(seed)
    n = len(strengths)
    first = rng.integers(0, n, pairs)
    second = (first + rng.integers(1, n, pairs)) % n
    p_first = strengths[first] / (strengths[first] + strengths[second])
    draw = rng.random(pairs)
    tie = rng.random(pairs) < tie_share
    return first, second, np.where(tie, 0.5, (draw < p_first).astype(float))


def counts(first: np.ndarray, second: np.ndarray, scored_by_first: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    points = np.zeros((n, n))
    games = np.zeros((n, n))
    np.add.at(points, (first, second), scored_by_first)
    np.add.at(points, (second, first), 1 - scored_by_first)
    np.add.at(games, (first, second), 1)
    np.add.at(games, (second, first), 1)
    return points, games


def test_scores_equal_an_independent_maximum_likelihood_fit() -> None:
    strengths = np.array([4.0, 2.0, 1.0, 1.0, 0.5, 0.2, 0.1])
    first, second, outcome = simulate(strengths, 600, tie_share=0.3, seed=1)
    points, games = counts(first, second, outcome, len(strengths))
    ours = bradley_terry.scores(bradley_terry.fit(points, games))
    assert np.abs(ours - bradley_terry_scores(first, second, outcome, len(strengths))).max() < 0.01
    assert ours.mean() == pytest.approx(1000.0)  # geometric mean of the strengths 1


def test_many_pairs_recover_the_strengths_they_were_drawn_from() -> None:
    strengths = np.array([3.0, 1.5, 1.0, 0.6, 0.25])
    first, second, outcome = simulate(strengths, 40000, tie_share=0.0, seed=2)
    points, games = counts(first, second, outcome, len(strengths))
    truth = 400 * np.log10(strengths / np.exp(np.log(strengths).mean())) + 1000
    assert np.abs(bradley_terry.scores(bradley_terry.fit(points, games)) - truth).max() < 15


def test_a_batch_of_fits_equals_the_fits_one_by_one() -> None:
    strengths = np.array([2.0, 1.0, 0.5, 0.3])
    batch = [counts(*simulate(strengths, 200, 0.2, seed), 4) for seed in range(5)]
    together = bradley_terry.fit(np.stack([p for p, _ in batch]), np.stack([g for _, g in batch]))
    for row, (points, games) in zip(together, batch):
        assert np.allclose(row, bradley_terry.fit(points, games), atol=1e-9)


def test_a_tie_is_half_a_win_to_each_side() -> None:
    # a beat b twice and tied once, so a scored 2.5 of 3: s_a / (s_a + s_b) = 5/6, a strength ratio of 5.
    points = np.array([[0, 2.5], [0.5, 0]])
    games = np.array([[0, 3.0], [3.0, 0]])
    a, b = bradley_terry.scores(bradley_terry.fit(points, games))
    assert a - b == pytest.approx(400 * math.log10(5))
    assert (a + b) / 2 == pytest.approx(1000)


@pytest.mark.parametrize(
    "points, games",
    [
        # a won both of its pairs: its score would be infinite.
        ([[0, 1, 1], [0, 0, 1], [0, 0.5, 0]], [[0, 1, 1], [1, 0, 2], [1, 2, 0]]),
        # a and b never scored against c and d, who met only each other and them: two groups.
        (
            [[0, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 1], [1, 1, 1, 0]],
            [[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 2], [1, 1, 2, 0]],
        ),
    ],
)
def test_no_maximum_gives_nan_never_a_number(points, games) -> None:
    points, games = np.array(points, dtype=float), np.array(games, dtype=float)
    assert not bradley_terry.strongly_connected(points)
    assert np.isnan(bradley_terry.fit(points, games)).all()
    # In a batch the row without a maximum does not disturb the others.
    fine = np.where(games > 0, games / 2, 0.0)
    both = bradley_terry.fit(np.stack([points, fine]), np.stack([games, games]))
    assert np.isnan(both[0]).all() and np.allclose(both[1], 0.0)


def test_ranks_share_a_place_on_equal_scores() -> None:
    assert bradley_terry.ranks(np.array([900.0, 1100.0, 900.0, np.nan])).tolist()[:3] == [2.0, 1.0, 2.0]
    assert np.isnan(bradley_terry.ranks(np.array([1.0, np.nan]))[1])


def test_rank_correlations_equal_scipy_and_are_vectorised() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 9))
    y = x + rng.normal(scale=0.8, size=(40, 9))
    y[0, :3] = y[0, 0]  # ties on one side
    taus, rhos = metrics.kendall_tau_b(x, y), metrics.spearman_rho(x, y)
    for row in range(40):
        assert taus[row] == pytest.approx(stats.kendalltau(x[row], y[row]).statistic)
        assert rhos[row] == pytest.approx(stats.spearmanr(x[row], y[row]).statistic)
    assert np.isnan(metrics.kendall_tau_b(np.ones(4), np.arange(4.0)))  # one side constant
    assert np.isnan(metrics.spearman_rho(np.array([1.0, np.nan, 3.0]), np.arange(3.0)))


def test_the_weak_prior_keeps_scores_finite_where_one_system_won_every_pair() -> None:
    # 0 beat 1 and 2 every time; 1 and 2 split their games: no maximum-likelihood fit exists.
    first = np.array([0, 0, 0, 0, 1, 1, 2, 2, 1])
    second = np.array([1, 1, 2, 2, 2, 2, 1, 1, 0])
    outcome = np.array([1, 1, 1, 1, 1, 0, 1, 0.5, 0])
    points, games = counts(first, second, outcome, 3)
    assert np.isnan(bradley_terry.fit(points, games)).all()
    theta = bradley_terry.fit_with_prior(points, games)
    expected = bradley_terry_scores(first, second, outcome, 3, prior_games=bradley_terry.PRIOR_GAMES)
    np.testing.assert_allclose(bradley_terry.scores(theta), expected, atol=1e-3)
    assert np.isfinite(theta).all() and theta[0] > max(theta[1], theta[2]) and theta.mean() == pytest.approx(0.0)
    above, below = bradley_terry.unbounded(points)
    assert above.tolist() == [True, False, False] and below.tolist() == [False, True, True]
    # Where the maximum exists, nothing is open, and a batch mixes both kinds of row.
    connected = points.copy()
    connected[1, 0] = connected[0, 1] = 1.0
    assert not np.concatenate(bradley_terry.unbounded(connected)).any()
    batch = bradley_terry.fit_with_prior(np.stack([points, connected]), np.stack([games, games]))
    np.testing.assert_allclose(batch[0], theta, atol=1e-9)


def test_a_stronger_prior_pulls_the_scores_together() -> None:
    first, second, outcome = np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1.0, 1.0, 1.0])
    points, games = counts(first, second, outcome, 3)
    weak = bradley_terry.fit_with_prior(points, games, 1.0)
    strong = bradley_terry.fit_with_prior(points, games, 10.0)
    assert np.ptp(strong) < np.ptp(weak) and list(np.argsort(-weak)) == [0, 1, 2]
    with pytest.raises(ValueError, match="expected a positive number"):
        bradley_terry.fit_with_prior(points, games, 0.0)
