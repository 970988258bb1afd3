"""Each shipped rubric end to end: judged through the local OpenAI-compatible server
(litellm, real HTTP), then evaluated; prompts carry the item's context, answers are
held to the rubric's label spaces, and the metrics come out as computed by hand."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from llm_server import LLMServer, PairSpec, PointSpec, Reply, blueprint, prompt_text, scores_json, write_benchmark

from trace_eval.cli import main
from trace_eval.judge import JudgeError, JudgeOptions, MissingBlueprintsError, RetryPolicy, run_judge
from trace_eval.judge.prompts import blueprint_view
from trace_eval.judge.runfolder import read_results
from trace_eval.rubrics import load_rubric

FAST_RETRY = RetryPolicy(max_retries=1, base_delay_s=0.01, max_delay_s=0.02)
ROOT = Path(__file__).resolve().parents[2]
MINI_STYLE = ROOT / "examples" / "mini-style"
ASPECTS = ("truthfulness", "honesty", "helpfulness", "instruction_following", "speech_instruction_following")
ROLEPLAY = (
    "logical_coherence",
    "content_relevance",
    "context_consistency",
    "emotional_appropriateness",
    "style_alignment",
)


@pytest.fixture
def server():
    with LLMServer() as s:
        yield s


def judge(bench: Path, server: LLMServer, tmp_path: Path, out: str = "run", **options):
    options.setdefault("model", "openai/test-judge")
    return run_judge(
        JudgeOptions(
            bench=bench,
            api_base=server.api_base,
            api_key="dummy",
            retry=FAST_RETRY,
            cache_dir=tmp_path / "cache",
            out=tmp_path / out,
            progress=False,
            **options,
        ),
        notice=lambda message: None,
    )


def records(outcome) -> dict[str, dict]:
    return {r["id"]: r for r in read_results(outcome.out / "results.jsonl").records}


def evaluate(run: Path, capsys, *extra: str) -> dict:
    assert main(["evaluate", str(run), *extra]) == 0, capsys.readouterr().err
    metrics = json.loads((run / "evaluation" / "metrics.json").read_text(), parse_constant=pytest.fail)
    assert (run / "evaluation" / "report.md").is_file() and (run / "evaluation" / "report.html").is_file()
    return metrics


def _aspects(*labels: str, **extra) -> str:
    return scores_json(**dict(zip(ASPECTS, labels)), **extra)


# -- multi-aspect (SageLM) ------------------------------------------------------------------


def _multi_aspect_bench(root: Path) -> Path:
    # Each response says which pair and side it is, so the responder can route on the prompt.
    specs: list = [
        PairSpec(
            id=f"p{i}",
            response_1=blueprint(f"answer {i} one"),
            response_2=blueprint(f"answer {i} two"),
            label=dict(zip(ASPECTS, human)),
        )
        for i, human in enumerate(
            [("1", "1", "2", "tie", "1"), ("2", "tie", "tie", "1", "2"), ("1", "2", "1", "1", "tie")]
        )
    ]
    specs.append(PointSpec(id="single"))  # one answer: not for a pairwise rubric
    return write_benchmark(root, specs)


def test_multi_aspect_prompt_answers_and_agreement(tmp_path, server, capsys):
    bench = _multi_aspect_bench(tmp_path / "bench")
    answers = {
        "answer 0 one": _aspects("1", "1", "1", "1", "1"),  # vs human 1 1 2 tie 1
        "answer 1 one": _aspects("2", "2", "tie", "1", "tie"),  # vs human 2 tie tie 1 2
        "answer 2 one": _aspects("Tie", "2", "1", "Response 1", 2),
    }  # vs human 1 2 1 1 tie
    server.responder = lambda body: Reply(next(a for key, a in answers.items() if key in prompt_text(body)))
    outcome = judge(bench, server, tmp_path, rubric="multi-aspect")

    system, user = server.requests[0]["messages"]
    for dimension in (
        "Truthfulness",
        "Honesty",
        "Helpfulness",
        "Instruction Following",
        "Speech Instruction Following",
        "a character's voice",
    ):
        assert dimension in system["content"]
    assert '"speech_instruction_following": "<label>"' in system["content"] and '"tie"' in system["content"]
    assert "both_good" not in system["content"]
    shown = user["content"].split("Response 1 blueprint:\n", 1)[1]
    first, second = (
        json.loads(block.split("\n\n")[0])["agent_response"] for block in shown.split("Response 2 blueprint:\n")
    )
    assert (first, second) == (first, first.replace("one", "two")) and first.endswith(" one")

    found = records(outcome)
    assert found["p2"]["verdicts"] == dict(zip(ASPECTS, ("tie", "2", "1", "1", "2")))
    assert found["single"]["status"] == "error" and "pairwise" in found["single"]["reason"]
    assert found["p0"]["fused"] == {} and found["p0"]["overall"] is None
    assert server.request_count == 3
    assert outcome.summary["labels"]["truthfulness"] == {"1": 1, "2": 1, "tie": 1}
    config = json.loads((outcome.out / "config.json").read_text())
    assert (config["rubric"], config["prompt_version"]) == ("multi-aspect", "multi-aspect-v1")

    metrics = evaluate(outcome.out, capsys)
    run = metrics["runs"][0]
    # accuracy by hand: p0 3/5 (truth, honesty, speech), p1 3/5 (truth, helpfulness, instruction),
    # p2 3/5 (honesty, helpfulness, instruction)
    assert (run["metrics"]["accuracy"]["all"]["correct"], run["metrics"]["accuracy"]["all"]["n"]) == (9, 15)
    # agreement: p0 1+1+0+.5+1, p1 1+.5+1+1+.5, p2 .5+1+1+1+.5 -> 11.5 / 15
    assert run["metrics"]["agreement"]["all"]["value"] == pytest.approx(11.5 / 15)
    assert run["metrics"]["agreement"]["helpfulness"] == {"value": 2 / 3, "n": 3, "credit": 2.0}
    assert run["metrics"]["position_consistency"]["all"]["value"] is None  # judged without --swap
    assert run["items"]["failed"] == 1 and run["no_verdict"][0]["id"] == "single"
    assert "agreement 0.767" in capsys.readouterr().out

    again = judge(bench, server, tmp_path, out="again", rubric="multi-aspect")
    assert server.request_count == 3 and again.summary["run"]["cache_hits"] == 3


def test_multi_aspect_out_of_space_answer_is_repaired_then_invalid(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 2)
    typed_tie = _aspects("1", "both_good", "1", "1", "1")  # a TRACE label where win/lose/tie is asked

    def responder(body):  # pair 0 gets it right when asked again; pair 1 never does
        repaired = len(body["messages"]) > 2 and "answer 0 one" in prompt_text(body)
        return Reply(_aspects("1", "tie", "1", "1", "1") if repaired else typed_tie)

    server.responder = responder
    outcome = judge(bench, server, tmp_path, rubric="multi-aspect")
    found = records(outcome)
    assert found["p0000"]["status"] == "ok" and found["p0000"]["repairs"] == 1
    assert found["p0000"]["verdicts"]["honesty"] == "tie"
    repair = next(b for b in server.requests if len(b["messages"]) > 2)["messages"]
    assert repair[-2] == {"role": "assistant", "content": typed_tie}
    assert "'both_good' is not one of ['1', '2', 'tie']" in repair[-1]["content"]
    assert '"honesty": "<label>"' in repair[-1]["content"]
    assert found["p0001"]["status"] == "invalid" and "honesty" in found["p0001"]["reason"]
    assert found["p0001"]["raw"] == typed_tie and set(found["p0001"]["verdicts"].values()) == {None}
    assert server.request_count == 4


def test_multi_aspect_swap_maps_back_and_measures_position_consistency(tmp_path, server, capsys):
    bench = write_benchmark(
        tmp_path / "bench",
        [
            PairSpec(
                id=f"p{i}",
                response_1=blueprint(f"answer {i} one"),
                response_2=blueprint(f"answer {i} two"),
                label=dict(zip(ASPECTS, ("1", "1", "1", "1", "1"))),
            )
            for i in range(2)
        ],
    )

    def responder(body):
        # Truthfulness always goes to whatever is shown first (position bias); the other aspects
        # always prefer "answer N one" wherever it is shown.
        text = prompt_text(body)
        one_first = text.index(' one"') < text.index(' two"')
        preferred = "1" if one_first else "2"
        return Reply(_aspects("1", preferred, preferred, preferred, "tie"))

    server.responder = responder
    outcome = judge(bench, server, tmp_path, rubric="multi-aspect", swap=True)
    record = records(outcome)["p0"]
    assert record["orders"]["swapped"] == dict(zip(ASPECTS, ("2", "1", "1", "1", "tie")))
    assert record["verdicts"] == dict(zip(ASPECTS, ("tie", "1", "1", "1", "tie")))  # inconsistent -> tie
    consistency = outcome.summary["position_consistency"]
    assert consistency["per_dimension"]["truthfulness"] == 0.0 and consistency["rate"] == pytest.approx(4 / 5)
    assert consistency["rule"] == "disagreement -> tie"
    metrics = evaluate(outcome.out, capsys)["runs"][0]["metrics"]
    assert metrics["position_consistency"]["truthfulness"] == {"value": 0.0, "n": 2}
    assert metrics["position_consistency"]["all"]["value"] == pytest.approx(4 / 5)
    assert metrics["agreement"]["truthfulness"]["value"] == 0.5  # tie against a human winner


def test_structured_output_sends_the_rubric_label_space(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    server.default = Reply(_aspects("1", "2", "tie", "1", "2"))
    judge(bench, server, tmp_path, rubric="multi-aspect", structured="on")
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["reasoning", *ASPECTS]
    assert schema["properties"]["honesty"] == {"type": "string", "enum": ["1", "2", "tie"]}


# -- roleplay (RoleJudge) -------------------------------------------------------------------

HOLMES = {
    "name": "Sherlock Holmes",
    "personality": "cold, precise, impatient with small talk",
    "voice": "a crisp baritone, quick",
}
HISTORY = [
    {"speaker": "User", "text": "Mr Holmes, my brother has vanished."},
    {"speaker": "Sherlock Holmes", "text": "Vanished from where, precisely?"},
]


def _roleplay_bench(root: Path) -> Path:
    return write_benchmark(
        root,
        [
            PointSpec(
                id="turn-3",
                instruction_text="From his locked study.",
                response=blueprint("the lock tells me much"),
                fields={"character": HOLMES, "dialogue_history": HISTORY},
                label={
                    "logical_coherence": 4,
                    "content_relevance": 5,
                    "context_consistency": 4,
                    "emotional_appropriateness": 3,
                    "style_alignment": 2,
                },
            ),
            PointSpec(
                id="turn-1",
                instruction_text="Good evening, who are you?",
                response=blueprint("I am Holmes"),
                fields={"character": "Sherlock Holmes, a consulting detective in London."},
                label={
                    "logical_coherence": 5,
                    "content_relevance": 3.5,
                    "context_consistency": 5,
                    "emotional_appropriateness": 4,
                    "style_alignment": 4,
                },
            ),
            PointSpec(id="anonymous", response=blueprint("who knows"), fields={"dialogue_history": HISTORY}),
        ],
    )


def test_roleplay_prompt_shows_character_and_history_and_scores_are_evaluated(tmp_path, server, capsys):
    bench = _roleplay_bench(tmp_path / "bench")
    answers = {
        "the lock tells me much": scores_json(**dict(zip(ROLEPLAY, (4, "5", 3, 3.0, "4/5")))),
        "I am Holmes": scores_json(**dict(zip(ROLEPLAY, (5, 3, 5, 2, 4)))),
    }
    server.responder = lambda body: Reply(next(a for key, a in answers.items() if key in prompt_text(body)))
    outcome = judge(bench, server, tmp_path, rubric="roleplay")
    assert server.request_count == 2  # the item without a character is never sent

    texts = {("lock" if "the lock" in prompt_text(b) else "first"): prompt_text(b) for b in server.requests}
    assert (
        "Character profile:\nname: Sherlock Holmes\npersonality: cold, precise, impatient with small talk"
        in texts["lock"]
    )
    assert (
        "Conversation so far:\nUser: Mr Holmes, my brother has vanished.\n"
        "Sherlock Holmes: Vanished from where, precisely?\n\nThe user's latest turn:\nFrom his locked study."
        in texts["lock"]
    )
    assert "Conversation so far:\n(none: this is the first turn)" in texts["first"]
    assert "Sherlock Holmes, a consulting detective in London." in texts["first"]
    for title in (
        "Logical Coherence",
        "Content Relevance",
        "Context Consistency",
        "Emotional Appropriateness",
        "Style Alignment",
        "an integer from 1 to 5",
    ):
        assert title in texts["lock"]

    found = records(outcome)
    assert found["turn-3"]["verdicts"] == dict(zip(ROLEPLAY, (4, 5, 3, 3, 4)))
    assert found["anonymous"]["status"] == "error" and "character" in found["anonymous"]["reason"]

    run = evaluate(outcome.out, capsys)["runs"][0]
    # errors turn-3: 0 0 1 0 2; turn-1: 0 0.5 0 2 0 -> 5.5 over 10
    assert run["metrics"]["mae"]["all"] == {"value": 0.55, "n": 10}
    assert run["metrics"]["mae"]["style_alignment"] == {"value": 1.0, "n": 2}
    assert run["metrics"]["accuracy"]["all"] == {"value": 0.6, "n": 10, "correct": 6}
    assert "mae 0.550" in capsys.readouterr().out


def test_roleplay_score_out_of_range_is_repaired_then_invalid(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", [PointSpec(id="x", fields={"character": "a pirate"})])
    server.default = Reply(scores_json(**dict(zip(ROLEPLAY, (4, 4, 4, 4, 7)))))
    outcome = judge(bench, server, tmp_path, rubric="roleplay")
    record = records(outcome)["x"]
    assert record["status"] == "invalid" and "style_alignment: 7 is not one of [1, 2, 3, 4, 5]" in record["reason"]
    assert server.request_count == 2 and "every score an integer from 1 to 5" in prompt_text(server.requests[1])


# -- style (StyleSet) -----------------------------------------------------------------------


def _style_bench(root: Path) -> Path:
    instruction = 'Say "keep your voice down" slowly and quietly.'
    return write_benchmark(
        root,
        [
            PointSpec(
                id=f"s{i}",
                instruction_text=instruction,
                response=blueprint(f"keep your voice down {i}"),
                fields={"style_elements": ["slowly", "quietly"], "model": system},
                label={"style_following": human},
            )
            for i, (system, human) in enumerate([("alpha", 5), ("alpha", 4), ("bravo", 2), ("bravo", 1)])
        ]
        + [
            PointSpec(
                id="d0",
                instruction_text="Act out a quarrel.",
                response=blueprint("you again"),
                fields={
                    "context": "two neighbours quarrel over a fence",
                    "model": "alpha",
                    "style_elements": ["angry", "then calm"],
                },
                label={"style": 4, "realism": 1},
            )
        ],
    )


def test_style_prompts_ask_per_item_and_metrics_follow(tmp_path, server, capsys):
    bench = _style_bench(tmp_path / "bench")
    # Three samples per item; the judge wavers on s1 only. Final scores: s0 5, s1 4, s2 3, s3 1, d0 (3, 1).
    samples = {"down 0": [5, 5, 5], "down 1": [4, 3, 4], "down 2": [3, 3, 3], "down 3": [1, 1, 1]}

    def responder(body):
        text = prompt_text(body)
        if "you again" in text:
            return Reply(scores_json(style=3, realism="yes"))
        key = next(k for k in samples if k in text)
        return Reply(scores_json(style_following=samples[key].pop(0)))

    server.responder = responder
    outcome = judge(bench, server, tmp_path, rubric="style", samples=3, temperature=0.7, concurrency=1)
    assert server.request_count == 15

    instruction = next(prompt_text(b) for b in server.requests if "down 0" in prompt_text(b))
    assert "Requested style elements: slowly, quietly" in instruction
    assert '"style_following": <score>' in instruction and '"realism"' not in instruction
    assert "2: the text is said with none of the requested style elements" in instruction
    dialogue = next(prompt_text(b) for b in server.requests if "you again" in prompt_text(b))
    assert "Dialogue scenario: two neighbours quarrel over a fence" in dialogue
    assert "Requested style elements: angry, then calm" in dialogue
    assert '"style": <score>, "realism": <score>}' in dialogue and "style_following" not in dialogue

    found = records(outcome)
    assert found["s1"]["verdicts"] == {"style_following": 4}
    assert [s["verdicts"]["style_following"] for s in found["s1"]["samples"]] == [4, 3, 4]
    assert found["d0"]["verdicts"] == {"style": 3, "realism": 1}

    run = evaluate(outcome.out, capsys)["runs"][0]
    metrics = run["metrics"]
    # judge 5 4 3 1 (mean 3.25) against humans 5 4 2 1 (mean 3): covariance 9, sums of squares 8.75 and 10
    assert metrics["pearson"]["style_following"]["value"] == pytest.approx(9 / (8.75 * 10) ** 0.5)
    assert metrics["pearson"]["style"]["value"] is None  # one dialogue item
    assert metrics["system_means"]["style_following"]["systems"] == {
        "alpha": {"judge": 4.5, "judge_n": 2, "human": 4.5, "human_n": 2},
        "bravo": {"judge": 2.0, "judge_n": 2, "human": 1.5, "human_n": 2},
    }
    consistency = metrics["self_consistency"]["style_following"]
    assert consistency["value"] == pytest.approx((1 + 2 / 3 + 1 + 1) / 4)
    assert consistency["mean_std"] == pytest.approx((0 + (2**0.5) / 3 + 0 + 0) / 4)
    assert metrics["self_consistency"]["realism"] == {"value": 1.0, "n": 1, "mean_std": 0.0}
    report = (outcome.out / "evaluation" / "report.md").read_text()
    assert "| alpha | 4.50 | 2 | 4.50 | 2 |" in report


def test_mini_style_through_an_audio_judge(tmp_path, server, capsys):
    from trace_eval.bench import load_benchmark

    bench = load_benchmark(MINI_STYLE)
    human = {pair.id: pair.label for pair in bench.pairs}

    def responder(body):  # answers the human scores of the clip it hears
        audio = next(p["input_audio"]["data"] for p in body["messages"][1]["content"] if p["type"] == "input_audio")
        pair = next(p for p in bench.pairs if (MINI_STYLE / p.audio_path).read_bytes() == base64.b64decode(audio))
        return Reply(scores_json(**human[pair.id]))

    server.responder = responder
    outcome = judge(MINI_STYLE, server, tmp_path, rubric="style", judge="style-audio")
    assert outcome.summary["status"]["ok"] == len(bench.pairs) == server.request_count
    for body in server.requests:
        parts = body["messages"][1]["content"]
        assert sum(p["type"] == "input_audio" for p in parts) == 1
        assert "Requested style elements:" in parts[0]["text"]
    metrics = evaluate(outcome.out, capsys)["runs"][0]["metrics"]
    assert metrics["pearson"]["style_following"]["value"] == pytest.approx(1.0)
    assert metrics["system_means"]["style_following"]["systems"]["charlie-s2s"]["judge"] == 2.5


def test_mini_style_blueprints_reach_the_prompt(tmp_path, server, style_example_with_blueprints):
    from trace_eval.bench import load_benchmark
    from trace_eval.stage1.store import BlueprintStore

    bench = load_benchmark(style_example_with_blueprints)
    store = BlueprintStore(bench.root)
    blueprints = [store.for_pair(pair)[1] for pair in bench.pairs]
    assert all(bp is not None for bp in blueprints)
    server.default = Reply(scores_json(style_following=3, style=3, realism=0))
    outcome = judge(style_example_with_blueprints, server, tmp_path, rubric="style")
    assert outcome.summary["status"]["ok"] == len(bench.pairs)
    keys = load_rubric("style").prompt().blueprint_keys
    texts = [prompt_text(body) for body in server.requests]
    for pair, bp in zip(bench.pairs, blueprints):
        shown = f"Blueprint of the speech:\n{json.dumps(blueprint_view(bp, keys), ensure_ascii=False)}"
        assert any(pair.instruction_text in text and shown in text for text in texts), pair.id


# -- a rubric of one's own ------------------------------------------------------------------


def test_a_rubric_file_of_ones_own_judges_end_to_end(tmp_path, server, capsys):
    rubric = tmp_path / "warmth.yaml"
    rubric.write_text(
        json.dumps(
            {
                "name": "warmth",
                "version": 3,
                "description": "how warm the voice sounds",
                "format": "pointwise",
                "dimensions": [
                    {"name": "warmth", "asks": "How warm is the voice?", "labels": "likert", "range": [0, 10]}
                ],
                "prompts": [
                    {
                        "name": "warmth",
                        "version": 1,
                        "system": "Rate.\n$dimensions\n$answer_format",
                        "user": "Listener: $listener\nMood asked: $mood\n$transcript",
                        "repair": "Again: $error",
                    }
                ],
                "requires": ["listener"],
                "defaults": {"listener": "unused"},
                "metrics": ["mae"],
            }
        )
    )
    bench = write_benchmark(
        tmp_path / "bench",
        [
            PointSpec(
                id="a",
                response=blueprint("hello dear"),
                fields={"listener": "a child", "mood": "tender"},
                label={"warmth": 8},
            ),
            PointSpec(id="b", response=blueprint("go away"), fields={"listener": "a rival"}, label={"warmth": 1}),
        ],
    )
    server.default = Reply(scores_json(warmth="9"))
    outcome = judge(bench, server, tmp_path, rubric=str(rubric))
    assert prompt_text(server.requests[0]).endswith("Listener: a child\nMood asked: tender\nhello dear")
    assert "an integer from 0 to 10" in prompt_text(server.requests[0])
    found = records(outcome)
    assert found["a"]["verdicts"] == {"warmth": 9}
    assert found["b"]["status"] == "error" and "shows $mood, which this item does not have" in found["b"]["reason"]
    assert server.request_count == 1
    assert json.loads((outcome.out / "config.json").read_text())["rubric_version"] == "warmth-v3"
    run = evaluate(outcome.out, capsys)["runs"][0]
    assert run["metrics"]["mae"]["warmth"] == {"value": 1.0, "n": 1}


# -- what is refused, and why ---------------------------------------------------------------


def test_rubric_errors_say_what_to_do(tmp_path, server, capsys, monkeypatch):
    bench = _style_bench(tmp_path / "bench")
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    assert main(["judge", "--bench", str(bench), "--rubric", "style", "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "`cues` backbone only judges the trace rubric" in err and "--model" in err
    with pytest.raises(JudgeError, match="--swap needs a pairwise rubric"):
        judge(bench, server, tmp_path, rubric="style", swap=True)
    with pytest.raises(JudgeError, match="no prompt 'audio'; expected one of: style, style-audio"):
        judge(bench, server, tmp_path, rubric="style", judge="audio")
    with pytest.raises(JudgeError, match="unknown rubric 'sagelm'"):
        judge(bench, server, tmp_path, rubric="sagelm")
    bare = write_benchmark(tmp_path / "bare", [PointSpec(id="x")], with_blueprints=False)
    # Its clip has the same bytes as one of `bench`, whose blueprint the shared store holds: a store of its own.
    monkeypatch.setenv("TRACE_STORE", str(tmp_path / "empty-store"))
    with pytest.raises(MissingBlueprintsError, match="1 clip\\(s\\).*audio/x_audio.wav.*make blueprints"):
        judge(bare, server, tmp_path, rubric="style")
    assert server.request_count == 0


def test_rubric_runs_are_not_fused_mixed_or_resumed_with_another_rubric(tmp_path, server, capsys):
    bench = write_benchmark(tmp_path / "bench", 1)
    server.default = Reply(_aspects("1", "2", "tie", "1", "2"))
    run = judge(bench, server, tmp_path, rubric="multi-aspect").out
    with pytest.raises(JudgeError, match="other settings \\(rubric: 'multi-aspect' -> 'trace'"):
        judge(bench, server, tmp_path)
    trace_run = judge(bench, server, tmp_path, out="trace-run", use_cache=False).out  # an answer of no use to trace

    assert main(["fuse", str(run), "--fusion", "cap"]) == 2
    assert "no overall label" in capsys.readouterr().err
    assert main(["evaluate", str(run), "--fusion", "vote"]) == 2
    assert "--fusion" in capsys.readouterr().err
    assert main(["evaluate", str(run), str(trace_run), "--out", str(tmp_path / "both")]) == 2
    assert "other rubrics than multi-aspect" in capsys.readouterr().err
    assert main(["evaluate", str(run), "--rubric", "roleplay"]) == 2
    assert "other rubrics than roleplay" in capsys.readouterr().err


# -- a rubric of one's own, with its own fusion --------------------------------------------------

TWO_DIMENSIONS = """\
name: answer-delivery
version: 1
description: "What is said, then how: two typed-tie dimensions fused with the answer as the gate"
format: pairwise
dimensions:
  - name: answer
    asks: "Is what it says right?"
    labels: typed-tie
  - name: delivery
    asks: "Is it said well?"
    labels: typed-tie
