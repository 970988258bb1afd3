"""How far people agree with each other: the ceiling a judge's agreement with people is read against.

Per dimension, over the items two or more annotators labelled:
- raw agreement: the share of agreeing pairs of labels (two annotators on one item), over every item;
- Cohen's kappa for each two annotators, on the items both labelled;
- Krippendorff's alpha over all of them (nominal for labels, interval for scores), which takes any number of
  annotators per item and missing labels;
- leave one annotator out (as MT-Bench reports people's agreement): each annotator's label against the
  majority of the others, pooled; a judge is scored against the same majorities, so the two stand side by side;
- position bias: the share of "1" among the labels naming a winner, in the order the page showed them
  (randomised per annotator and item, so 50% is no bias).
Every figure carries a 95% percentile interval from a bootstrap over items (the same resampled items for
every figure of one dimension), and is null with the reason where it cannot be computed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from trace_eval.labels.store import majority
from trace_eval.rubrics.labels import LabelSpace

__all__ = ["ceiling", "cohen_kappa", "describe", "judge_beside_people", "krippendorff_alpha", "position_bias"]

RESAMPLES = 1000
_SWAP = {"1": "2", "2": "1"}


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Cohen's kappa of two annotators' labels on the same items (unweighted); None where chance agreement is
    total (both gave one label throughout), as kappa is then undefined."""
    if len(a) != len(b) or not a:
        return None
    values = sorted({*map(str, a), *map(str, b)})
    index = {v: i for i, v in enumerate(values)}
    x = np.array([index[str(v)] for v in a])
    y = np.array([index[str(v)] for v in b])
    observed = float(np.mean(x == y))
    pa = np.bincount(x, minlength=len(values)) / len(x)
    pb = np.bincount(y, minlength=len(values)) / len(y)
    expected = float(pa @ pb)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha(units: Sequence[Sequence[Any]], numeric: bool = False) -> float | None:
    """Krippendorff's alpha over items (`units`: the labels each item got, any number); items with fewer than
    two labels do not count. Nominal distance for labels, squared difference for scores (interval)."""
    values = sorted({v for unit in units for v in unit}, key=str)
    if not values:
        return None
    index = {v: i for i, v in enumerate(values)}
    k = len(values)
    coincidence = np.zeros((k, k))
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        counts = np.bincount([index[v] for v in unit], minlength=k).astype(float)
        coincidence += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if n <= 1:
        return None
    if numeric:
        v = np.array([float(x) for x in values])
        delta = (v[:, None] - v[None, :]) ** 2
    else:
        delta = 1.0 - np.eye(k)
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0.0:
        return None  # one label throughout: alpha is undefined
    return 1.0 - (n - 1) * float((coincidence * delta).sum()) / expected


def _raw(units: Sequence[Sequence[Any]]) -> float | None:
    agree = total = 0
    for unit in units:
        for x, y in combinations(unit, 2):
            agree += x == y
            total += 1
    return agree / total if total else None


