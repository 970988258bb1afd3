"""TRACE probes: what the fused label depends on, item by item.

Each function takes one item's dimension verdicts and a fusion policy and
returns labels; the rates and accuracies over a run are computed in analysis.
"""
from __future__ import annotations

from collections.abc import Mapping

from fusion import is_winner

from .records import DIMENSIONS, TRACE

NEUTRAL = "both_good"  # the RatingMin identity: a dimension that prefers neither response
DECIDERS = ("paralinguistics", "voice_quality", "tie")


def fused(policy: str, verdicts: Mapping[str, str]) -> str:
    return TRACE.fusion.fuse(policy, verdicts)


def with_neutral(verdicts: Mapping[str, str], dimension: str) -> dict[str, str]:
    """The verdicts with `dimension` set to both_good."""
    return {**verdicts, dimension: NEUTRAL}


def content_counterfactual(policy: str, verdicts: Mapping[str, str]) -> tuple[str, str]:
    """Fuse again as if Content were a tie (both_good); return (label, deciding dimension).

    The decider is the dimension whose winner the label repeats, Paralinguistics
    checked first (the order of the content-first tree), or "tie" when the label
    names no winner.
    """
    label = fused(policy, with_neutral(verdicts, "content"))
    if is_winner(label):
        for dimension in ("paralinguistics", "voice_quality"):
            if verdicts[dimension] == label:
                return label, dimension
    return label, "tie"


def flips(policy: str, verdicts: Mapping[str, str]) -> dict[str, str]:
    """The fused label with each dimension in turn set to both_good, by dimension."""
    return {d: fused(policy, with_neutral(verdicts, d)) for d in DIMENSIONS}