prompts:
  - name: answer-delivery
    version: 1
    system: "Compare two spoken answers.\\n$dimensions\\nAnswer with $answer_format"
    user: "$instruction\\n1: $blueprint_1\\n2: $blueprint_2"
    repair: "Again: $error"
fusion:
  order: [answer, delivery]
  acceptability: [answer]
  policies: [cap, vote]
metrics: [accuracy, agreement]
"""


def test_a_two_dimension_rubric_with_its_own_fusion_is_one_yaml_file(tmp_path, server, capsys):
    rubric_file = tmp_path / "answer-delivery.yaml"
    rubric_file.write_text(TWO_DIMENSIONS)
    said = {"p0": ("both_bad", "1"), "p1": ("both_good", "2"), "p2": ("1", "2")}
    human = {"p0": "both_bad", "p1": "2", "p2": "2"}
    bench = write_benchmark(
        tmp_path / "bench",
        [
            PairSpec(
                id=pid, response_1=blueprint(f"{pid} one"), label={"answer": a, "delivery": d, "overall": human[pid]}
            )
            for pid, (a, d) in said.items()
        ],
    )
    answers = {f"{pid} one": scores_json(answer=a, delivery=d) for pid, (a, d) in said.items()}
    server.responder = lambda body: Reply(next(text for key, text in answers.items() if key in prompt_text(body)))

    with pytest.raises(JudgeError, match="fuses under cap, vote"):
        judge(bench, server, tmp_path, out="refused", rubric=str(rubric_file), fusion="content-first")
    outcome = judge(bench, server, tmp_path, rubric=str(rubric_file), fusion="cap")
    found = records(outcome)
    assert {pid: r["fused"] for pid, r in found.items()} == {
        "p0": {"cap": "both_bad", "vote": "both_bad"},  # a delivery winner capped by two unacceptable answers
        "p1": {"cap": "2", "vote": "both_good"},
        "p2": {"cap": "1", "vote": "1"},
    }
    assert {pid: r["overall"] for pid, r in found.items()} == {"p0": "both_bad", "p1": "2", "p2": "1"}

    assert main(["fuse", str(outcome.out), "--fusion", "vote", "--table"]) == 0
    table = capsys.readouterr().out
    assert "overall under vote: 1 1, 2 0, both_good 1, both_bad 1" in table
    assert ["pair", "A", "D", "overall", "status"] in [line.split() for line in table.splitlines()]
    assert main(["fuse", str(outcome.out), "--fusion", "content-first"]) == 2
    assert "fuses under cap, vote, not content-first" in capsys.readouterr().err

    # The overall label is scored beside the dimensions; "all" pools the dimensions only.
    run = evaluate(outcome.out, capsys)["runs"][0]
    accuracy, agreement = run["metrics"]["accuracy"], run["metrics"]["agreement"]
    assert {key: slot["value"] for key, slot in accuracy.items()} == {
        "answer": 1.0,
        "delivery": 1.0,
        "overall": 1 / 3,
        "all": 1.0,
    }  # under vote, p1 both_good and p2 1: human 2
    assert agreement["overall"]["value"] == (1 + 0.5 + 0) / 3  # a tie against a winner earns half
    assert run["coverage"]["overall"] == {"decided": 3, "of": 3, "value": 1.0}
    assert "overall" in run["intervals"]["accuracy"]
    capped = evaluate(outcome.out, capsys, "--fusion", "cap")["runs"][0]["metrics"]["accuracy"]["overall"]
    assert capped["value"] == 2 / 3  # under cap only p2 misses
