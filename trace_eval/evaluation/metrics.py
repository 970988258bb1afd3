"""Agreement statistics: small pure functions over label sequences and counts.

Every function returns None (never NaN) where a value is undefined, so the
caller can write JSON with the reason beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse, stats

from fusion import LABELS, WINNERS

TIE = "tie"
# Below this many discordant pairs the chi-square approximation of McNemar's
# test is poor, so the exact binomial test is used instead.
MCNEMAR_EXACT_BELOW = 25


def collapse_ties(label: str) -> str:
    """3-way view: both_good and both_bad become one "tie"."""
    return label if label in WINNERS else TIE


@dataclass(frozen=True)
class Proportion:
    """`correct` of `n`; `value` is None when n is 0."""

    correct: int
    n: int

    @property
    def value(self) -> float | None:
        return self.correct / self.n if self.n else None


def accuracy(predicted: Sequence[str], human: Sequence[str]) -> Proportion:
    """Share of positions where the two label sequences agree."""
    if len(predicted) != len(human):
        raise ValueError(f"label sequences differ in length: {len(predicted)} vs {len(human)}")
    return Proportion(sum(p == h for p, h in zip(predicted, human)), len(human))


def confusion_matrix(predicted: Sequence[str], human: Sequence[str], labels: Sequence[str] = LABELS) -> np.ndarray:
    """Counts with rows = human label and columns = predicted label, in `labels` order."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for p, h in zip(predicted, human, strict=True):
        matrix[index[h], index[p]] += 1
    return matrix


def kappa_from_confusion(matrix: np.ndarray) -> np.ndarray:
    """Cohen's kappa of square count matrices (..., k, k); NaN where chance agreement is total.

    Vectorised over leading axes so bootstrap resamples are computed at once.
    """
    matrix = np.asarray(matrix, dtype=float)
    total = matrix.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(matrix, axis1=-2, axis2=-1) / total
        chance = (matrix.sum(axis=-1) * matrix.sum(axis=-2)).sum(axis=-1) / total**2
        return (observed - chance) / (1.0 - chance)


def cohen_kappa(predicted: Sequence[str], human: Sequence[str], labels: Sequence[str] = LABELS) -> float | None:
    """Cohen's kappa between two raters; None when undefined (no items, or chance agreement is 1)."""
    if not human:
        return None
    value = float(kappa_from_confusion(confusion_matrix(predicted, human, labels)))
    return None if np.isnan(value) else value


@dataclass(frozen=True)
class McNemarResult:
    """Two-sided McNemar test on paired correctness.

    `only_a` = items run A got right and run B wrong; `only_b` the reverse.
    `method` is "exact" (binomial on the discordant pairs) or "chi2" (with
    continuity correction, or without when `continuity` was False).
    """

    only_a: int
    only_b: int
    statistic: float
    p_value: float
    method: str


def mcnemar(only_a: int, only_b: int, exact_below: int = MCNEMAR_EXACT_BELOW, continuity: bool = True) -> McNemarResult:
    """McNemar's test from the two discordant counts.

    With fewer than `exact_below` discordant pairs the exact two-sided binomial
    test (p = 0.5) is used and `statistic` is min(only_a, only_b); otherwise the
    chi-square statistic with one degree of freedom.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got {only_a} and {only_b}")
    discordant = only_a + only_b
    if discordant < exact_below:
        smaller = min(only_a, only_b)
        p = 1.0 if discordant == 0 else min(1.0, 2.0 * float(stats.binom.cdf(smaller, discordant, 0.5)))
        return McNemarResult(only_a, only_b, float(smaller), p, "exact")
    difference = abs(only_a - only_b) - (1.0 if continuity else 0.0)
    statistic = max(difference, 0.0) ** 2 / discordant
    return McNemarResult(only_a, only_b, statistic, float(stats.chi2.sf(statistic, df=1)), "chi2")


def bootstrap_totals(
    item_values: np.ndarray | sparse.sparray, resamples: int, seed: int, chunk: int = 250
) -> np.ndarray:
    """Column sums of `item_values` (items x columns) over `resamples` bootstrap resamples of the items.

    Every resample draws the items with replacement once and applies the same
    draw to every column, so statistics computed from different columns (runs,
    policies, metrics) are paired. `item_values` may be a scipy sparse array
    (items that touch few of many columns, as pairwise outcomes do). Returns a
    (resamples x columns) array.
    """
    values = item_values if sparse.issparse(item_values) else np.asarray(item_values, dtype=float)
    if values.ndim != 2:
        raise ValueError("item_values must be a 2-D (items x columns) array")
    n_items = values.shape[0]
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    rng = np.random.default_rng(seed)
    totals = np.empty((resamples, values.shape[1]))
    if n_items == 0:
        totals[:] = 0.0
        return totals
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        drawn = rng.integers(0, n_items, size=(rows, n_items))
        # Multiplicity of each item in each resample, then one matrix product.
        flat = (drawn + np.arange(rows)[:, None] * n_items).ravel()
        weights = np.bincount(flat, minlength=rows * n_items).reshape(rows, n_items)
        totals[start : start + rows] = weights @ values
    return totals


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between x and y along the last axis, vectorised over the leading axes (one
    value per bootstrap resample); NaN where either side is constant or holds a NaN."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    upper = np.triu_indices(x.shape[-1], 1)
    dx = np.sign(x[..., :, None] - x[..., None, :])[..., upper[0], upper[1]]
    dy = np.sign(y[..., :, None] - y[..., None, :])[..., upper[0], upper[1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (dx * dy).sum(axis=-1) / np.sqrt((dx != 0).sum(axis=-1) * (dy != 0).sum(axis=-1))
    return np.where(np.isnan(x).any(axis=-1) | np.isnan(y).any(axis=-1), np.nan, tau)


def spearman_rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho (Pearson's r of the ranks, ties given their mean rank) along the last axis,
    vectorised over the leading axes; NaN where either side is constant or holds a NaN."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    missing = np.isnan(x).any(axis=-1) | np.isnan(y).any(axis=-1)
    rx = stats.rankdata(np.nan_to_num(x), axis=-1)
    ry = stats.rankdata(np.nan_to_num(y), axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rx * ry).sum(axis=-1) / np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    return np.where(missing, np.nan, rho)


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of bootstrap samples, ignoring undefined (NaN) resamples; None if all are."""
    samples = np.asarray(samples, dtype=float)
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def wilson_interval(successes: float, n: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion `successes` / `n`; None when n is 0.

    Unlike a bootstrap percentile interval it never collapses to a point on a small sample: 6 of 6 is
    [61%, 100%], not [100%, 100%]. `successes` may be fractional (a tie counted half).
    """
    if n <= 0:
        return None
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # The interval holds the estimate exactly (rounding must not put 6 of 6 just under its own upper end).
    return max(0.0, min(p, float(centre - half))), min(1.0, max(p, float(centre + half)))


Statistic = Callable[[np.ndarray], np.ndarray]


def ratio(totals: np.ndarray) -> np.ndarray:
    """numerator / denominator from the last axis (num, den); NaN where den is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return totals[..., 0] / totals[..., 1]


def difference_of_ratios(totals: np.ndarray) -> np.ndarray:
    """(num_a - num_b) / den from the last axis (num_a, num_b, den): a paired accuracy difference."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (totals[..., 0] - totals[..., 1]) / totals[..., 2]


def kappa_statistic(totals: np.ndarray) -> np.ndarray:
    """Cohen's kappa from flattened k x k confusion counts on the last axis."""
    k = round(np.sqrt(totals.shape[-1]))
    return kappa_from_confusion(totals.reshape(*totals.shape[:-1], k, k))
