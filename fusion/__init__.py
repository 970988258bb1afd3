"""Deterministic fusion policies: (Content, Voice Quality, Paralinguistics) -> overall label.

    >>> import fusion
    >>> fusion.fuse("content-first", "both_good", "1", "2")
    '2'
    >>> fusion.fuse("content-first", None, "1", "2") is None  # an undetermined dimension
    True

A policy is a pure function registered by name with `@fusion.register(name, description)`;
`fusion.POLICIES` maps names to `Policy` objects (callable, with `.name` and `.description`).
"""
from __future__ import annotations

from . import policies as _policies  # noqa: F401  (registers the built-in policies)
from .labels import (
    DIMENSIONS,
    LABELS,
    WINNERS,
    InvalidLabel,
    check_label,
    is_winner,
    rating_min,
)
from .registry import POLICIES, Policy, UnknownPolicy, fuse, get_policy, register

__all__ = [
    "DIMENSIONS",
    "LABELS",
    "POLICIES",
    "WINNERS",
    "InvalidLabel",
    "Policy",
    "UnknownPolicy",
    "check_label",
    "fuse",
    "get_policy",
    "is_winner",
    "rating_min",
    "register",
]
