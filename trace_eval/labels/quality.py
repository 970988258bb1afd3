"""Each annotator's quality, from what their pages saved: accuracy on gold pairs, agreement with the others
(each label against the majority of the other annotators on the same pair), position bias, time per pair,
and whether both responses were played before the answer. An annotator whose gold accuracy is below the
lead's bar (once they have answered enough gold pairs to tell) is flagged, with the evidence.

Labels are compared by content: a record's labels are put in one numbering (the responses' hashes sorted),
so two people who heard a pair in different orders, or under different ids, are compared on the same seats.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from trace_eval.labels.agreement import krippendorff_alpha
from trace_eval.labels.store import LabelRecord, majority, swapped

if TYPE_CHECKING:
    from trace_eval.labels.gold import GoldItem
    from trace_eval.rubrics.labels import LabelSpace

__all__ = ["MIN_GOLD", "quality", "quality_columns", "team_agreement"]

MIN_GOLD = 4  # gold answers before an annotator can be flagged: fewer tell too little
DIMENSION = "overall"


def _canonical(record: LabelRecord) -> dict[str, Any]:
    """The record's labels with response 1 the one whose hash sorts first (either seating gives the same)."""
    if len(record.responses) == 2 and record.responses != sorted(record.responses):
        return swapped(record.labels)
    return dict(record.labels)


def _key(record: LabelRecord) -> str:
    return record.content_key or f"id:{record.pair_id}"


def _share(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def quality(
    records: dict[str, list[LabelRecord]],
    gold_records: dict[str, list[LabelRecord]],
    gold: dict[str, GoldItem],
    gold_responses: dict[str, tuple[str, ...]],
    space: LabelSpace | None,
    bar: float,
) -> dict[str, dict[str, Any]]:
    """annotator -> their figures, `flagged` and the `evidence` in words.

    `records`: each annotator's newest record per benchmark pair; `gold_records`: their records on gold pairs;
    `gold`: content key -> gold item, whose responses (in its numbering) are `gold_responses[key]`."""
    labelled: dict[str, dict[str, Any]] = {
        who: {_key(r): _canonical(r)[DIMENSION] for r in mine if r.skip is None and DIMENSION in r.labels}
        for who, mine in records.items()
    }
    result: dict[str, dict[str, Any]] = {}
    for who in sorted(set(records) | set(gold_records)):
        mine = records.get(who, [])
        golds = gold_records.get(who, [])
        right = answered = skipped = 0
        for record in golds:
            item = gold.get(_key(record))
            if item is None:
                continue
            if record.skip is not None:
                skipped += 1
                continue
            own = list(gold_responses[_key(record)])
            flip = len(record.responses) == 2 and record.responses == own[::-1]
            answered += 1
            given = swapped(record.labels) if flip else record.labels
            right += all(given.get(k) == v for k, v in item.answer.items())
        agree = compared = 0
        if space is not None:
            for key, label in labelled.get(who, {}).items():
                others = [got[key] for other, got in labelled.items() if other != who and key in got]
                if not others:
                    continue
                reference, _ = majority(others, space)
                if reference is None:
                    continue
                agree += label == reference
                compared += 1
        first = winners = 0
        for record in mine + golds:
            label = record.labels.get(DIMENSION)
            if record.skip is None and label in ("1", "2") and record.order_shown and len(record.order_shown) == 2:
                winners += 1
                first += (label == "1") == (record.order_shown[0] == "1")
        seconds = [r.seconds for r in mine + golds if r.seconds is not None]
        heard = [r.played for r in mine + golds if r.skip is None and r.played is not None]
        both = sum(1 for roles in heard if "a" in roles and "b" in roles)
        accuracy = _share(right, answered)
        figures: dict[str, Any] = {
            "answered": sum(1 for r in mine if r.skip is None),
            "skipped": sum(1 for r in mine if r.skip is not None),
            "gold": {"right": right, "answered": answered, "skipped": skipped, "accuracy": accuracy},
            "agreement": {"agree": agree, "compared": compared, "value": _share(agree, compared)},
            "position_first": {"first": first, "winners": winners, "value": _share(first, winners)},
            "median_seconds": round(statistics.median(seconds), 2) if seconds else None,
            "played_both": {"both": both, "answers": len(heard), "value": _share(both, len(heard))},
        }
        flagged = accuracy is not None and answered >= MIN_GOLD and accuracy < bar
        evidence = [f"gold {right} of {answered} right ({accuracy:.0%})" if accuracy is not None else "no gold yet"]
        if flagged:
            evidence[0] += f", below the bar of {bar:.0%}"
        elif answered < MIN_GOLD:
            evidence.append(f"{MIN_GOLD - answered} more gold answer(s) before a flag can be raised")
        if compared:
            evidence.append(f"agrees with the others' majority on {agree} of {compared} ({agree / compared:.0%})")
        if winners:
            evidence.append(f"chose the response shown first in {first} of {winners} ({first / winners:.0%})")
        if heard:
            evidence.append(f"played both responses before {both} of {len(heard)} answers")
        figures["flagged"] = flagged
        figures["evidence"] = "; ".join(evidence)
        result[who] = figures
    return result


def team_agreement(records: dict[str, list[LabelRecord]]) -> dict[str, Any]:
    """The team's agreement so far on the overall label: pairs two or more labelled, raw agreement, Krippendorff's
    alpha (nominal), without intervals (`label agreement` gives them)."""
    units: dict[str, list[Any]] = {}
    for mine in records.values():
        for r in mine:
            if r.skip is None and DIMENSION in r.labels:
                units.setdefault(_key(r), []).append(_canonical(r)[DIMENSION])
    shared = [u for u in units.values() if len(u) >= 2]
    pairs = sum(len(u) * (len(u) - 1) // 2 for u in shared)
    same = sum(sum(1 for i in range(len(u)) for j in range(i + 1, len(u)) if u[i] == u[j]) for u in shared)
    alpha = krippendorff_alpha(shared) if shared else None
    return {
        "items": len(shared),
        "raw": _share(same, pairs),
        "alpha": round(alpha, 4) if alpha is not None else None,
    }


def quality_columns(figures: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """annotator -> the export's quality columns (store.QUALITY_COLUMNS)."""
    return {
        who: {
            "annotator_gold_accuracy": f["gold"]["accuracy"],
            "annotator_gold_pairs": f["gold"]["answered"],
            "annotator_agreement": f["agreement"]["value"],
            "annotator_position_first": f["position_first"]["value"],
            "annotator_median_seconds": f["median_seconds"],
            "annotator_played_both": f["played_both"]["value"],
            "annotator_flagged": f["flagged"],
        }
        for who, f in figures.items()
    }
