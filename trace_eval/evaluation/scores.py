"""Metrics of rubric evaluations, registered by name: a rubric's `metrics` lists what is reported.

Each metric reads the items of one judge run (`ItemScores`: the run's labels, the
human labels, the samples and orders behind them) and returns one slot per
dimension it applies to, plus "all" where pooling the dimensions means
something. A slot is {"value": number or None, "n": items, ...}; a None value
comes with its "reason", never a NaN.

    @register("accuracy", "judge label equals the human label")
    def accuracy(rubric, items): ...

The whole TRACE report (4-, 3-, 2-way accuracy, kappa, fusion table, probes,
McNemar) is not one of these: a rubric asks for it with `metrics: [trace]`.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trace_eval.rubrics import Rubric

__all__ = ["METRICS", "ItemScores", "Metric", "UnknownMetric", "agreement_credit", "compute", "register"]


@dataclass(frozen=True)
class ItemScores:
    """One benchmark item as one run judged it."""

    id: str
    system: str | None  # the system that made a pointwise item's answer (manifest `model`)
    judged: dict[str, Any] | None  # the run's labels when its status is ok, else None
    human: dict[str, Any] = field(default_factory=dict)  # human labels in the rubric's label spaces
    samples: list[dict[str, Any]] = field(default_factory=list)  # every valid answer in the original order
    orders: dict[str, dict[str, Any]] | None = None  # --swap: {"original", "swapped"} (swapped mapped back)


Compute = Callable[[Rubric, list[ItemScores]], dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class Metric:
    name: str
    description: str  # one line, written to metrics.json and the report
    compute: Compute


METRICS: dict[str, Metric] = {}


class UnknownMetric(ValueError):
    """A rubric names a metric that is not registered."""


def register(name: str, description: str) -> Callable[[Compute], Compute]:
    def decorate(function: Compute) -> Compute:
        if name in METRICS:
            raise ValueError(f"metric {name!r} is registered twice")
        METRICS[name] = Metric(name, description, function)
        return function

    return decorate


def compute(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, dict[str, Any]]]:
    """Every metric the rubric lists, by name."""
    unknown = [name for name in rubric.metrics if name not in METRICS]
    if unknown:
        raise UnknownMetric(f"rubric {rubric.name} lists unknown metric(s) {', '.join(unknown)}; "
                            f"expected among: {', '.join(METRICS)}")
    return {name: METRICS[name].compute(rubric, items) for name in rubric.metrics}


# -- helpers ----------------------------------------------------------------------------

def _both(items: list[ItemScores], dim: str) -> list[tuple[Any, Any]]:
    """(judge, human) labels of the items that have both on `dim`."""
    return [(i.judged[dim], i.human[dim]) for i in items
            if i.judged is not None and i.judged.get(dim) is not None and i.human.get(dim) is not None]


def _mean_slot(values: list[float], empty: str, **extra: Any) -> dict[str, Any]:
    if not values:
        return {"value": None, "n": 0, "reason": empty}
    return {"value": sum(values) / len(values), "n": len(values), **extra}


def _dims(rubric: Rubric, numeric: bool | None = None) -> list[str]:
    return [d.name for d in rubric.dimensions if numeric is None or d.labels.numeric == numeric]


def _pool(slots: dict[str, dict[str, Any]], totals: list[float], empty: str) -> dict[str, dict[str, Any]]:
    """`slots` with "all": the mean over every (item, dimension) value in `totals`."""
    if len(slots) > 1:
        slots["all"] = _mean_slot(totals, empty)
    return slots


NO_LABELS = "no item has both a judge label and a human label on this dimension"


# -- metrics ----------------------------------------------------------------------------

@register("accuracy", "judge label equals the human label (exact match; human means such as 3.5 never match)")
def accuracy(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots, pooled = {}, []
    for dim in _dims(rubric):
        hits = [float(j == h) for j, h in _both(items, dim)]
        slots[dim] = _mean_slot(hits, NO_LABELS, correct=int(sum(hits)))
        pooled += hits
    if len(slots) > 1:
        slots["all"] = _mean_slot(pooled, NO_LABELS, correct=int(sum(pooled)))
    return slots


def agreement_credit(judge: Any, human: Any, ties: frozenset) -> float:
    """1 for the same label, 0.5 when exactly one side says tie, 0 otherwise (typed ties count as one tie)."""
    judge_tie, human_tie = judge in ties, human in ties
    if judge == human or (judge_tie and human_tie):
        return 1.0
    return 0.5 if judge_tie != human_tie else 0.0


@register("agreement", "pairwise agreement with humans: 1 for the same label, 0.5 when one side says tie "
                       "(the other names a winner), 0 for opposite winners")
def agreement(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots, pooled = {}, []
    for dim in _dims(rubric, numeric=False):
        ties = rubric.dimension(dim).labels.ties
        credits = [agreement_credit(j, h, ties) for j, h in _both(items, dim)]
        slots[dim] = _mean_slot(credits, NO_LABELS, credit=sum(credits))
        pooled += credits
    return _pool(slots, pooled, NO_LABELS)


@register("position_consistency", "share of items whose label stays the same when the two responses are shown "
                                  "in the other order (judge --swap)")
def position_consistency(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    swapped = [i for i in items if i.orders and i.orders.get("original") and i.orders.get("swapped")]
    empty = "judged without --swap: run the judge with --swap to measure it"
    slots, pooled = {}, []
    for dim in _dims(rubric, numeric=False):
        same = [float(i.orders["original"][dim] == i.orders["swapped"][dim])  # type: ignore[index]
                for i in swapped if dim in i.orders["original"]]  # type: ignore[index]
        slots[dim] = _mean_slot(same, empty)
        pooled += same
    return _pool(slots, pooled, empty)


@register("mae", "mean absolute difference between the judge's and the human score")
def mae(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots, pooled = {}, []
    for dim in _dims(rubric, numeric=True):
        errors = [abs(float(j) - float(h)) for j, h in _both(items, dim)]
        slots[dim] = _mean_slot(errors, NO_LABELS)
        pooled += errors
    scales = {rubric.dimension(d).labels.values for d in slots}
    return _pool(slots, pooled, NO_LABELS) if len(scales) == 1 else slots


PEARSON_MIN_ITEMS = 3  # with two items the correlation is always +1 or -1


@register("pearson", "Pearson correlation between the judge's and the human scores over the items "
                     f"(at least {PEARSON_MIN_ITEMS})")
def pearson(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    from scipy import stats

    slots = {}
    for dim in _dims(rubric, numeric=True):
        pairs = _both(items, dim)
        if len(pairs) < PEARSON_MIN_ITEMS:
            slots[dim] = {"value": None, "n": len(pairs),
                          "reason": f"needs at least {PEARSON_MIN_ITEMS} items with both scores"}
            continue
        judge, human = [float(j) for j, _ in pairs], [float(h) for _, h in pairs]
        constant = [who for who, xs in (("the judge", judge), ("humans", human)) if len(set(xs)) == 1]
        if constant:
            slots[dim] = {"value": None, "n": len(pairs),
                          "reason": f"undefined: {' and '.join(constant)} gave every item the same score"}
            continue
        result = stats.pearsonr(judge, human)
        slots[dim] = {"value": float(result.statistic), "n": len(pairs), "p_value": float(result.pvalue)}
    return slots


@register("system_means", "mean judge score and mean human score of each system's answers "
                          "(system: the manifest item's `model`)")
def system_means(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots = {}
    for dim in _dims(rubric, numeric=True):
        systems: dict[str, dict[str, list[float]]] = {}
        for item in items:
            entry = systems.setdefault(item.system or "(unnamed)", {"judge": [], "human": []})
            if item.judged is not None and item.judged.get(dim) is not None:
                entry["judge"].append(float(item.judged[dim]))
            if item.human.get(dim) is not None:
                entry["human"].append(float(item.human[dim]))
        table = {
            name: {"judge": sum(v["judge"]) / len(v["judge"]) if v["judge"] else None, "judge_n": len(v["judge"]),
                   "human": sum(v["human"]) / len(v["human"]) if v["human"] else None, "human_n": len(v["human"])}
            for name, v in sorted(systems.items()) if v["judge"] or v["human"]
        }
        slots[dim] = {"systems": table, "n": sum(s["judge_n"] for s in table.values())}
    return slots


@register("self_consistency", "over items answered several times (judge --samples N): the share of answers "
                              "equal to the item's most frequent answer, averaged over items; numeric scales "
                              "also give the mean standard deviation of an item's answers")
def self_consistency(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    empty = "one answer per item: run the judge with --samples N (N >= 2) and a temperature above 0"
    slots = {}
    for dim in _dims(rubric):
        shares, spreads = [], []
        for item in items:
            answers = [s[dim] for s in item.samples if s.get(dim) is not None]
            if len(answers) < 2:
                continue
            shares.append(Counter(answers).most_common(1)[0][1] / len(answers))
            if rubric.dimension(dim).labels.numeric:
                mean = sum(answers) / len(answers)
                spreads.append(math.sqrt(sum((a - mean) ** 2 for a in answers) / len(answers)))
        extra = {"mean_std": sum(spreads) / len(spreads)} if spreads else {}
        slots[dim] = _mean_slot(shares, empty, **extra)
    return slots
