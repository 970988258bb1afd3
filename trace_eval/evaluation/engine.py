"""The metrics engine of every evaluation, whatever the rubric.

Statistics are registered over one list of evaluated items; `fill` then computes
them all from one set of paired bootstrap resamples (bootstrap.PairedBootstrap),
so the intervals of different runs, metrics and policies are paired. Proportions get
their value and a Wilson score interval (one interval for one count, never zero-width
on a small sample); Cohen's kappa and paired accuracy differences their value and
bootstrap interval;
a metric that computes its own values (scores.py) gets the intervals of the slots
its columns describe. McNemar's test compares two runs item by item.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import metrics
from .bootstrap import BootstrapSettings, Estimate, PairedBootstrap
from .metrics import wilson_interval

PEARSON_MIN_ITEMS = 3  # with two items the correlation is always +1 or -1


@dataclass(frozen=True)
class MeanColumns:
    """A slot that is a mean of values carried by items: each item's sum of values and how many it has.

    An item with values on several dimensions (a pooled "all") keeps them together when resampled.
    """

    sums: dict[str, float]  # item id -> sum of the item's values
    counts: dict[str, int]  # item id -> how many values the item has


@dataclass(frozen=True)
class PairColumns:
    """A correlation slot: each item's (judge, human) scores."""

    pairs: dict[str, tuple[float, float]]  # item id -> (judge score, human score)


@dataclass(frozen=True)
class KappaColumns:
    """A Cohen's kappa slot: each item's (judge, human) labels, in a label space of `labels`."""

    pairs: dict[str, tuple[Any, Any]]  # item id -> (judge label, human label)
    labels: tuple[Any, ...]


Columns = MeanColumns | PairColumns | KappaColumns
SlotPath = tuple[str, ...]  # keys from a metric's result down to a value: ("all",), ("style", "systems", "a", "judge")

_MISSING = object()


class Estimates:
    """Statistics over the evaluated items `ids`, filled in by one bootstrap."""

    def __init__(self, ids: list[str]):
        self.ids = ids
        self.boot = PairedBootstrap(len(ids))
        self._row = {item: row for row, item in enumerate(ids)}
        self._fills: dict[Hashable, Callable[[Estimate], None]] = {}

    def column(self, by_item: Mapping[str, float]) -> np.ndarray:
        """A per-item column from values by item id (0 for the items not given)."""
        column = np.zeros(len(self.ids))
        for item, value in by_item.items():
            column[self._row[item]] = value
        return column

    # -- statistics whose value and interval both come from here

    def proportion(self, key: Hashable, correct: np.ndarray, eligible: np.ndarray, empty: str) -> dict[str, Any]:
        """correct / eligible over the items (0/1 columns); `empty` says why there is no value when none is eligible."""
        correct = correct & eligible
        slot: dict[str, Any] = {"correct": int(correct.sum()), "n": int(eligible.sum())}
        if slot["n"] == 0:
            slot.update(value=None, ci95=None, reason=empty)
            return slot
        # A count's interval is the Wilson score interval, the same wherever the count is shown: a bootstrap
        # percentile interval collapses on small samples (6 of 6 would read [100%, 100%]).
        interval = wilson_interval(slot["correct"], slot["n"])
        slot.update(value=slot["correct"] / slot["n"], ci95=list(interval) if interval else None)
        return slot

    def kappa(
        self, key: Hashable, human: Sequence[Any], predicted: Sequence[Any], labels: Sequence[Any]
    ) -> dict[str, Any]:
        """Cohen's kappa over the items where both labels are given (None elsewhere)."""
        n = sum(h is not None and p is not None for h, p in zip(human, predicted))
        slot: dict[str, Any] = {"n": n}
        if n == 0:
            slot.update(value=None, ci95=None, reason="no item has both labels")
            return slot
        self.boot.add_kappa(key, human, predicted, labels)
        self._fills[key] = lambda estimate: _fill_value(slot, estimate)
        return slot

    def difference(
        self, key: Hashable, correct_a: np.ndarray, correct_b: np.ndarray, eligible: np.ndarray
    ) -> dict[str, Any]:
        """The paired difference of two proportions over the same eligible items."""
        slot: dict[str, Any] = {}
        if not eligible.any():
            slot.update(value=None, ci95=None, reason="no item scored in both runs")
            return slot
        self.boot.add_difference(key, correct_a & eligible, correct_b & eligible, eligible)
        self._fills[key] = lambda estimate: _fill_value(slot, estimate)
        return slot

    # -- intervals of values a metric computed itself

    def intervals(self, key: tuple, slots: dict[str, Any], columns: dict[SlotPath, Columns]) -> dict[str, Any]:
        """One metric's intervals, keyed like its slots: {"ci95": [low, high]} or {"ci95": None, "reason": ...}.

        `key` (run, metric) keeps the statistics of different runs and metrics apart.
        """
        intervals: dict[str, Any] = {}
        for path, spec in columns.items():
            node = _at(slots, path)
            if node is _MISSING:
                continue
            value, reason = (node.get("value"), node.get("reason")) if isinstance(node, dict) else (node, None)
            if value is None:
                _put(intervals, path, {"ci95": None, "reason": reason or "no value on these items"})
                continue
            if len(spec.counts if isinstance(spec, MeanColumns) else spec.pairs) < 2:
                # Resampling one item always gives its own value back: a zero-width interval would mislead.
                _put(intervals, path, {"ci95": None, "reason": "one item: nothing to resample"})
                continue
            leaf: dict[str, Any] = {}
            _put(intervals, path, leaf)
            full = (*key, *path)
            self._register(full, spec)
            self._fills[full] = functools.partial(_fill_interval, leaf)
        return intervals

    def _register(self, key: tuple, spec: Columns) -> None:
        if isinstance(spec, MeanColumns):
            self.boot.add_mean(key, self.column(spec.sums), self.column(spec.counts))
        elif isinstance(spec, KappaColumns):
            judged: list[Any] = [None] * len(self.ids)
            people: list[Any] = [None] * len(self.ids)
            for item, (j, h) in spec.pairs.items():
                judged[self._row[item]], people[self._row[item]] = j, h
            self.boot.add_kappa(key, people, judged, spec.labels)
        else:
            judge = self.column({item: j for item, (j, _) in spec.pairs.items()})
            human = self.column({item: h for item, (_, h) in spec.pairs.items()})
            present = self.column(dict.fromkeys(spec.pairs, 1.0))
            self.boot.add_pearson(key, judge, human, present, min_items=PEARSON_MIN_ITEMS)

    def fill(self, settings: BootstrapSettings) -> None:
        """Compute every registered statistic and write its value and interval into its slot."""
        for key, estimate in self.boot.estimate(settings).items():
            self._fills[key](estimate)


