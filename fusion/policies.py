"""The fusion policies of DESIGN.md, over any rubric's typed-tie dimensions. Pure functions.

DESIGN.md states them for TRACE, whose priority order is Content, Paralinguistics,
Voice Quality and whose acceptability dimensions are Content and Paralinguistics
(rubrics/trace.yaml); written over `ranked` and `acceptability` they are the same
functions for every rubric that fuses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import reduce

from .labels import is_winner, rating_min
from .registry import register


@register(
    "content-first", "TRACE paper Algorithm 1: first winner among Content, Paralinguistics, Voice Quality; else Content"
)
def content_first(ranked: Sequence[str], acceptability: Sequence[str]) -> str:
    return next((label for label in ranked if is_winner(label)), ranked[0])


@register(
    "content-first-strict",
    "TRACE release (lenient cap): both_bad when Content and Paralinguistics are both both_bad; else content-first",
)
def content_first_strict(ranked: Sequence[str], acceptability: Sequence[str]) -> str:
    if all(label == "both_bad" for label in acceptability):
        return "both_bad"
    return content_first(ranked, acceptability)


@register(
    "cap", "TRACE paper Algorithm 2: first winner among C, P, VQ capped by RatingMin(C, P); else RatingMin(C, cap)"
)
def acceptability_cap(ranked: Sequence[str], acceptability: Sequence[str]) -> str:
    cap = reduce(rating_min, acceptability)
    return rating_min(content_first(ranked, acceptability), cap)


@register("vote", "Majority: the label at least two of C, VQ, P share; with no majority, Content")
def majority_vote(ranked: Sequence[str], acceptability: Sequence[str]) -> str:
    label, count = Counter(ranked).most_common(1)[0]
    return label if count * 2 > len(ranked) else ranked[0]
