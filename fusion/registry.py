"""Policies are registered by name with a decorator, so adding one is one function
and the CLI's choices are read from POLICIES."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

# (labels of the fused dimensions in priority order, labels of the acceptability dimensions) -> overall label
PolicyFunction = Callable[[Sequence[str], Sequence[str]], str]


@dataclass(frozen=True)
class Policy:
    """A deterministic map from dimension verdicts to the overall label.

    The function sees the verdicts twice over: `ranked`, every fused dimension in
    the rubric's priority order, and `acceptability`, the dimensions a response must
    be acceptable on (see `fusion.Fusion`). It never sees dimension names, so one
    policy serves every rubric that fuses typed-tie dimensions.
    """

    name: str
    description: str  # one line, shown by the CLI
    function: PolicyFunction

    def __call__(self, ranked: Sequence[str], acceptability: Sequence[str]) -> str:
        return self.function(ranked, acceptability)


POLICIES: dict[str, Policy] = {}


class UnknownPolicy(ValueError):
    """A policy name that is not registered."""


def register(name: str, description: str) -> Callable[[PolicyFunction], PolicyFunction]:
    """Register `function(ranked, acceptability) -> label` under `name`."""
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
        raise UnknownPolicy(f"unknown fusion policy {name!r}; expected one of: {', '.join(sorted(POLICIES))}") from None
