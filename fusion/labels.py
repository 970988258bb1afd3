"""The typed-tie label set and the acceptability algebra the policies are built on."""

from __future__ import annotations

LABELS: tuple[str, ...] = ("1", "2", "both_good", "both_bad")
WINNERS: frozenset[str] = frozenset({"1", "2"})

# A label read as (response 1 acceptable, response 2 acceptable).
_ACCEPTABLE: dict[str, tuple[int, int]] = {
    "1": (1, 0),
    "2": (0, 1),
    "both_good": (1, 1),
    "both_bad": (0, 0),
}
_FROM_ACCEPTABLE: dict[tuple[int, int], str] = {v: k for k, v in _ACCEPTABLE.items()}


class InvalidLabel(ValueError):
    """A value that is not one of the typed-tie labels."""


def check_label(value: object, what: str = "label") -> str:
    """Return `value` if it is a typed-tie label, else raise InvalidLabel."""
    if isinstance(value, str) and value in _ACCEPTABLE:
        return value
    raise InvalidLabel(f"{what} {value!r} is not a label; expected one of: {', '.join(LABELS)}")


def is_winner(label: str) -> bool:
    """True for "1" or "2": the label names one response."""
    return label in WINNERS


def acceptable(label: str) -> tuple[int, int]:
    """Which responses a label accepts, as (response 1, response 2): 1 -> (1, 0), both_good -> (1, 1), ..."""
    return _ACCEPTABLE[check_label(label)]


def label_of(acceptable_1: bool, acceptable_2: bool) -> str:
    """The label that accepts exactly the responses found acceptable: 1, 2, both_good or both_bad."""
    return _FROM_ACCEPTABLE[(int(acceptable_1), int(acceptable_2))]


def rating_min(a: str, b: str) -> str:
    """RatingMin: a response is acceptable only if both labels accept it.

    Maps 1->(1,0), 2->(0,1), both_good->(1,1), both_bad->(0,0), takes the
    element-wise minimum and maps back.
    """
    a1, a2 = _ACCEPTABLE[check_label(a)]
    b1, b2 = _ACCEPTABLE[check_label(b)]
    return _FROM_ACCEPTABLE[(min(a1, b1), min(a2, b2))]
