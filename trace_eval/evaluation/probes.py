"""TRACE probes: what the fused label depends on, item by item.

Each function takes a rubric that fuses, a fusion policy and one item's dimension
verdicts and returns labels; the rates and accuracies over a run are computed in
analysis. The first dimension of the rubric's fusion order plays Content's part.
"""

from __future__ import annotations

from collections.abc import Mapping

from fusion import is_winner
from trace_eval.rubrics import Rubric

NEUTRAL = "both_good"  # the RatingMin identity: a dimension that prefers neither response
TIE = "tie"  # the decider of a counterfactual label that names no winner


def deciders(rubric: Rubric) -> tuple[str, ...]:
    """What can decide the content counterfactual: the other fused dimensions in priority order, or a tie."""
    return (*rubric.require_fusion().order[1:], TIE)


def with_neutral(verdicts: Mapping[str, str], dimension: str) -> dict[str, str]:
    """The verdicts with `dimension` set to both_good."""
    return {**verdicts, dimension: NEUTRAL}


def content_counterfactual(rubric: Rubric, policy: str, verdicts: Mapping[str, str]) -> tuple[str | None, str]:
    """Fuse again as if Content (the first dimension of the fusion order) were a tie (both_good);
    return (label, deciding dimension).

    The decider is the dimension whose winner the label repeats, looked for in the fusion order
    (Paralinguistics before Voice Quality for TRACE), or "tie" when the label names no winner.
    """
    fusion = rubric.require_fusion()
    first, *others = fusion.order
    label = fusion.fuse(policy, with_neutral(verdicts, first))
    if label is not None and is_winner(label):
        for dimension in others:
            if verdicts[dimension] == label:
                return label, dimension
    return label, TIE


def flips(rubric: Rubric, policy: str, verdicts: Mapping[str, str]) -> dict[str, str | None]:
    """The fused label with each dimension in turn set to both_good, by dimension."""
    fusion = rubric.require_fusion()
    return {d: fusion.fuse(policy, with_neutral(verdicts, d)) for d in rubric.names}
