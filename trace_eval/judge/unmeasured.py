"""Why a blueprint value is missing, in the blueprint's own words: what the extractor that makes it recorded.

Below every module that reads cues (the run's evidence, the `cues` rules, the audit page), so each says the same
reason for the same null.
"""

from __future__ import annotations

from typing import Any

__all__ = ["extractor_record", "unmeasured_reason"]


def extractor_record(blueprint: dict, extractor: str) -> Any:
    """The provenance entry of `extractor` in `blueprint` (None when it never ran on the clip)."""
    return ((blueprint.get("provenance") or {}).get("extractors") or {}).get(extractor)


def unmeasured_reason(blueprint: dict, key: str, extractor: str) -> str:
    """Why the value at the dotted `key` of `blueprint`, made by `extractor`, is missing: the extractor's
    `null_reasons` for it, else the reason of its status (unavailable, failed); for an answer whose audio could
    not be heard, that, naming its file."""
    if blueprint.get("answer_failed"):
        return f"the answer's audio could not be heard: {blueprint['answer_failed']}"
    record = extractor_record(blueprint, extractor)
    if not isinstance(record, dict):
        return f"{extractor} extractor not run"
    reason = (record.get("null_reasons") or {}).get(key)
    if reason:
        return str(reason)
    if record.get("status") != "ok":
        return str(record.get("reason") or f"{extractor} {record.get('status')}")
    return "not measured (no reason recorded)"
