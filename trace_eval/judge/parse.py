"""Reading a backbone's answer into a verdict, or saying exactly why it cannot be read.

Accepted: a bare JSON object, one inside a ```json fence, or one inside prose;
a leading <think>...</think> block is ignored. Tolerated spellings, each
unambiguous: label case, spaces or hyphens ("Both Good"), the numbers 1 and 2,
"response 1"; the TRACE release's key `instruction_following_audio` for
paralinguistics. Anything else (a label such as "tie", a missing key) makes the
answer invalid: it is never guessed into a label.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fusion import DIMENSIONS, LABELS
from trace_eval.schemas import validation_errors

__all__ = ["ParsedVerdict", "parse_verdict", "normalise_label", "response_schema"]

KEY_ALIASES = {"instruction_following_audio": "paralinguistics"}
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_RESPONSE_N = re.compile(r"^(?:response|answer|audio)_?([12])$")


@dataclass(frozen=True)
class ParsedVerdict:
    """A verdict read from an answer: labels and reasoning when valid, else the error."""

    verdicts: dict[str, str] | None
    reasoning: str | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


def normalise_label(value: Any) -> Any:
    """The typed-tie spelling of an unambiguous variant; anything else is returned unchanged (and fails validation)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (1, 2):
        return str(value)
    if not isinstance(value, str):
        return value
    text = value.strip().strip("\"'").strip().lower().replace("-", "_").replace(" ", "_")
    match = _RESPONSE_N.match(text)
    if match:
        return match.group(1)
    return text if text in LABELS else value


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


def _looks_like_verdict(doc: dict) -> bool:
    keys = set(doc) | {KEY_ALIASES.get(k, k) for k in doc}
    return bool(keys & set(DIMENSIONS))


def parse_verdict(text: str | None) -> ParsedVerdict:
    """Read `text`; `error` says what was wrong (suitable for the repair message and the run record)."""
    if text is None or not text.strip():
        return ParsedVerdict(None, None, "the answer is empty")
    body = _THINK.sub("", text)
    docs = [d for d in _json_objects(body) if _looks_like_verdict(d)]
    if not docs:
        return ParsedVerdict(None, None,
                             "no JSON object with the keys reasoning, content, voice_quality, paralinguistics")
    doc = dict(docs[0])
    for alias, key in KEY_ALIASES.items():
        if alias in doc and key not in doc:
            doc[key] = doc.pop(alias)
    for key in DIMENSIONS:
        if key in doc:
            doc[key] = normalise_label(doc[key])
    problems = validation_errors("verdict", doc)
    if problems:
        return ParsedVerdict(None, None, "; ".join(problems))
    return ParsedVerdict({key: doc[key] for key in DIMENSIONS}, doc["reasoning"], None)


def response_schema() -> dict:
    """The verdict schema in the strict form structured-output APIs accept (all keys required, no others)."""
    label = {"type": "string", "enum": list(LABELS)}
    return {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, **{key: dict(label) for key in DIMENSIONS}},
        "required": ["reasoning", *DIMENSIONS],
        "additionalProperties": False,
    }
