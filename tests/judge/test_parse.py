"""Verdict parsing, combining answers (samples, swapped orders) and the cache key: pure functions."""

from __future__ import annotations

import json

import jsonschema
import pytest

import fusion
from trace_eval.judge.cache import AnswerCache, request_key
from trace_eval.judge.combine import majority, resolve_orders, swap_back
from trace_eval.judge.parse import parse_verdict
from trace_eval.rubrics import load_rubric
from trace_eval.schemas import validation_errors

TRACE = load_rubric("trace")
SPACES = TRACE.spaces()

VALID = {"reasoning": "r", "content": "1", "voice_quality": "both_good", "paralinguistics": "2"}
EXPECTED = {"content": "1", "voice_quality": "both_good", "paralinguistics": "2"}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(VALID),
        f"```json\n{json.dumps(VALID)}\n```",
        f"Sure! Here it is:\n```\n{json.dumps(VALID, indent=2)}\n```\nHope this helps.",
        f"After weighing both responses my verdict is {json.dumps(VALID)} as requested.",
        f'<think>maybe {{"content": "2"}} is right?</think>{json.dumps(VALID)}',
    ],
)
def test_valid_answers_in_any_wrapping(text):
    parsed = parse_verdict(text, TRACE)
    assert parsed.ok, parsed.error
    assert parsed.verdicts == EXPECTED
    assert parsed.reasoning == "r"


@pytest.mark.parametrize(
    "reasoning",
    [
        {"content": "1 answers the question", "voice_quality": "both clean", "paralinguistics": "2 sounds sad"},
        ["1 is right", "both are clean", "2 follows the tone"],
        "",
    ],
)
def test_reasoning_of_any_shape_is_kept_as_given(reasoning):
    parsed = parse_verdict(json.dumps({**VALID, "reasoning": reasoning}), TRACE)
    assert parsed.ok, parsed.error
    assert parsed.verdicts == EXPECTED
    assert parsed.reasoning == reasoning


def test_reasoning_of_any_shape_is_kept_under_other_rubrics():
    from trace_eval.rubrics import load_rubric

    rubric = load_rubric("multi-aspect")
    doc = {"reasoning": {n: "why" for n in rubric.names}}
    doc.update({n: rubric.dimension(n).labels.values[0] for n in rubric.names})
    parsed = parse_verdict(json.dumps(doc), rubric)
    assert parsed.ok, parsed.error
    assert parsed.reasoning == {n: "why" for n in rubric.names}


def test_a_missing_reasoning_is_still_invalid():
    doc = {k: v for k, v in VALID.items() if k != "reasoning"}
    assert "reasoning" in parse_verdict(json.dumps(doc), TRACE).error


def test_trace_release_key_is_read_as_paralinguistics():
    doc = dict(VALID)
    doc["instruction_following_audio"] = doc.pop("paralinguistics")
    assert parse_verdict(json.dumps(doc), TRACE).verdicts == EXPECTED


@pytest.mark.parametrize(
    "value, label",
    [
        (1, "1"),
        (2, "2"),
        ("Both Good", "both_good"),
        ("both-bad", "both_bad"),
        ("Response 2", "2"),
        (" BOTH_GOOD ", "both_good"),
    ],
)
def test_unambiguous_spellings_are_normalised(value, label):
    doc = dict(VALID, content=value)
    assert parse_verdict(json.dumps(doc), TRACE).verdicts["content"] == label


@pytest.mark.parametrize(
    "doc, fragment",
    [
        (dict(VALID, content="tie"), "content"),
        (dict(VALID, voice_quality="A"), "voice_quality"),
        (dict(VALID, paralinguistics=3), "paralinguistics"),
        ({k: v for k, v in VALID.items() if k != "paralinguistics"}, "paralinguistics"),
        ({k: v for k, v in VALID.items() if k != "reasoning"}, "reasoning"),
    ],
)
def test_wrong_labels_and_missing_keys_are_invalid_never_guessed(doc, fragment):
    parsed = parse_verdict(json.dumps(doc), TRACE)
    assert not parsed.ok and parsed.verdicts is None
    assert fragment in parsed.error


