"""Combining several answers about one item into its verdicts, and fusing them.

- Swapped order (--swap, pairwise rubrics): the judge saw audio2 as "response 1",
  so its labels are mapped back ("1" <-> "2"; ties unchanged) before anything else.
- Samples (--samples N): per dimension, the most frequent label over the valid
  samples; among equally frequent labels, the one given by the earliest sample.
- Orders (--swap): per dimension, the two orders' labels when they agree. When
  they disagree the judge was not consistent about a winner, so the result is a
  tie. Typed ties: "both_bad" when either order found both responses
  unacceptable ("both_bad"), otherwise "both_good" (each response was found
  acceptable in at least one order: a winner in one order or both_good in the
  other). Win/lose/tie: "tie".

Label spaces are given per dimension (`spaces`, from the rubric). Fused labels
come from the rubric's fusion (`rubric.fusion.fuse_all`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from trace_eval.rubrics.labels import LabelSpace

__all__ = ["majority", "resolve_orders", "swap_back"]

Spaces = Mapping[str, LabelSpace]


def swap_back(verdicts: dict[str, Any], spaces: Spaces) -> dict[str, Any]:
    """Labels given with the responses shown in swapped order, in the manifest's numbering."""
    return {dim: spaces[dim].swap(label) for dim, label in verdicts.items()}


def majority(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Per dimension, the most frequent label; ties go to the label the earliest sample gave."""
    if not samples:
        raise ValueError("majority of no samples")
    result = {}
    for dim in samples[0]:
        labels = [s[dim] for s in samples]
        counts = Counter(labels)
        top = max(counts.values())
        result[dim] = next(label for label in labels if counts[label] == top)
    return result


def resolve_orders(original: dict[str, Any], swapped_back: dict[str, Any], spaces: Spaces) -> dict[str, Any]:
    """One label per dimension from both presentation orders (see the module docstring)."""
    # An undetermined label in either order leaves the dimension undetermined.
    return {
        dim: None
        if label is None or swapped_back[dim] is None
        else spaces[dim].resolve_orders(label, swapped_back[dim])
        for dim, label in original.items()
    }
