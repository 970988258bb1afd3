"""Agreement per language: where a benchmark's items are in more than one language, each run's agreement with
people on the items of each language. The language of an item is its instruction's (`records.item_languages`);
items whose instruction's language is not known form a group of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from trace_eval.judge.languages import name

from .report import Block, Heading, Paragraph, Table, coverage, percent

if TYPE_CHECKING:
    from .engine import Estimates

__all__ = ["NOT_KNOWN", "blocks", "by_language"]

NOT_KNOWN = "not known"  # the group of items whose instruction's language is not recorded or not told


def by_language(
    pending: Estimates,
    key: tuple,
    ids: list[str],
    languages: dict[str, str | None],
    predicted: list[str | None],
    human: list[str | None],
    said: dict[str, list[str | None]],
    truth: dict[str, list[str | None]],
) -> dict[str, Any] | None:
    """Per language (most items first): items, coverage and 4-way agreement of the fused label, and each
    dimension's agreement. None when the items are in one language (or none is known)."""
    codes = [languages.get(i) or NOT_KNOWN for i in ids]
    if len({c for c in codes if c != NOT_KNOWN}) < 2:
        return None
    labelled = np.array([h is not None for h in human], dtype=bool)
    decided = np.array([p is not None for p in predicted], dtype=bool)
    right = np.array([p is not None and p == h for p, h in zip(predicted, human)], dtype=bool)
    section: dict[str, Any] = {}
    for code in sorted(set(codes), key=lambda c: (c == NOT_KNOWN, -codes.count(c), c)):
        mask = np.array([c == code for c in codes], dtype=bool)
        n = int((mask & labelled).sum())
        section[code] = {
            "name": name(code) if code != NOT_KNOWN else NOT_KNOWN,
            "items": int(mask.sum()),
            "coverage": {
                "decided": int((mask & labelled & decided).sum()),
                "of": n,
                "value": int((mask & labelled & decided).sum()) / n if n else None,
            },
            "4way": pending.proportion(
                (*key, "language", code), right, mask & labelled & decided, f"no decided item in {code}"
            ),
            "per_dimension": {
                d: pending.proportion(
                    (*key, "language", code, d),
                    np.array([s is not None and s == t for s, t in zip(said[d], truth[d])], dtype=bool),
                    mask & np.array([s is not None and t is not None for s, t in zip(said[d], truth[d])], dtype=bool),
                    f"no item in {code} with a verdict and a human {d} label",
                )
                for d in said
            },
        }
    return section


def blocks(runs: list[dict[str, Any]]) -> list[Block]:
    """The report's section "Agreement per language", where a run has one."""
    runs = [r for r in runs if r.get("by_language")]
    if not runs:
        return []
    dimensions = list(next(iter(runs[0]["by_language"].values()))["per_dimension"])
    rows = [
        [
            r["name"],
            f"{slot['name']} ({code})" if code != NOT_KNOWN else NOT_KNOWN,
            str(slot["items"]),
            coverage(slot["coverage"]),
            percent(slot["4way"]),
            *[percent(slot["per_dimension"][d]) for d in dimensions],
        ]
        for r in runs
        for code, slot in r["by_language"].items()
    ]
    return [
        Heading(2, "Agreement per language"),
        Paragraph(
            "The language of an item is its instruction's, as the judges tell it: declared in the manifest, else "
            "detected in its blueprint, else read from its text or transcript. Coverage and agreement as above, on "
            "the items of each language."
        ),
        Table(["run", "language", "items", "coverage", "4-way", *[f"{d} acc." for d in dimensions]], rows),
    ]