def _interval(values: list[float | None]) -> list[float] | None:
    got = [v for v in values if v is not None and np.isfinite(v)]
    if len(got) < len(values) / 2 or not got:
        return None
    low, high = np.percentile(got, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def _figure(
    compute: Callable[[list[str]], float | None], items: list[str], draws: np.ndarray, why: str
) -> dict[str, Any]:
    """A figure on `items`, and its 95% interval over the resampled items of `draws`."""
    value = compute(items)
    if value is None:
        return {"value": None, "interval": None, "reason": why}
    boot = [compute([items[j] for j in row]) for row in draws]
    return {"value": round(float(value), 4), "interval": _interval(boot), "reason": None}


def _leave_one_out(
    annotators: dict[str, dict[str, Any]], space: LabelSpace, items: list[str], other: dict[str, Any] | None = None
) -> tuple[int, int]:
    """(agreeing, compared): each annotator's label (or `other`'s, a judge's) against the others' majority."""
    agree = total = 0
    for left in annotators:
        for item in items:
            rest = [got[item] for who, got in annotators.items() if who != left and item in got]
            if item not in annotators[left] or not rest:
                continue
            reference, _ = majority(rest, space)
            if reference is None:
                continue
            mine = annotators[left][item] if other is None else other.get(item)
            if mine is None:
                continue
            agree += mine == reference
            total += 1
    return agree, total


def _people(annotators: dict[str, dict[str, dict[str, Any]]], dimension: str) -> dict[str, dict[str, Any]]:
    """annotator -> item -> label on one dimension, for the annotators who gave any."""
    by_person = {
        who: {i: labels[dimension] for i, labels in got.items() if dimension in labels}
        for who, got in annotators.items()
    }
    return {who: got for who, got in by_person.items() if got}


def _shared(by_person: dict[str, dict[str, Any]]) -> list[str]:
    """The items two or more annotators labelled."""
    counts: dict[str, int] = {}
    for got in by_person.values():
        for item in got:
            counts[item] = counts.get(item, 0) + 1
    return sorted(i for i, n in counts.items() if n >= 2)


def ceiling(
    annotators: dict[str, dict[str, dict[str, Any]]],
    spaces: dict[str, LabelSpace],
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """People's agreement with each other per dimension (see the module's notes)."""
    result: dict[str, Any] = {"annotators": sorted(annotators), "dimensions": {}, "resamples": resamples, "seed": seed}
    for dimension, space in spaces.items():
        result["dimensions"][dimension] = _ceiling_of(_people(annotators, dimension), space, resamples, seed)
    return result


def _ceiling_of(by_person: dict[str, dict[str, Any]], space: LabelSpace, resamples: int, seed: int) -> dict[str, Any]:
    items = _shared(by_person)
    section: dict[str, Any] = {"items": len(items), "annotators": sorted(by_person)}
    if not items:
        section["reason"] = "no item has labels from two annotators"
        return section
    draws = np.random.default_rng(seed).integers(0, len(items), size=(resamples, len(items)))

    def units(chosen: list[str]) -> list[list[Any]]:
        return [[got[i] for got in by_person.values() if i in got] for i in chosen]

    def loo(chosen: list[str]) -> float | None:
        agree, total = _leave_one_out(by_person, space, chosen)
        return agree / total if total else None

    section["raw_agreement"] = _figure(lambda c: _raw(units(c)), items, draws, "no two labels on one item")
    section["krippendorff_alpha"] = _figure(
        lambda c: krippendorff_alpha(units(c), space.numeric), items, draws, "one label throughout: undefined"
    )
    section["alpha_level"] = "interval" if space.numeric else "nominal"
    section["cohen_kappa"] = [
        _kappa(by_person[a], by_person[b], [a, b], items, resamples, seed)
        for a, b in combinations(sorted(by_person), 2)
    ]
    section["cohen_kappa"] = [k for k in section["cohen_kappa"] if k["items"]]
    section["leave_one_out"] = _figure(loo, items, draws, "no item where the others agree on a majority")
    return section


def _kappa(
    first: dict[str, Any], second: dict[str, Any], names: list[str], items: list[str], resamples: int, seed: int
) -> dict[str, Any]:
    both = [i for i in items if i in first and i in second]
    if not both:
        return {"annotators": names, "items": 0}
    draws = np.random.default_rng(seed).integers(0, len(both), size=(resamples, len(both)))
    kappa = _figure(
        lambda c: cohen_kappa([first[i] for i in c], [second[i] for i in c]),
        both,
        draws,
        "each gave one label throughout: kappa is undefined",
    )
    return {"annotators": names, "items": len(both), **kappa}


def judge_beside_people(
    annotators: dict[str, dict[str, dict[str, Any]]],
    judge: dict[str, dict[str, Any]],
    spaces: dict[str, LabelSpace],
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Per dimension, on the items two or more people labelled: the judge's agreement with the majority of all
    but one annotator, and people's own (each against the others' majority), the same references for both."""
    return {
        dimension: _beside(
            _people(annotators, dimension),
            {i: v[dimension] for i, v in judge.items() if v.get(dimension) is not None},
            space,
            resamples,
            seed,
        )
        for dimension, space in spaces.items()
    }


def _beside(
    by_person: dict[str, dict[str, Any]], verdicts: dict[str, Any], space: LabelSpace, resamples: int, seed: int
) -> dict[str, Any]:
    items = _shared(by_person)
    if not items:
        return {"items": 0, "reason": "no item has labels from two annotators"}
    draws = np.random.default_rng(seed).integers(0, len(items), size=(resamples, len(items)))

    def share(chosen: list[str], other: dict[str, Any] | None) -> float | None:
        agree, total = _leave_one_out(by_person, space, chosen, other)
        return agree / total if total else None

    return {
        "items": len(items),
        "judge": _figure(lambda c: share(c, verdicts), items, draws, "no verdict on these items"),
        "people": _figure(lambda c: share(c, None), items, draws, "no majority among the others"),
    }


def position_bias(
    shown: dict[str, dict[str, list[str]]], annotators: dict[str, dict[str, dict[str, Any]]], dimension: str = "overall"
) -> dict[str, Any]:
    """Per annotator (and pooled): the share of "1" (the response shown first) among labels naming a winner,
    in the order shown; only labels whose order was recorded count."""
    per: dict[str, Any] = {}
    first = total = 0
    for who, orders in shown.items():
        mine_first = mine = 0
        for item, order in orders.items():
            label = annotators.get(who, {}).get(item, {}).get(dimension)
            if label not in ("1", "2") or len(order) != 2:
                continue
            shown_label = label if order[0] == "1" else _SWAP[label]
            mine_first += shown_label == "1"
            mine += 1
        per[who] = {"first": mine_first, "winners": mine, "share_first": round(mine_first / mine, 4) if mine else None}
        first += mine_first
        total += mine
    return {
        "dimension": dimension,
        "annotators": per,
        "share_first": round(first / total, 4) if total else None,
        "winners": total,
        "reason": None if total else "no label naming a winner with its order recorded",
    }


def describe(figure: dict[str, Any]) -> str:
    """'0.71 [0.60, 0.80]', or 'null (why)'."""
    if figure.get("value") is None:
        return f"null ({figure.get('reason')})"
    interval = figure.get("interval")
    return f"{figure['value']:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")
