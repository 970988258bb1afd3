"""Deterministic fusion policies: a rubric's typed-tie dimension verdicts -> overall label.

    >>> import fusion
    >>> trace = fusion.Fusion(order=("content", "paralinguistics", "voice_quality"),
    ...                       acceptability=("content", "paralinguistics"), policies=tuple(fusion.POLICIES))
    >>> trace.fuse("content-first", {"content": "both_good", "voice_quality": "1", "paralinguistics": "2"})
    '2'
    >>> trace.fuse("content-first", {"content": None, "voice_quality": "1", "paralinguistics": "2"}) is None
    True

A policy is a pure function of the labels in priority order and of the labels of
the acceptability dimensions, registered by name with
`@fusion.register(name, description)`; `fusion.POLICIES` maps names to `Policy`
objects. Which dimensions fuse, in which order, under which policies, is the
rubric's to say (`fusion:` in its YAML file), read into a `Fusion`.
"""

from __future__ import annotations

from . import policies as _policies  # noqa: F401  (registers the built-in policies)
from .labels import LABELS, WINNERS, InvalidLabel, acceptable, check_label, is_winner, label_of, rating_min
from .registry import POLICIES, Policy, UnknownPolicy, get_policy, register
from .tree import Fusion, FusionError

__all__ = [
    "LABELS",
    "POLICIES",
    "WINNERS",
    "Fusion",
    "FusionError",
    "InvalidLabel",
    "Policy",
    "acceptable",
    "UnknownPolicy",
    "check_label",
    "get_policy",
    "is_winner",
    "label_of",
    "rating_min",
    "register",
]