@pytest.mark.parametrize("text", ["", "   ", "I think response 1 is better overall.", "{not json}", "[1, 2, 3]"])
def test_answers_without_a_verdict_object_are_invalid(text):
    parsed = parse_verdict(text, TRACE)
    assert not parsed.ok and parsed.error


def test_response_schema_is_strict_and_lists_every_label():
    schema = TRACE.response_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"reasoning", *TRACE.names}
    for dim in TRACE.names:
        assert schema["properties"][dim]["enum"] == list(fusion.LABELS)


@pytest.mark.parametrize(
    "doc",
    [
        VALID,
        {**VALID, "content": "tie"},
        {**VALID, "voice_quality": None},
        {**VALID, "voice_quality": None, "undetermined": {"voice_quality": "no DNSMOS"}},
        {**VALID, "voice_quality": None, "undetermined": {"content": "no quoted words"}},
        {**VALID, "undetermined": {"loudness": "x"}},
        {**VALID, "undetermined": {"content": ""}},
        {"reasoning": "r", "content": "1"},
    ],
)
def test_the_trace_verdict_schema_file_is_what_the_rubric_generates(doc):
    generated = jsonschema.Draft202012Validator(TRACE.verdict_schema())
    file_accepts = not validation_errors("verdict", doc)
    assert file_accepts == (not list(generated.iter_errors(doc)))
    assert file_accepts == (doc is VALID or "undetermined" in doc and set(doc["undetermined"]) == {"voice_quality"})


def test_swap_back_exchanges_winners_and_keeps_ties():
    assert swap_back({"content": "1", "voice_quality": "2", "paralinguistics": "both_bad"}, SPACES) == {
        "content": "2",
        "voice_quality": "1",
        "paralinguistics": "both_bad",
    }
    assert swap_back({"content": "both_good"}, SPACES) == {"content": "both_good"}


def _v(c, vq, p):
    return {"content": c, "voice_quality": vq, "paralinguistics": p}


def test_majority_per_dimension_with_earliest_sample_breaking_ties():
    samples = [_v("1", "both_good", "2"), _v("2", "both_good", "both_bad"), _v("2", "1", "1")]
    # content: 2 twice; voice_quality: both_good twice; paralinguistics: three-way tie -> sample 0's "2"
    assert majority(samples) == _v("2", "both_good", "2")
    assert majority([_v("1", "1", "1"), _v("2", "2", "2")]) == _v("1", "1", "1")


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("1", "1", "1"),
        ("both_good", "both_good", "both_good"),
        ("1", "2", "both_good"),
        ("1", "both_good", "both_good"),
        ("2", "both_bad", "both_bad"),
        ("both_good", "both_bad", "both_bad"),
    ],
)
def test_order_disagreement_becomes_a_typed_tie(a, b, expected):
    assert resolve_orders(_v(a, a, a), _v(b, b, b), SPACES) == _v(expected, expected, expected)
    assert resolve_orders(_v(b, b, b), _v(a, a, a), SPACES) == _v(expected, expected, expected)  # symmetric


def test_request_key_covers_what_changes_answers_only():
    base = {
        "backbone": "openai/x",
        "messages": [{"role": "user", "content": "hi"}],
        "sampling": {"temperature": 0},
        "sample_index": 0,
    }
    assert request_key(base) == request_key(dict(reversed(list(base.items()))))  # key order does not matter
    for change in (
        {"backbone": "openai/y"},
        {"sample_index": 1},
        {"sampling": {"temperature": 0.7}},
        {"messages": [{"role": "user", "content": "hi!"}]},
    ):
        assert request_key({**base, **change}) != request_key(base)


def test_cache_round_trip_and_damaged_entries(tmp_path):
    cache = AnswerCache(tmp_path)
    key = request_key({"a": 1})
    assert cache.get(key) is None
    cache.put(key, {"text": "answer", "prompt_tokens": 3})
    assert cache.get(key)["text"] == "answer"
    assert not list(tmp_path.rglob("*.tmp"))  # atomic write leaves no temporary file
    path = next(tmp_path.rglob(f"{key}.json"))
    path.write_text("{truncated")
    assert cache.get(key) is None
    assert AnswerCache(tmp_path, read=False).get(key) is None
