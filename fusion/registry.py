"""Policies are registered by name with a decorator, so adding one is one function
and the CLI's choices are read from POLICIES."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .labels import DIMENSIONS, check_label

PolicyFunction = Callable[[str, str, str], str]


@dataclass(frozen=True)
class Policy:
    """A deterministic map from the three dimension verdicts to the overall label."""

    name: str
    description: str  # one line, shown by the CLI
    function: PolicyFunction

    def __call__(self, content: str, voice_quality: str, paralinguistics: str) -> str:
        return self.function(content, voice_quality, paralinguistics)


POLICIES: dict[str, Policy] = {}


class UnknownPolicy(ValueError):
    """A policy name that is not registered."""


def register(name: str, description: str) -> Callable[[PolicyFunction], PolicyFunction]:
    """Register `function(content, voice_quality, paralinguistics) -> label` under `name`."""
    if "\n" in description:
        raise ValueError(f"policy {name!r}: the description must be one line")

    def decorate(function: PolicyFunction) -> PolicyFunction:
        if name in POLICIES:
            raise ValueError(f"fusion policy {name!r} is registered twice")
        POLICIES[name] = Policy(name=name, description=description, function=function)
        return function

    return decorate


def get_policy(name: str) -> Policy:
    """The registered policy `name`; UnknownPolicy (a ValueError) lists the choices."""
    try:
        return POLICIES[name]
    except KeyError:
        raise UnknownPolicy(
            f"unknown fusion policy {name!r}; expected one of: {', '.join(sorted(POLICIES))}"
        ) from None


def fuse(policy_name: str, content: str | None, voice_quality: str | None, paralinguistics: str | None) -> str | None:
    """Overall label of (content, voice_quality, paralinguistics) under `policy_name`.

    An undetermined verdict (None: the judge lacked the evidence) gives None under
    every policy: fusion over a missing label has no answer, and guessing one
    would hide the gap. Raises UnknownPolicy for an unregistered name and
    InvalidLabel when a verdict is neither a label nor None (a failed verdict
    must be handled by the caller, never fused).
    """
    policy = get_policy(policy_name)
    verdicts = (content, voice_quality, paralinguistics)
    for dimension, label in zip(DIMENSIONS, verdicts):
        if label is not None:
            check_label(label, what=f"{dimension} verdict")
    if None in verdicts:
        return None
    return policy(content, voice_quality, paralinguistics)  # type: ignore[arg-type]