def _fill_value(slot: dict[str, Any], estimate: Estimate) -> None:
    slot["value"] = estimate.value
    slot["ci95"] = list(estimate.interval) if estimate.interval else None
    if estimate.value is None:
        slot["reason"] = "undefined: chance agreement is total (both raters use one label)"


def _fill_interval(leaf: dict[str, Any], estimate: Estimate) -> None:
    leaf["ci95"] = list(estimate.interval) if estimate.interval else None
    if estimate.interval is None:
        leaf["reason"] = "undefined in every bootstrap resample"


def _at(slots: dict[str, Any], path: SlotPath) -> Any:
    """What `path` leads to in a metric's result, or _MISSING where the metric reports no such slot."""
    node: Any = slots
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _put(tree: dict[str, Any], path: SlotPath, leaf: dict[str, Any]) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = leaf


def compare(
    estimates: Estimates,
    key: Hashable,
    names: tuple[str, str],
    a: tuple[np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray],
) -> dict[str, Any]:
    """Two runs item by item: two-sided McNemar on their correctness over the items both scored, and the
    paired accuracy difference with its interval. `a` and `b` are each run's (correct, scored) masks."""
    (correct_a, scored_a), (correct_b, scored_b) = a, b
    common = scored_a & scored_b
    only_a = int((correct_a & ~correct_b & common).sum())
    only_b = int((correct_b & ~correct_a & common).sum())
    test = metrics.mcnemar(only_a, only_b)
    return {
        "a": names[0],
        "b": names[1],
        "n": int(common.sum()),
        "both_correct": int((correct_a & correct_b & common).sum()),
        "only_a_correct": only_a,
        "only_b_correct": only_b,
        "neither_correct": int((~correct_a & ~correct_b & common).sum()),
        "method": test.method,
        "statistic": test.statistic,
        "p_value": test.p_value,
        "accuracy_difference": estimates.difference(key, correct_a, correct_b, common),
    }
