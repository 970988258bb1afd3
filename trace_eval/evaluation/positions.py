"""Which position the winners are in. A benchmark whose human winners sit mostly in one position lets a
judge that always names that position score well without judging anything: `evaluate` reports how the
human winners and each run's split between positions 1 and 2, and warns when the human labels are
lopsided, naming the accuracy of always answering the majority position."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .report import Block, Heading, Paragraph, Table

LOPSIDED_ABOVE = 0.7  # share of the winners in one position beyond which the labels are called lopsided


def split(labels: Iterable[Any]) -> dict[str, Any]:
    """{"1": winners in position 1, "2": in position 2, "share_1": the share of the first (None without winners)}."""
    labels = list(labels)
    first, second = labels.count("1"), labels.count("2")
    return {"1": first, "2": second, "share_1": first / (first + second) if first + second else None}


def human_split(labels: list[Any]) -> dict[str, Any]:
    """The split of the human winners among `labels` (one per item with a human label), whether it is
    lopsided, and the accuracy of a judge that always answers the majority position: over every labelled
    item (as the accuracy of the labels' space counts) and over the winners alone."""
    found = split(labels)
    winners = found["1"] + found["2"]
    if not winners:
        return {**found, "lopsided": False, "majority": None, "baseline": None}
    majority = "1" if found["1"] >= found["2"] else "2"
    share = found[majority] / winners
    return {
        **found,
        "lopsided": share > LOPSIDED_ABOVE,
        "majority": majority,
        "baseline": {
            "accuracy": found[majority] / len(labels),
            "n": len(labels),
            "accuracy_winners": share,
            "winners": winners,
        },
    }


def describe(found: dict[str, Any]) -> str:
    """ "7 in position 1, 1 in position 2 (88% / 12%)"."""
    text = f"{found['1']} in position 1, {found['2']} in position 2"
    if found["share_1"] is not None:
        text += f" ({found['share_1']:.0%} / {1 - found['share_1']:.0%})"
    return text


def warning(found: dict[str, Any], what: str = "human winners", accuracy: str = "accuracy") -> str | None:
    """The warning about lopsided human labels (`found` from human_split), None when they are not."""
    if not found["lopsided"]:
        return None
    baseline = found["baseline"]
    return (
        f"the {what} are lopsided ({describe(found)}, above {LOPSIDED_ABOVE:.0%} in one position): a judge "
        f'that always answers "{found["majority"]}" scores {baseline["accuracy"]:.1%} {accuracy} here '
        f"({baseline['accuracy_winners']:.1%} on the {baseline['winners']} winners); read the runs' "
        "accuracy against that"
    )


def blocks(human: dict[str, dict[str, Any]], runs: list[dict[str, Any]], warnings: list[str]) -> list[Block]:
    """The report's section: per label (overall, or each pairwise dimension), the human winners' split and
    each run's (its block's "positions"), and the warnings."""
    rows = []
    for key, found in human.items():
        rows.append([key, "humans", str(found["1"]), str(found["2"]), _share(found)])
        rows += [
            [key, r["name"], str(r["positions"][key]["1"]), str(r["positions"][key]["2"]), _share(r["positions"][key])]
            for r in runs
        ]
    return [
        Heading(2, "Positions of the winners"),
        Paragraph(
            "How the winners split between the response shown first and second. Labels whose winners "
            f"sit more than {LOPSIDED_ABOVE:.0%} in one position reward a judge that always names that "
            "position."
        ),
        Table(["label", "by", "position 1", "position 2", "share in position 1"], rows),
        *[Paragraph(f"Warning: {w}") for w in warnings],
    ]


def _share(found: dict[str, Any]) -> str:
    return "n/a" if found["share_1"] is None else f"{found['share_1']:.0%}"
