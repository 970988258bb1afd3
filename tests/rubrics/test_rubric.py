"""Rubrics as data: loading and validation, label spaces, answer parsing, and the registered
metrics on hand-checked cases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import fusion
from trace_eval.evaluation import scores
from trace_eval.evaluation.scores import ItemScores, agreement_credit
from trace_eval.judge.parse import parse_verdict
from trace_eval.judge.prompts import load_prompt
from trace_eval.rubrics import RubricError, available_rubrics, label_space, load_rubric, render_field
from trace_eval.schemas import validation_errors

TYPED, WLT, LIKERT, BINARY = (label_space(k) for k in ("typed-tie", "win-lose-tie", "likert", "binary"))

# -- the bundled rubrics ---------------------------------------------------------------------


def test_bundled_rubrics_load_with_their_dimensions_and_label_spaces():
    assert set(available_rubrics()) == {"trace", "multi-aspect", "roleplay", "style", "interaction"}
    expected = {
        "trace": ("pairwise", {"content": "typed-tie", "voice_quality": "typed-tie", "paralinguistics": "typed-tie"}),
        "multi-aspect": (
            "pairwise",
            {
                d: "win-lose-tie"
                for d in (
                    "truthfulness",
                    "honesty",
                    "helpfulness",
                    "instruction_following",
                    "speech_instruction_following",
                )
            },
        ),
        "roleplay": (
            "pointwise",
            {
                d: "likert"
                for d in (
                    "logical_coherence",
                    "content_relevance",
                    "context_consistency",
                    "emotional_appropriateness",
                    "style_alignment",
                )
            },
        ),
        "style": ("pointwise", {"style_following": "likert", "style": "likert", "realism": "binary"}),
        "interaction": ("pairwise", {"interaction": "typed-tie"}),
    }
    for name, (form, dimensions) in expected.items():
        rubric = load_rubric(name)
        assert rubric.format == form
        assert {d.name: d.labels.kind for d in rubric.dimensions} == dimensions
        assert all(d.asks.strip() for d in rubric.dimensions)
        assert set(rubric.metrics) <= set(scores.METRICS) | {"trace"}, name
        for prompt in rubric.prompts.values():
            assert prompt.id == f"{prompt.name}-v{prompt.version}"
    assert load_rubric("multi-aspect").metrics == ("accuracy", "agreement", "position_consistency")
    assert load_rubric("roleplay").metrics == ("accuracy", "mae")
    assert load_rubric("style").metrics == ("pearson", "system_means", "self_consistency")


def test_trace_is_the_default_and_keeps_its_prompt_files_and_fusion():
    trace = load_rubric()
    assert trace.name == "trace" and trace.metrics == ("trace",)
    assert trace.names == ("content", "voice_quality", "paralinguistics")
    assert trace.fusion.policies == tuple(fusion.POLICIES)
    assert list(trace.prompts) == ["trace", "transcript", "audio"] and trace.default_prompt == "trace"
    for name, prompt in trace.prompts.items():
        assert prompt == load_prompt(name)
    assert trace.dimension("paralinguistics").aliases == ("instruction_following_audio",)
    assert not any(load_rubric(n).fusion for n in ("multi-aspect", "roleplay", "style"))


@pytest.mark.parametrize(
    "doc",
    [
        {"reasoning": "r", "content": "1", "voice_quality": "both_good", "paralinguistics": "2"},
        {"reasoning": "r", "content": "tie", "voice_quality": "A", "paralinguistics": 3},
        {"content": "1", "voice_quality": "2"},
        {"reasoning": None, "content": "1", "voice_quality": "2", "paralinguistics": "both_bad", "extra": 1},
        [1, 2],
    ],
)
def test_trace_verdict_schema_of_the_rubric_is_the_schema_file(doc):
    import jsonschema

    generated = jsonschema.Draft202012Validator(load_rubric("trace").verdict_schema())
    messages = sorted(e.message for e in generated.iter_errors(doc))
    assert messages == sorted(line.split(": ", 1)[1] for line in validation_errors("verdict", doc))


# -- label spaces ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "space, value, label",
    [
        (TYPED, "Both Good", "both_good"),
        (TYPED, 2, "2"),
        (TYPED, "tie", "tie"),  # left as it is: invalid
        (WLT, "Tie", "tie"),
        (WLT, " TIE ", "tie"),
        (WLT, 1, "1"),
        (WLT, "Response 2", "2"),
        (WLT, "both_good", "both_good"),
        (LIKERT, "4", 4),
        (LIKERT, 4.0, 4),
        (LIKERT, "4/5", 4),
        (LIKERT, 3.5, 3.5),
        (LIKERT, "four", "four"),
        (LIKERT, True, True),
        (BINARY, "yes", 1),
        (BINARY, False, 0),
        (BINARY, "1", 1),
        (BINARY, "maybe", "maybe"),
    ],
)
def test_label_spaces_normalise_only_unambiguous_spellings(space, value, label):
    assert space.normalise(value) == label and type(space.normalise(value)) is type(label)


def test_label_space_values_descriptions_and_ranges():
    assert WLT.values == ("1", "2", "tie") and WLT.ties == {"tie"} and TYPED.ties == {"both_good", "both_bad"}
    assert LIKERT.values == (1, 2, 3, 4, 5) and label_space("likert", (0, 10)).values[-1] == 10
    assert WLT.describe() == '"1", "2" or "tie"' and LIKERT.describe() == "an integer from 1 to 5"
    assert LIKERT.json_schema() == {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    with pytest.raises(ValueError, match="expected one of"):
        label_space("stars")


def test_swap_and_order_disagreement_per_space():
    assert [WLT.swap(x) for x in ("1", "2", "tie")] == ["2", "1", "tie"]
    assert WLT.resolve_orders("1", "2") == "tie" and WLT.resolve_orders("2", "2") == "2"
    assert TYPED.resolve_orders("1", "both_bad") == "both_bad" and TYPED.resolve_orders("1", "2") == "both_good"
    with pytest.raises(ValueError, match="pointwise"):
        LIKERT.swap(3)


@pytest.mark.parametrize(
    "space, value, human",
    [
        (LIKERT, 3.5, 3.5),
        (LIKERT, "4", 4),
        (LIKERT, 6, None),
        (LIKERT, "great", None),
        (BINARY, 0.5, 0.5),
        (WLT, "Tie", "tie"),
        (WLT, "both_good", None),
        (TYPED, "Both Bad", "both_bad"),
        (WLT, None, None),
    ],
)
def test_human_labels_in_a_space(space, value, human):
    assert space.normalise_human(value) == human


# -- rubric files ----------------------------------------------------------------------------

INLINE_PROMPT = {
    "name": "mine",
    "version": 1,
    "system": "Rate.\n$dimensions\n$answer_format",
    "user": "$instruction\n$blueprint",
    "repair": "Again: $error",
}


def _write_rubric(path: Path, **changes) -> Path:
    doc = {
        "name": "mine",
        "version": 1,
        "description": "a test rubric",
        "format": "pointwise",
        "dimensions": [{"name": "clarity", "asks": "Is it clear?", "labels": "likert"}],
        "prompts": [INLINE_PROMPT],
        "metrics": ["mae"],
    }
    doc.update(changes)
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def test_a_rubric_file_of_ones_own_by_path(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "other.yaml").write_text(json.dumps({**INLINE_PROMPT, "name": "other", "version": 2}))
    rubric = load_rubric(str(_write_rubric(tmp_path / "mine.yaml", prompts=[INLINE_PROMPT, "prompts/other.yaml"])))
    assert rubric.name == "mine" and list(rubric.prompts) == ["mine", "other"]
    assert rubric.prompt("other").id == "other-v2" and rubric.prompt().id == "mine-v1"
    with pytest.raises(RubricError, match="has no prompt 'nope'; expected one of: mine, other"):
        rubric.prompt("nope")
    with pytest.raises(RubricError, match="unknown rubric 'sageish'; expected one of: .*multi-aspect"):
        load_rubric("sageish")
    with pytest.raises(RubricError, match="no such rubric file"):
        load_rubric(str(tmp_path / "missing.yaml"))


@pytest.mark.parametrize(
    "changes, fragments",
    [
        ({"format": "pairwise"}, ["pairwise label spaces", "clarity"]),
        ({"dimensions": [{"name": "a", "asks": "?", "labels": "stars"}]}, ["dimensions/0/labels", "stars"]),
        ({"dimensions": [{"name": "a", "asks": "?", "labels": "likert"}] * 2}, ["a appears more than once"]),
        (
            {"dimensions": [{"name": "a", "asks": "?", "labels": "binary", "range": [0, 3]}]},
            ["range applies to likert"],
        ),
        ({"fusion": "policies"}, ["former spelling", "order: [content, paralinguistics, voice_quality]"]),
        ({"fusion": {"order": ["clarity"], "acceptability": ["clarity"]}}, ["typed-tie labels; clarity has another"]),
        (
            {
                "format": "pairwise",
                "dimensions": [
                    {"name": "a", "asks": "?", "labels": "typed-tie"},
                    {"name": "b", "asks": "?", "labels": "typed-tie"},
                ],
                "fusion": {"order": ["a", "c"], "acceptability": ["b"], "policies": ["cap", "majority"]},
            },
            [
                "order names c, which is not a dimension",
                "order must name every dimension once (a, b)",
                "acceptability names b, which is not in order",
                "unknown fusion policy 'majority'",
            ],
        ),
        ({"metrics": ["trace", "mae"]}, ["needs an overall label (fusion)", "list it alone"]),
        ({"prompts": ["no-such-prompt"]}, ["prompts/0", "no-such-prompt"]),
        ({"prompts": [{"name": "x", "version": 1, "system": "s", "repair": "r"}]}, ["missing user or user_parts"]),
        (
            {"dimensions": [{"name": "a", "asks": "?", "labels": "likert", "anchors": {"9": "off the scale"}}]},
            ["anchor 9"],
        ),
        ({"colour": "blue", "version": 0}, ["colour", "version"]),
    ],
)
def test_malformed_rubrics_say_every_problem(tmp_path, changes, fragments):
    with pytest.raises(RubricError) as caught:
        load_rubric(str(_write_rubric(tmp_path / "bad.yaml", **changes)))
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_item_fields_become_prompt_text():
    turns = [
        {"speaker": "User", "text": "Who are you?"},
        {"role": "Holmes", "content": " A detective. "},
        "User: I see.",
    ]
    assert render_field(turns) == "User: Who are you?\nHolmes: A detective.\nUser: I see."
    assert render_field({"name": "Holmes", "traits": ["cold", "precise"]}) == "name: Holmes\ntraits: cold, precise"
    assert render_field(["slowly", "quietly"]) == "slowly, quietly"
    assert render_field(3.5) == "3.5"


# -- answers against a rubric ----------------------------------------------------------------

MULTI = load_rubric("multi-aspect")
STYLE = load_rubric("style")


def _answer(**labels) -> str:
    return json.dumps({"reasoning": "r", **labels})


def test_win_lose_tie_answers_are_read_and_out_of_space_labels_are_invalid():
    labels = dict(
        truthfulness="1",
        honesty="Tie",
        helpfulness=2,
        instruction_following="Response 1",
        speech_instruction_following="tie",
    )
    parsed = parse_verdict(f"```json\n{_answer(**labels)}\n```", MULTI)
    assert parsed.ok and parsed.verdicts == {
        "truthfulness": "1",
        "honesty": "tie",
        "helpfulness": "2",
        "instruction_following": "1",
        "speech_instruction_following": "tie",
    }
    wrong = parse_verdict(_answer(**{**labels, "honesty": "both_good"}), MULTI)
    assert not wrong.ok and "honesty: 'both_good' is not one of ['1', '2', 'tie']" in wrong.error
    missing = parse_verdict(_answer(truthfulness="1"), MULTI)
    assert "'honesty' is a required property" in missing.error
    assert "truthfulness" in parse_verdict("Response 1 is more truthful.", MULTI).error


@pytest.mark.parametrize(
    "value, ok", [(4, True), ("4/5", True), (5.0, True), (0, False), (7, False), (3.5, False), ("excellent", False)]
)
def test_likert_scores_outside_1_to_5_are_invalid(value, ok):
    parsed = parse_verdict(_answer(style_following=value), STYLE, ("style_following",))
    assert parsed.ok is ok
    if not ok:
        assert parsed.error.startswith("style_following: ") and parsed.verdicts is None


def test_only_the_dimensions_asked_are_required():
    dialogue = ("style", "realism")
    parsed = parse_verdict(_answer(style=3, realism="yes"), STYLE, dialogue)
    assert parsed.verdicts == {"style": 3, "realism": 1}
    assert "'realism' is a required property" in parse_verdict(_answer(style=3), STYLE, dialogue).error
    assert not parse_verdict(_answer(style=3, realism=2), STYLE, dialogue).ok
    schema = STYLE.response_schema(dialogue)
    assert schema["required"] == ["reasoning", "style", "realism"] and schema["additionalProperties"] is False
    assert schema["properties"]["realism"] == {"type": "integer", "enum": [0, 1]}


# -- metrics on hand-checked cases -------------------------------------------------------------


def _items(rubric, judged: list, human: list, dim: str, systems=None, samples=None, orders=None) -> list[ItemScores]:
    items = []
    for n, (j, h) in enumerate(zip(judged, human)):
        items.append(
            ItemScores(
                str(n),
                (systems or [None] * len(judged))[n],
                None if j is None else {dim: j},
                {} if h is None else {dim: h},
                [{dim: s} for s in (samples[n] if samples else [])],
                orders[n] if orders else None,
            )
        )
    return items


@pytest.mark.parametrize(
    "judge, human, credit",
    [
        ("1", "1", 1.0),
        ("tie", "tie", 1.0),
        ("tie", "2", 0.5),
        ("1", "tie", 0.5),
        ("1", "2", 0.0),
    ],
)
def test_agreement_credit(judge, human, credit):
    assert agreement_credit(judge, human, WLT.ties) == credit


def test_agreement_and_accuracy_with_half_credit_for_ties():
    judged = ["1", "tie", "2", "1", "2", None]
    human = ["1", "1", "1", "tie", "2", "2"]  # credits 1, .5, 0, .5, 1; the last item failed
    items = _items(MULTI, judged, human, "truthfulness")
    slot = scores.agreement(MULTI, items)["truthfulness"]
    assert slot == {"value": 3 / 5, "n": 5, "credit": 3.0}
    assert scores.accuracy(MULTI, items)["truthfulness"] == {"value": 2 / 5, "n": 5, "correct": 2}
    assert scores.agreement(MULTI, items)["honesty"]["value"] is None  # no labels at all
    assert scores.agreement(MULTI, items)["all"]["value"] == pytest.approx(3 / 5)


def test_position_consistency_from_both_orders():
    orders = [
        {"original": {"honesty": "1"}, "swapped": {"honesty": "1"}},
        {"original": {"honesty": "1"}, "swapped": {"honesty": "2"}},
        {"original": {"honesty": "tie"}, "swapped": {"honesty": "tie"}},
        None,
    ]
    items = _items(MULTI, ["1", "tie", "tie", "2"], [None] * 4, "honesty", orders=orders)
    assert scores.position_consistency(MULTI, items)["honesty"] == {"value": 2 / 3, "n": 3}
    unswapped = scores.position_consistency(MULTI, _items(MULTI, ["1"], ["1"], "honesty"))
    assert unswapped["honesty"]["value"] is None and "--swap" in unswapped["honesty"]["reason"]


def test_mae_and_exact_accuracy_of_scores():
    roleplay = load_rubric("roleplay")
    items = _items(roleplay, [4, 2, 5, 3], [3, 2, 3, 3.5], "logical_coherence")  # errors 1, 0, 2, 0.5
    assert scores.mae(roleplay, items)["logical_coherence"] == {"value": 3.5 / 4, "n": 4}
    assert scores.accuracy(roleplay, items)["logical_coherence"]["correct"] == 1  # 3.5 never matches


def test_pearson_against_the_formula():
    judge, human = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    mj, mh = sum(judge) / 5, sum(human) / 5
    cov = sum((a - mj) * (b - mh) for a, b in zip(judge, human))
    r = cov / math.sqrt(sum((a - mj) ** 2 for a in judge) * sum((b - mh) ** 2 for b in human))
    assert r == pytest.approx(0.8)
    slot = scores.pearson(STYLE, _items(STYLE, judge, human, "style_following"))["style_following"]
    assert slot["value"] == pytest.approx(r) and slot["n"] == 5 and 0 < slot["p_value"] < 0.2
    constant = scores.pearson(STYLE, _items(STYLE, [3, 3, 3], [1, 2, 3], "style_following"))["style_following"]
    assert constant["value"] is None and "the judge gave every item the same score" in constant["reason"]
    assert scores.pearson(STYLE, _items(STYLE, [1, 2], [1, 2], "style_following"))["style_following"]["value"] is None


def test_system_means_per_dimension():
    items = _items(STYLE, [5, 3, 2, None], [4, 4, 1, 2], "style_following", systems=["a", "a", "b", "b"])
    systems = scores.system_means(STYLE, items)["style_following"]["systems"]
    assert systems == {
        "a": {"judge": 4.0, "judge_n": 2, "human": 4.0, "human_n": 2},
        "b": {"judge": 2.0, "judge_n": 1, "human": 1.5, "human_n": 2},
    }


def test_self_consistency_over_samples():
    samples = [[4, 4, 5], [2, 2, 2], [3]]  # the last item has one answer: left out
    items = _items(STYLE, [4, 2, 3], [4, 2, 3], "style_following", samples=samples)
    slot = scores.self_consistency(STYLE, items)["style_following"]
    assert slot["value"] == pytest.approx((2 / 3 + 1) / 2) and slot["n"] == 2
    assert slot["mean_std"] == pytest.approx((math.sqrt(2 / 9) + 0) / 2)
    one = scores.self_consistency(STYLE, _items(STYLE, [4], [4], "style_following", samples=[[4]]))
    assert "--samples" in one["style_following"]["reason"]


def test_a_rubric_naming_an_unknown_metric_is_refused_at_evaluation(tmp_path):
    rubric = load_rubric(str(_write_rubric(tmp_path / "odd.yaml", metrics=["mae", "spearman"])))
    with pytest.raises(scores.UnknownMetric, match="spearman.*expected among: accuracy"):
        scores.compute(rubric, [])


def test_human_labels_outside_the_label_space_are_left_out_with_a_reason(tmp_path):
    from trace_eval.evaluation import load_human_labels

    items = [
        {
            "id": "a",
            "instruction_text": "hi",
            "audio_path": "a.wav",
            "model": "alpha",
            "label": {"style_following": 3.5},
        },
        {
            "id": "b",
            "instruction_text": "hi",
            "audio_path": "b.wav",
            "model_a": "bravo",
            "label": {"style_following": 9, "realism": "yes"},
        },
        {"id": "c", "instruction_text": "hi", "audio_path": "c.wav", "label": {"style": "superb"}},
    ]
    (tmp_path / "manifest.json").write_text(json.dumps(items))
    human = load_human_labels(tmp_path, STYLE)
    assert human.labels == {"a": {"style_following": 3.5}, "b": {"realism": 1}, "c": {}}
    assert human.systems == {"a": "alpha", "b": "bravo", "c": None}
    assert [p.split(":")[0] for p in human.problems] == ["item b", "item c"]
    assert "label.style_following = 9 is not in the likert space (an integer from 1 to 5)" in human.problems[0]
