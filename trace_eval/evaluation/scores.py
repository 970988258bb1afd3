"""The metric registry: a rubric's `metrics` lists what its evaluation reports, by name.

Most metrics read the items of one judge run (`ItemScores`: the run's labels, the
human labels, the samples and orders behind them) and return one slot per
dimension they apply to, plus "all" where pooling the dimensions means
something. A slot is {"value": number or None, "n": items, ...}; a None value
comes with its "reason", never a NaN.

    @register("accuracy", "judge label equals the human label", columns=_resampled_means(_hits))
    def accuracy(rubric, items): ...

A metric's `columns` gives, for the slots that get a bootstrap interval, the
per-item values the slot is computed from (engine.MeanColumns, PairColumns,
KappaColumns), keyed by the slot's path; the metrics engine resamples the items of
every run together. The report of such metrics is rubric_report.

A metric may instead be a whole report of its own, registered with `register_report`:
TRACE's (analysis.py), which a rubric asks for with `metrics: [trace]`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from trace_eval.judge.runfolder import same_in_both_orders
from trace_eval.rubrics import Rubric
from trace_eval.rubrics.labels import LabelSpace, label_space

from .engine import PEARSON_MIN_ITEMS, Columns, KappaColumns, MeanColumns, PairColumns, SlotPath
from .records import OVERALL

if TYPE_CHECKING:
    from .bootstrap import BootstrapSettings
    from .records import HumanLabels, JudgeRun
    from .report import Block, EvaluationFiles

__all__ = [
    "METRICS",
    "ItemScores",
    "Metric",
    "Report",
    "UnknownMetric",
    "agreement_credit",
    "compute",
    "compute_columns",
    "register",
    "own_report",
    "register_report",
]


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
ColumnsOf = Callable[[Rubric, list[ItemScores]], dict[SlotPath, Columns]]


class Report(Protocol):
    """A whole evaluation report: what it adds to metrics.json, its pictures, its sections, its printed lines."""

    def evaluate(
        self, runs: list[JudgeRun], rubric: Rubric, human: HumanLabels, policy: str | None, settings: BootstrapSettings
    ) -> dict[str, Any]: ...

    def figures(self, metrics: dict[str, Any], out: Path) -> dict[str, Path]: ...

    def blocks(self, metrics: dict[str, Any]) -> list[Block]: ...

    def lines(self, files: EvaluationFiles) -> list[str]: ...


@dataclass(frozen=True)
class Metric:
    name: str
    description: str  # one line, written to metrics.json and the report
    compute: Compute | None = None  # the metric's slots on one run's items
    columns: ColumnsOf | None = None  # what the bootstrap intervals of its slots are computed from
    report: Report | None = None  # a metric that is a whole report of its own (TRACE's), listed alone


METRICS: dict[str, Metric] = {}


class UnknownMetric(ValueError):
    """A rubric names a metric that is not registered."""


def _add(metric: Metric) -> None:
    if metric.name in METRICS:
        raise ValueError(f"metric {metric.name!r} is registered twice")
    METRICS[metric.name] = metric


def register(name: str, description: str, columns: ColumnsOf | None = None) -> Callable[[Compute], Compute]:
    def decorate(function: Compute) -> Compute:
        _add(Metric(name, description, function, columns))
        return function

    return decorate


def register_report(name: str, description: str, report: Report) -> None:
    _add(Metric(name, description, report=report))


def _check(rubric: Rubric) -> None:
    unknown = [name for name in rubric.metrics if name not in METRICS]
    if unknown:
        raise UnknownMetric(
            f"rubric {rubric.name} lists unknown metric(s) {', '.join(unknown)}; expected among: {', '.join(METRICS)}"
        )


def own_report(rubric: Rubric) -> Report | None:
    """The whole report one of the rubric's metrics is (TRACE's), else None: the rubric then gets the report
    of its metrics (`rubric_report.report_of`, built on this registry)."""
    _check(rubric)
    return next((report for name in rubric.metrics if (report := METRICS[name].report)), None)


def compute(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, dict[str, Any]]]:
    """Every metric the rubric lists, by name."""
    _check(rubric)
    # a metric that is a whole report (TRACE's) computes within that report, not here
    return {name: compute(rubric, items) for name in rubric.metrics if (compute := METRICS[name].compute) is not None}


def compute_columns(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[SlotPath, Columns]]:
    """The bootstrap columns of every metric the rubric lists that has them, by name."""
    return {
        name: columns(rubric, items)
        for name in rubric.metrics
        if name in METRICS and (columns := METRICS[name].columns)
    }


# -- helpers ----------------------------------------------------------------------------

PerItem = dict[str, float]  # item id -> the item's value on one dimension


def _both_by_id(items: list[ItemScores], dim: str) -> dict[str, tuple[Any, Any]]:
    """(judge, human) labels of the items that have both on `dim`, by item id."""
    return {
        i.id: (i.judged[dim], i.human[dim])
        for i in items
        if i.judged is not None and i.judged.get(dim) is not None and i.human.get(dim) is not None
    }


def _both(items: list[ItemScores], dim: str) -> list[tuple[Any, Any]]:
    """(judge, human) labels of the items that have both on `dim`."""
    return list(_both_by_id(items, dim).values())


def _mean_slot(values: list[float], empty: str, **extra: Any) -> dict[str, Any]:
    if not values:
        return {"value": None, "n": 0, "reason": empty}
    return {"value": sum(values) / len(values), "n": len(values), **extra}


def _resampled_means(values_of: Callable[[Rubric, list[ItemScores]], dict[str, PerItem]]) -> ColumnsOf:
    """Columns of a metric whose slots are means of `values_of`: one slot per dimension, and "all" pooled."""

    def columns(rubric: Rubric, items: list[ItemScores]) -> dict[SlotPath, Columns]:
        per_dim = values_of(rubric, items)
        result: dict[SlotPath, Columns] = {
            (dim,): MeanColumns(values, dict.fromkeys(values, 1)) for dim, values in per_dim.items()
        }
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for dim, values in per_dim.items():
            if dim == OVERALL:
                continue  # "all" pools the dimensions, not the label fused from them
            for item, value in values.items():
                sums[item] = sums.get(item, 0.0) + value
                counts[item] = counts.get(item, 0) + 1
        result[("all",)] = MeanColumns(sums, counts)  # used only where the metric reports "all"
        return result

    return columns


def _dims(rubric: Rubric, numeric: bool | None = None, overall: bool = False) -> list[str]:
    """The rubric's dimensions (only the numeric or only the pairwise ones), and with `overall` its fused
    label when it has one: agreement metrics score it like one more pairwise dimension."""
    dims = [d.name for d in rubric.dimensions if numeric is None or d.labels.numeric == numeric]
    return dims + [OVERALL] if overall and rubric.fusion and not numeric else dims


def _space(rubric: Rubric, key: str) -> LabelSpace:
    return label_space("typed-tie") if key == OVERALL else rubric.dimension(key).labels


def _pool(slots: dict[str, dict[str, Any]], totals: list[float], empty: str) -> dict[str, dict[str, Any]]:
    """`slots` with "all": the mean over every (item, dimension) value in `totals`."""
    if len(set(slots) - {OVERALL}) > 1:
        slots["all"] = _mean_slot(totals, empty)
    return slots


NO_LABELS = "no item has both a judge label and a human label on this dimension"


# -- metrics ----------------------------------------------------------------------------


def _hits(rubric: Rubric, items: list[ItemScores]) -> dict[str, PerItem]:
    return {
        dim: {i: float(j == h) for i, (j, h) in _both_by_id(items, dim).items()} for dim in _dims(rubric, overall=True)
    }


@register(
    "accuracy",
    "judge label equals the human label (exact match; human means such as 3.5 never match)",
    columns=_resampled_means(_hits),
)
def accuracy(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots, pooled = {}, []
    for dim, by_item in _hits(rubric, items).items():
        hits = list(by_item.values())
        slots[dim] = _mean_slot(hits, NO_LABELS, correct=int(sum(hits)))
        pooled += hits if dim != OVERALL else []
    if len(set(slots) - {OVERALL}) > 1:
        slots["all"] = _mean_slot(pooled, NO_LABELS, correct=int(sum(pooled)))
    return slots


def agreement_credit(judge: Any, human: Any, ties: frozenset) -> float:
    """1 for the same label, 0.5 when exactly one side says tie, 0 otherwise (typed ties count as one tie)."""
    judge_tie, human_tie = judge in ties, human in ties
    if judge == human or (judge_tie and human_tie):
        return 1.0
    return 0.5 if judge_tie != human_tie else 0.0


def _credits(rubric: Rubric, items: list[ItemScores]) -> dict[str, PerItem]:
    return {
        dim: {i: agreement_credit(j, h, _space(rubric, dim).ties) for i, (j, h) in _both_by_id(items, dim).items()}
        for dim in _dims(rubric, numeric=False, overall=True)
    }


@register(
    "agreement",
    "pairwise agreement with humans: 1 for the same label, 0.5 when one side says tie "
    "(the other names a winner), 0 for opposite winners",
    columns=_resampled_means(_credits),
)
def agreement(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots, pooled = {}, []
    for dim, by_item in _credits(rubric, items).items():
        credits = list(by_item.values())
        slots[dim] = _mean_slot(credits, NO_LABELS, credit=sum(credits))
        pooled += credits if dim != OVERALL else []
    return _pool(slots, pooled, NO_LABELS)


def _label_pairs(rubric: Rubric, items: list[ItemScores]) -> dict[SlotPath, Columns]:
    return {
        (dim,): KappaColumns(_both_by_id(items, dim), tuple(_space(rubric, dim).values))
        for dim in _dims(rubric, numeric=False, overall=True)
    }


@register(
    "kappa", "Cohen's kappa between the judge's and the human labels (chance-corrected agreement)", columns=_label_pairs
)
def kappa(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    from .metrics import cohen_kappa

    slots: dict[str, dict[str, Any]] = {}
    for dim in _dims(rubric, numeric=False, overall=True):
        pairs = _both(items, dim)
        if not pairs:
            slots[dim] = {"value": None, "n": 0, "reason": NO_LABELS}
            continue
        value = cohen_kappa([j for j, _ in pairs], [h for _, h in pairs], _space(rubric, dim).values)
        slots[dim] = (
            {"value": value, "n": len(pairs)}
            if value is not None
            else {
                "value": None,
                "n": len(pairs),
                "reason": "undefined: chance agreement is total (both raters use one label)",
            }
        )
    return slots


def _same_in_both_orders(rubric: Rubric, items: list[ItemScores]) -> dict[str, PerItem]:
    same = same_in_both_orders(({"id": i.id, "orders": i.orders} for i in items), _dims(rubric, numeric=False))
    return {dim: {item: float(agree) for item, agree in by_item.items()} for dim, by_item in same.items()}


@register(
    "position_consistency",
    "share of items whose label stays the same when the two responses are shown in the other order (judge --swap)",
    columns=_resampled_means(_same_in_both_orders),
)
def position_consistency(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    empty = "judged without --swap: run the judge with --swap to measure it"
    slots, pooled = {}, []
    for dim, by_item in _same_in_both_orders(rubric, items).items():
        same = list(by_item.values())
        slots[dim] = _mean_slot(same, empty)
        pooled += same
    return _pool(slots, pooled, empty)


def _errors(rubric: Rubric, items: list[ItemScores]) -> dict[str, PerItem]:
    return {
        dim: {i: abs(float(j) - float(h)) for i, (j, h) in _both_by_id(items, dim).items()}
        for dim in _dims(rubric, numeric=True)
    }


@register("mae", "mean absolute difference between the judge's and the human score", columns=_resampled_means(_errors))
def mae(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots, pooled = {}, []
    for dim, by_item in _errors(rubric, items).items():
        errors = list(by_item.values())
        slots[dim] = _mean_slot(errors, NO_LABELS)
        pooled += errors
    scales = {rubric.dimension(d).labels.values for d in slots}
    return _pool(slots, pooled, NO_LABELS) if len(scales) == 1 else slots


def _score_pairs(rubric: Rubric, items: list[ItemScores]) -> dict[SlotPath, Columns]:
    return {
        (dim,): PairColumns({i: (float(j), float(h)) for i, (j, h) in _both_by_id(items, dim).items()})
        for dim in _dims(rubric, numeric=True)
    }


@register(
    "pearson",
    f"Pearson correlation between the judge's and the human scores over the items (at least {PEARSON_MIN_ITEMS})",
    columns=_score_pairs,
)
def pearson(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    from scipy import stats

    slots: dict[str, dict[str, Any]] = {}
    for dim in _dims(rubric, numeric=True):
        pairs = _both(items, dim)
        if len(pairs) < PEARSON_MIN_ITEMS:
            slots[dim] = {
                "value": None,
                "n": len(pairs),
                "reason": f"needs at least {PEARSON_MIN_ITEMS} items with both scores",
            }
            continue
        judge, human = [float(j) for j, _ in pairs], [float(h) for _, h in pairs]
        constant = [who for who, xs in (("the judge", judge), ("humans", human)) if len(set(xs)) == 1]
        if constant:
            slots[dim] = {
                "value": None,
                "n": len(pairs),
                "reason": f"undefined: {' and '.join(constant)} gave every item the same score",
            }
            continue
        result = stats.pearsonr(judge, human)
        slots[dim] = {"value": float(result.statistic), "n": len(pairs), "p_value": float(result.pvalue)}
    return slots


def _system_scores(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, dict[str, PerItem]]]:
    """dimension -> system -> "judge" or "human" -> the scores of that system's items, by item id."""
    result = {}
    for dim in _dims(rubric, numeric=True):
        systems: dict[str, dict[str, PerItem]] = {}
        for item in items:
            entry = systems.setdefault(item.system or "(unnamed)", {"judge": {}, "human": {}})
            if item.judged is not None and item.judged.get(dim) is not None:
                entry["judge"][item.id] = float(item.judged[dim])
            if item.human.get(dim) is not None:
                entry["human"][item.id] = float(item.human[dim])
        result[dim] = systems
    return result


