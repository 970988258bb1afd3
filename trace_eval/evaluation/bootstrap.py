"""Paired bootstrap over many statistics at once.

Statistics are registered with their item-level columns; one set of resamples
(the same items drawn for every column) then gives every interval, so the
intervals of different runs and policies are paired, and a difference between
two runs gets its own interval from the same draws.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from . import metrics
from .metrics import Statistic


@dataclass(frozen=True)
class BootstrapSettings:
    resamples: int = 2000
    seed: int = 0
    confidence: float = 0.95

    def describe(self) -> dict:
        return {
            "method": "paired non-parametric bootstrap (items resampled jointly across runs), percentile interval",
            "resamples": self.resamples,
            "seed": self.seed,
            "confidence": self.confidence,
        }


DEFAULT_BOOTSTRAP = BootstrapSettings()


@dataclass
class _Entry:
    columns: slice
    statistic: Statistic


@dataclass
class PairedBootstrap:
    """Collects statistics over one fixed list of items; `estimate` computes them all."""

    n_items: int
    _columns: list[np.ndarray] = field(default_factory=list)
    _entries: dict[Hashable, _Entry] = field(default_factory=dict)

    def add(self, key: Hashable, columns: Sequence[np.ndarray], statistic: Statistic) -> None:
        """Register `statistic(totals)`, where totals are the sums of `columns` over the (resampled) items."""
        if key in self._entries:
            raise ValueError(f"statistic {key!r} added twice")
        start = len(self._columns)
        for column in columns:
            column = np.asarray(column, dtype=float)
            if column.shape != (self.n_items,):
                raise ValueError(f"statistic {key!r}: column has shape {column.shape}, expected ({self.n_items},)")
            self._columns.append(column)
        self._entries[key] = _Entry(slice(start, len(self._columns)), statistic)

    def add_ratio(self, key: Hashable, numerator: np.ndarray, denominator: np.ndarray) -> None:
        """A proportion: sum(numerator) / sum(denominator) over the items (both 0/1 per item)."""
        self.add(key, [numerator, denominator], metrics.ratio)

    def add_difference(self, key: Hashable, correct_a: np.ndarray, correct_b: np.ndarray, eligible: np.ndarray) -> None:
        """Paired difference of two proportions over the same eligible items."""
        self.add(key, [correct_a, correct_b, eligible], metrics.difference_of_ratios)

    def add_kappa(
        self, key: Hashable, rows: Sequence[str | None], cols: Sequence[str | None], labels: Sequence[str]
    ) -> None:
        """Cohen's kappa between two raters; items where either label is None are left out."""
        index = {label: i for i, label in enumerate(labels)}
        k = len(labels)
        onehot = np.zeros((self.n_items, k * k))
        for item, (a, b) in enumerate(zip(rows, cols, strict=True)):
            if a is not None and b is not None:
                onehot[item, index[a] * k + index[b]] = 1.0
        self.add(key, list(onehot.T), metrics.kappa_statistic)

    def add_mean(self, key: Hashable, sums: np.ndarray, counts: np.ndarray) -> None:
        """A mean of values that items carry: sum(sums) / sum(counts) over the items.

        An item may carry several values (counts above 1, e.g. one per rubric
        dimension); they stay together in every resample.
        """
        self.add(key, [sums, counts], metrics.ratio)

    def add_pearson(self, key: Hashable, x: np.ndarray, y: np.ndarray, present: np.ndarray, min_items: int = 3) -> None:
        """Pearson correlation of x and y over the items where `present` is 1; undefined below `min_items` of them."""
        x, y, present = (np.asarray(a, dtype=float) for a in (x, y, present))
        x, y = x * present, y * present
        self.add(key, [present, x, y, x * x, y * y, x * y], partial(pearson_statistic, min_items=min_items))

    def estimate(self, settings: BootstrapSettings) -> dict[Hashable, Estimate]:
        """Point value (all items once) and percentile interval of every registered statistic."""
        if not self._entries:
            return {}
        matrix = np.stack(self._columns, axis=1) if self._columns else np.zeros((self.n_items, 0))
        point_totals = matrix.sum(axis=0)
        resampled = metrics.bootstrap_totals(matrix, settings.resamples, settings.seed)
        results = {}
        for key, entry in self._entries.items():
            point = float(entry.statistic(point_totals[entry.columns]))
            samples = entry.statistic(resampled[:, entry.columns])
            value = None if np.isnan(point) else point
            interval = metrics.percentile_interval(samples, settings.confidence) if value is not None else None
            results[key] = Estimate(value, interval)
        return results


@dataclass(frozen=True)
class Estimate:
    value: float | None
    interval: tuple[float, float] | None


# A spread this small next to the squares themselves is rounding: the scores are constant.
_CONSTANT_SPREAD = 1e-12


def pearson_statistic(totals: np.ndarray, min_items: int = 3) -> np.ndarray:
    """Pearson's r from the last axis (n, sum x, sum y, sum x², sum y², sum xy); NaN where
    fewer than `min_items` items or either side is constant."""
    n, sx, sy, sxx, syy, sxy = np.moveaxis(np.asarray(totals, dtype=float), -1, 0)
    spread_x, spread_y = n * sxx - sx**2, n * syy - sy**2
    constant = (spread_x <= _CONSTANT_SPREAD * n * sxx) | (spread_y <= _CONSTANT_SPREAD * n * syy)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (n * sxy - sx * sy) / np.sqrt(spread_x * spread_y)
    return np.where((n < min_items) | constant, np.nan, np.clip(r, -1.0, 1.0))
