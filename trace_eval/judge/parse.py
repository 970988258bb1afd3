"""Reading a backbone's answer into a verdict, or saying exactly why it cannot be read.

Accepted: a bare JSON object, one inside a ```json fence, or one inside prose;
a leading <think>...</think> block is ignored. Tolerated spellings, each
unambiguous (see trace_eval.rubrics.labels): label case, spaces or hyphens
("Both Good"), the numbers 1 and 2, "response 1", scores written "4" or 4.0; a
dimension's aliases from the rubric (for TRACE, the release's key
`instruction_following_audio` for paralinguistics). Anything else (a label such
as "tie" where the rubric has typed ties, a score of 7 on a 1-5 scale, a missing
key) makes the answer invalid: it is never guessed into a label.

Undetermined dimensions (a null label explained in the answer's `undetermined`
object) are accepted only with `allow_undetermined`, which the runner sets for
backbones that declare `may_leave_undetermined` (the offline cues backbone); from
any other backbone a null label is invalid like any other non-label. A `confidence`
object (dimension -> 0..1) is kept as the judge's own statement of how sure it is.

Answers are checked against the schema the rubric generates for the dimensions
asked (`Rubric.verdict_schema`; for TRACE the same as schemas/verdict.schema.json).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from trace_eval.rubrics import Rubric

__all__ = ["ParsedVerdict", "parse_verdict"]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ParsedVerdict:
    """A verdict read from an answer: labels and reasoning when valid, else the error."""

    verdicts: dict[str, Any] | None
    reasoning: Any  # as the judge gave it: text, one text per dimension, a list
    error: str | None
    undetermined: dict[str, str] = field(default_factory=dict)  # dimension -> why its label is null
    confidence: dict[str, float] = field(default_factory=dict)  # dimension -> how sure the judge says it is

    @property
    def ok(self) -> bool:
        return self.error is None


def _json_objects(text: str) -> list[dict]:
    """Every JSON object found in `text`: whole, fenced, then embedded in prose, in that order."""
    found: list[dict] = []
    candidates = [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            doc = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            found.append(doc)
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            doc, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            found.append(doc)
    return found


def _schema_errors(rubric: Rubric, names: tuple[str, ...], doc: dict) -> list[str]:
    check = jsonschema.Draft202012Validator(rubric.verdict_schema(names))
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(check.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    ]


def parse_verdict(
    text: str | None, rubric: Rubric, dimensions: tuple[str, ...] | None = None, allow_undetermined: bool = False
) -> ParsedVerdict:
    """Read `text` as an answer about `dimensions` (default: every dimension of `rubric`).

    `error` says what was wrong (suitable for the repair message and the run record).
    """
    names = dimensions or rubric.names
    if text is None or not text.strip():
        return ParsedVerdict(None, None, "the answer is empty")
    body = _THINK.sub("", text)
    aliases = {alias: name for name in names for alias in rubric.dimension(name).aliases}
    wanted = set(names) | set(aliases)
    docs = [d for d in _json_objects(body) if wanted & set(d)]
    if not docs:
        return ParsedVerdict(None, None, f"no JSON object with the keys reasoning, {', '.join(names)}")
    doc = dict(docs[0])
    for alias, key in aliases.items():
        if alias in doc and key not in doc:
            doc[key] = doc.pop(alias)
    for key in names:
        if key in doc:
            doc[key] = rubric.dimension(key).labels.normalise(doc[key])
    problems = _schema_errors(rubric, names, doc)
    if problems:
        return ParsedVerdict(None, None, "; ".join(problems))
    undetermined = {key: str(doc["undetermined"][key]) for key in names if doc[key] is None}
    if undetermined and not allow_undetermined:
        return ParsedVerdict(
            None,
            None,
            "; ".join(
                f"{key}: null is not a label; expected one of: "
                f"{', '.join(map(str, rubric.dimension(key).labels.values))}"
                for key in undetermined
            ),
        )
    stated = doc.get("confidence")
    stated = stated if isinstance(stated, dict) else {}
    confidence = {
        key: float(stated[key])
        for key in names
        if doc[key] is not None
        and isinstance(stated.get(key), (int, float))
        and not isinstance(stated.get(key), bool)
        and 0.0 <= stated[key] <= 1.0
    }
    return ParsedVerdict({key: doc[key] for key in names}, doc["reasoning"], None, undetermined, confidence)