def _system_columns(rubric: Rubric, items: list[ItemScores]) -> dict[SlotPath, Columns]:
    return {
        (dim, "systems", system, side): MeanColumns(by_item, dict.fromkeys(by_item, 1))
        for dim, systems in _system_scores(rubric, items).items()
        for system, sides in sorted(systems.items())
        for side, by_item in sides.items()
    }


@register(
    "system_means",
    "mean judge score and mean human score of each system's answers (system: the manifest item's `model`)",
    columns=_system_columns,
)
def system_means(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    slots: dict[str, dict[str, Any]] = {}
    for dim, scored in _system_scores(rubric, items).items():
        systems = {
            name: {side: list(by_item.values()) for side, by_item in sides.items()} for name, sides in scored.items()
        }
        table = {
            name: {
                "judge": sum(v["judge"]) / len(v["judge"]) if v["judge"] else None,
                "judge_n": len(v["judge"]),
                "human": sum(v["human"]) / len(v["human"]) if v["human"] else None,
                "human_n": len(v["human"]),
            }
            for name, v in sorted(systems.items())
            if v["judge"] or v["human"]
        }
        slots[dim] = {"systems": table, "n": sum(s["judge_n"] for s in table.values())}
    return slots


def _repeated_answers(items: list[ItemScores], dim: str) -> dict[str, list[Any]]:
    """The answers on `dim` of each item answered at least twice, by item id."""
    answers = {i.id: [s[dim] for s in i.samples if s.get(dim) is not None] for i in items}
    return {item: given for item, given in answers.items() if len(given) >= 2}


def _modal_share(answers: list[Any]) -> float:
    return Counter(answers).most_common(1)[0][1] / len(answers)


def _spread(answers: list[float]) -> float:
    """Population standard deviation of one item's answers."""
    mean = sum(answers) / len(answers)
    return math.sqrt(sum((a - mean) ** 2 for a in answers) / len(answers))


def _modal_shares(rubric: Rubric, items: list[ItemScores]) -> dict[str, PerItem]:
    return {
        dim: {item: _modal_share(answers) for item, answers in _repeated_answers(items, dim).items()}
        for dim in _dims(rubric)
    }


@register(
    "self_consistency",
    "over items answered several times (judge --samples N): the share of answers "
    "equal to the item's most frequent answer, averaged over items; numeric scales "
    "also give the mean standard deviation of an item's answers",
    columns=_resampled_means(_modal_shares),
)
def self_consistency(rubric: Rubric, items: list[ItemScores]) -> dict[str, dict[str, Any]]:
    empty = "one answer per item: run the judge with --samples N (N >= 2) and a temperature above 0"
    slots: dict[str, dict[str, Any]] = {}
    for dim in _dims(rubric):
        repeated = list(_repeated_answers(items, dim).values())
        shares = [_modal_share(answers) for answers in repeated]
        spreads = [_spread(answers) for answers in repeated] if rubric.dimension(dim).labels.numeric else []
        extra = {"mean_std": sum(spreads) / len(spreads)} if spreads else {}
        slots[dim] = _mean_slot(shares, empty, **extra)
    return slots
