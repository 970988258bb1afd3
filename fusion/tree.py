"""Which dimensions a rubric fuses, in what priority, and under which policies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations, product

from .labels import LABELS, check_label
from .registry import POLICIES, UnknownPolicy, get_policy


class FusionError(ValueError):
    """A fusion arrangement that cannot work (unknown policy, a dimension named twice, ...)."""


@dataclass(frozen=True)
class Fusion:
    """How one rubric's typed-tie verdicts become its overall label.

    `order` names every fused dimension, most important first: the policies look
    for a winner in this order, and the first dimension decides when none names
    one. `acceptability` names the dimensions a response must be acceptable on to
    be acceptable overall (the RatingMin cap). `policies` are the registered
    policies that apply, by name.

        >>> tree = Fusion(order=("content", "paralinguistics", "voice_quality"),
        ...               acceptability=("content", "paralinguistics"), policies=("cap",))
        >>> tree.fuse("cap", {"content": "1", "voice_quality": "2", "paralinguistics": "both_good"})
        '1'
    """

    order: tuple[str, ...]
    acceptability: tuple[str, ...]
    policies: tuple[str, ...]

    def __post_init__(self) -> None:
        problems = []
        if not self.order:
            problems.append("order names no dimension")
        problems += [f"order names {name} twice" for name in sorted({n for n in self.order if self.order.count(n) > 1})]
        if not self.acceptability:
            problems.append("acceptability names no dimension")
        problems += [
            f"acceptability names {name}, which is not in order"
            for name in self.acceptability
            if name not in self.order
        ]
        problems += [
            f"unknown fusion policy {name!r}; expected one of: {', '.join(sorted(POLICIES))}"
            for name in self.policies
            if name not in POLICIES
        ]
        if not self.policies:
            problems.append("policies names no policy")
        if problems:
            raise FusionError("; ".join(problems))

    def fuse(self, policy: str, verdicts: Mapping[str, str | None]) -> str | None:
        """The overall label of `verdicts` (dimension -> label) under `policy`.

        An undetermined verdict (None or absent: the judge lacked the evidence) gives
        None: fusion over a missing label has no answer, and guessing one would hide
        the gap. Raises UnknownPolicy for a name that is not registered or not one of
        this rubric's, and InvalidLabel when a verdict is neither a label nor None (a
        failed verdict must be handled by the caller, never fused).
        """
        function = get_policy(policy)
        if policy not in self.policies:
            raise UnknownPolicy(
                f"fusion policy {policy!r} does not apply here; expected one of: {', '.join(self.policies)}"
            )
        labels = {name: verdicts.get(name) for name in self.order}
        for name, label in labels.items():
            if label is not None:
                check_label(label, what=f"{name} verdict")
        known = {name: label for name, label in labels.items() if label is not None}
        if len(known) < len(labels):
            return None
        return function([known[name] for name in self.order], [known[name] for name in self.acceptability])

    def fuse_all(self, verdicts: Mapping[str, str | None] | None) -> dict[str, str | None]:
        """The overall label under every policy; None for every policy when a verdict is missing."""
        return {name: self.fuse(name, verdicts or {}) for name in self.policies}

    def decided_by(self, policy: str, verdicts: Mapping[str, str | None]) -> tuple[str, ...] | None:
        """The dimensions the overall label under `policy` turns on, in priority order: those whose label,
        changed alone, would change it; where no single one could (all three agree under `vote`), those of
        the smallest groups that could. None where the overall label is None.

            >>> tree = Fusion(order=("content", "paralinguistics", "voice_quality"),
            ...               acceptability=("content", "paralinguistics"), policies=("cap", "content-first"))
            >>> said = {"content": "1", "voice_quality": "2", "paralinguistics": "both_good"}
            >>> tree.decided_by("cap", said), tree.decided_by("content-first", said)
            (('content', 'paralinguistics'), ('content',))

        Read from the policy itself (every other label tried in place of the given ones), so it holds for
        any registered policy.
        """
        if self.fuse(policy, verdicts) is None:
            return None
        return _turning(self, policy, tuple(str(verdicts[name]) for name in self.order))


@lru_cache(maxsize=4096)
def _turning(tree: Fusion, policy: str, labels: tuple[str, ...]) -> tuple[str, ...]:
    """Fusion.decided_by over labels in `tree.order`: the smallest groups of dimensions whose labels, all
    changed, can change the overall label, merged. 4^3 label triples per policy: cached."""
    given = dict(zip(tree.order, labels))
    fused = tree.fuse(policy, given)
    for size in range(1, len(tree.order) + 1):
        turning: set[str] = set()
        for group in combinations(tree.order, size):
            others = product(*([label for label in LABELS if label != given[name]] for name in group))
            if any(tree.fuse(policy, {**given, **dict(zip(group, changed))}) != fused for changed in others):
                turning.update(group)
        if turning:
            return tuple(name for name in tree.order if name in turning)
    return ()  # a policy that gives one label whatever the verdicts
