"""The `cues` judge's answer on one pair of blueprints, as the judge command gives it: the blueprints seen through
the TRACE prompt's keys, the answer checked against the TRACE rubric."""

from __future__ import annotations

import json

from trace_eval.judge.cues import judge_case
from trace_eval.judge.languages import ClipLanguage
from trace_eval.judge.parse import parse_verdict
from trace_eval.judge.prompts import Case, blueprint_view, load_prompt
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")
KEYS = load_prompt("trace").blueprint_keys


def verdict(
    instruction: str, bp1: dict, bp2: dict, language: ClipLanguage | None = None, drop: tuple[str, ...] = ()
) -> dict:
    """`language`: the instruction's, as the manifest or Stage 1 records it; `drop`: blueprint keys left out of
    both views."""
    views = (blueprint_view(bp1, KEYS, drop), blueprint_view(bp2, KEYS, drop))
    answer = judge_case(Case("x", None, instruction, views, stored=(bp1, bp2), instruction_language=language))
    parsed = parse_verdict(json.dumps(answer), TRACE, allow_undetermined=True)
    assert parsed.ok and parsed.undetermined == answer.get("undetermined", {})
    return answer
