"""Label spaces: what a judge may answer on one dimension, and how such answers combine.

    typed-tie     pairwise  "1", "2", "both_good", "both_bad" (TRACE)
    win-lose-tie  pairwise  "1", "2", "tie"                    (SageLM)
    likert        pointwise integers min..max, 1..5 unless a range is given
    binary        pointwise 0 or 1

Pairwise labels name the winning response as shown to the judge, so an answer
given with the responses swapped is mapped back with `swap`. Answers are read
leniently but never guessed: `normalise` only rewrites spellings that can mean
one label ("Both Good", 4.0, "yes"); anything else stays as it is and fails
validation against `json_schema`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import fusion

__all__ = ["KINDS", "LabelSpace", "label_space"]

KINDS = ("typed-tie", "win-lose-tie", "likert", "binary")
PAIRWISE_KINDS = ("typed-tie", "win-lose-tie")

_RESPONSE_N = re.compile(r"^(?:response|answer|audio)_?([12])$")
_SCORE = re.compile(r"^([+-]?\d+)(?:\.0+)?(?:/\d+)?$")  # "4", "4.0", "4/5"
_YES = {"yes", "true", "y"}
_NO = {"no", "false", "n"}


def _label_text(value: str) -> str:
    return value.strip().strip("\"'").strip().lower().replace("-", "_").replace(" ", "_")


@dataclass(frozen=True)
class LabelSpace:
    """One kind of answer. `values` are the valid labels, in the order they are described."""

    kind: str
    values: tuple[Any, ...]

    @property
    def pairwise(self) -> bool:
        return self.kind in PAIRWISE_KINDS

    @property
    def numeric(self) -> bool:
        return not self.pairwise

    @property
    def ties(self) -> frozenset:
        """Labels that name no winner."""
        return frozenset(v for v in self.values if v not in ("1", "2")) if self.pairwise else frozenset()

    def normalise(self, value: Any) -> Any:
        """The space's spelling of an unambiguous variant; anything else is returned unchanged."""
        if self.pairwise:
            return self._normalise_pairwise(value)
        return self._normalise_score(value)

    def _normalise_pairwise(self, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)) and value in (1, 2):
            return str(int(value))
        if not isinstance(value, str):
            return value
        text = _label_text(value)
        if text in ("1.0", "2.0"):  # spreadsheet exports of the released annotation files
            return text[0]
        match = _RESPONSE_N.match(text)
        if match:
            return match.group(1)
        return text if text in self.values else value

    def _normalise_score(self, value: Any) -> Any:
        if isinstance(value, bool):
            return int(value) if self.kind == "binary" else value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            text = value.strip().strip("\"'").strip().lower()
            if self.kind == "binary" and text in _YES | _NO:
                return int(text in _YES)
            match = _SCORE.match(text)
            if match:
                return int(match.group(1))
        return value

    def normalise_human(self, value: Any) -> Any | None:
        """A human label in this space, or None when it is not one.

        Numeric scales also take any number inside their range, since human
        scores are often means over several raters (3.67).
        """
        if value is None:
            return None
        label = self.normalise(value)
        if label in self.values and not isinstance(label, bool):
            return label
        if self.numeric and isinstance(label, (int, float)) and not isinstance(label, bool):
            low, high = min(self.values), max(self.values)
            return float(label) if low <= label <= high else None
        return None

    def swap(self, label: Any) -> Any:
        """The label in the other presentation order: "1" <-> "2", ties unchanged."""
        if not self.pairwise:
            raise ValueError(f"{self.kind} labels are pointwise: there is no order to swap")
        return {"1": "2", "2": "1"}.get(label, label)

    def resolve_orders(self, original: Any, swapped_back: Any) -> Any:
        """One label from the two presentation orders (both in the manifest's numbering).

        Agreement keeps the label. Disagreement means the judge named no winner
        consistently, so the result is a tie: for typed ties "both_bad" when either
        order found both unacceptable, otherwise "both_good"; for win-lose-tie "tie".
        """
        if original == swapped_back:
            return original
        if self.kind == "typed-tie":
            return "both_bad" if "both_bad" in (original, swapped_back) else "both_good"
        if self.kind == "win-lose-tie":
            return "tie"
        raise ValueError(f"{self.kind} labels are pointwise: there are no presentation orders")

    def json_schema(self) -> dict:
        """The JSON Schema of one label (used for validation and for structured output)."""
        kind = "string" if self.pairwise else "integer"
        return {"type": kind, "enum": list(self.values)}

    def describe(self) -> str:
        """How the judge is told to answer, e.g. '"1", "2" or "tie"' or 'an integer from 1 to 5'."""
        if self.kind == "likert":
            return f"an integer from {self.values[0]} to {self.values[-1]}"
        if self.kind == "binary":
            return "0 or 1"
        quoted = [f'"{v}"' for v in self.values]
        return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def label_space(kind: str, value_range: tuple[int, int] | None = None) -> LabelSpace:
    """The label space `kind` (one of KINDS); `value_range` (low, high) only for likert."""
    if kind == "typed-tie":
        return LabelSpace(kind, fusion.LABELS)  # the fusion policies' own labels
    if kind == "win-lose-tie":
        return LabelSpace(kind, ("1", "2", "tie"))
    if kind == "binary":
        return LabelSpace(kind, (0, 1))
    if kind == "likert":
        low, high = value_range or (1, 5)
        if not low < high:
            raise ValueError(f"likert range [{low}, {high}]: the first number must be the smaller")
        return LabelSpace(kind, tuple(range(low, high + 1)))
    raise ValueError(f"unknown label space {kind!r}; expected one of: {', '.join(KINDS)}")
