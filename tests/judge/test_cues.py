"""The cues backbone on instructions written the way SpeakBench and S2S-Arena write them, and
undetermined verdicts from the rules through the run folder, fusion, `fuse` and the summary."""

from __future__ import annotations

import json

import pytest
from cues_verdict import verdict
from llm_server import LLMServer, PairSpec, Reply, blueprint, write_benchmark

from trace_eval.cli import main
from trace_eval.judge import JudgeOptions, RetryPolicy, run_judge
from trace_eval.judge.cues import paralinguistic_cues
from trace_eval.judge.evidence import cue_availability
from trace_eval.judge.instructions import read_instruction
from trace_eval.judge.parse import parse_verdict
from trace_eval.judge.prompts import load_prompt
from trace_eval.judge.runfolder import read_results
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")

KEYS = load_prompt("trace").blueprint_keys


# -- reading instructions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, quoted",
    [
        # SpeakBench writes the words to say in single quotes.
        ("Pronounce the word 'potato' in a British accent and then in an American accent.", "potato"),
        ("Say the phrase 'The system is malfunctioning' like a robot.", "The system is malfunctioning"),
        ("Repeat 'I don't know what you mean' with rising intonation.", "I don't know what you mean"),
        ("Say 'yes', then 'no', then 'maybe'.", "yes no maybe"),
        # Apostrophes are not quotes.
        ("Don't rush: tell me about the speaker's day.", ""),
        ("Describe the speakers' voices and the dog's bark.", ""),
        # Curly quotes, double and single.
        ("Say “good morning everyone” cheerfully.", "good morning everyone"),
        ("Whisper ‘it’s a secret’ and don’t laugh.", "it’s a secret"),
        ('Say "The quick brown fox" slowly.', "The quick brown fox"),
    ],
)
def test_quoted_words_in_every_quote_style(text, quoted):
    assert read_instruction(text).quoted == quoted


@pytest.mark.parametrize(
    "text, directives, cues",
    [
        ("[emotion: sad]What should I do now? I lost my job today.", ("emotion: sad",), ["sad"]),
        ("[adults voice]Can you tell me a bedtime story?", ("adults voice",), []),
        ("[whisper] Tell me where the keys are.", ("whisper",), ["quiet"]),
        (
            "[emotion: happy][speed: fast]Guess what, I passed my exam!",
            ("emotion: happy", "speed: fast"),
            ["fast", "happy"],
        ),
        ("Pronounce the word 'happy' slowly.", (), ["slow"]),  # a cue word inside the quote is a word to say
    ],
)
def test_bracketed_directives_are_paralinguistic_cues(text, directives, cues):
    assert read_instruction(text).directives == directives
    assert [c.name for c in paralinguistic_cues(text)] == cues


# -- undetermined dimensions --------------------------------------------------------------------


def test_a_free_form_question_leaves_content_undetermined_never_both_good():
    question = "What is the capital of France?"
    answer = verdict(
        question, blueprint("The capital of France is Paris."), blueprint("The capital of France is Berlin.")
    )
    assert answer["content"] is None
    assert "no quoted words" in answer["undetermined"]["content"]
    assert answer["paralinguistics"] == "both_good"  # nothing asked of the manner: both meet it
    assert TRACE.fusion.fuse("cap", answer) is None


def test_no_speech_is_evidence_even_without_quoted_words():
    assert verdict("What is the capital of France?", blueprint(""), blueprint(""))["content"] == "both_bad"


def test_single_quoted_words_decide_content():
    said = "Say the phrase 'The system is malfunctioning' like a robot."
    answer = verdict(said, blueprint("The system is malfunctioning."), blueprint("I am a robot."))
    assert answer["content"] == "1" and "content" not in answer["undetermined"]  # (a robot voice is not measured)


@pytest.mark.parametrize("drop", [(), ("emotion",)])
def test_an_emotion_asked_for_but_unmeasured_leaves_paralinguistics_undetermined(drop):
    unmeasured = blueprint("Have a lovely day.")
    happy = {"happy": 0.8, "neutral": 0.2}
    if drop:
        bp1, bp2 = blueprint("Have a lovely day.", emotion=happy), blueprint("Have a lovely day.", emotion=happy)
    else:
        del unmeasured["agent_emotion"]  # the emotion extractor was unavailable
        bp1, bp2 = unmeasured, blueprint("Have a lovely day.", emotion=happy)
    answer = verdict("Say 'have a lovely day' cheerfully.", bp1, bp2, drop=drop)
    assert answer["content"] == "both_good"
    assert answer["paralinguistics"] is None
    which = "both responses" if drop else "response 1"
    assert answer["undetermined"]["paralinguistics"] == f"happy: emotion unmeasured for {which}"


@pytest.mark.parametrize(
    "instruction, manner",
    [
        ("Pronounce the word 'potato' in a British accent and then in an American accent.", "accent"),
        ("Say the phrase 'The system is malfunctioning' like a robot.", "robotic voice"),
        ("Say 'I never said she stole my money' with emphasis on a different word each time.", "emphasis"),
    ],
)
def test_a_manner_no_rule_measures_is_undetermined_not_passed(instruction, manner):
    answer = verdict(instruction, blueprint(), blueprint())
    assert answer["paralinguistics"] is None
    assert answer["undetermined"]["paralinguistics"] == f"{manner}: not measured by these rules for both responses"


def test_a_measured_failure_decides_beside_an_unmeasured_manner():
    asked = "Say 'hello there' slowly in a British accent."
    assert verdict(asked, blueprint(wpm=240), blueprint(wpm=250))["paralinguistics"] == "both_bad"
    assert verdict(asked, blueprint(wpm=100), blueprint(wpm=250))["paralinguistics"] is None


def test_a_bracketed_emotion_is_checked_against_the_emotion_scores():
    sad, neutral = blueprint(emotion={"sad": 0.7, "neutral": 0.3}), blueprint(emotion={"neutral": 0.9, "sad": 0.1})
    assert verdict("[emotion: sad]What should I do now?", sad, neutral)["paralinguistics"] == "1"


def test_an_unreliable_transcript_is_missing_evidence_for_content_and_its_rates():
    said = "Say 'the quick brown fox' slowly."
    doubt = "transcript marked unreliable (average log-probability -1.9)"
    fine, doubted = blueprint("The quick brown fox.", wpm=100), blueprint("The quick brown fox.", wpm=100)
    doubted["transcript_quality"] = {"reliable": False, "reason": "average log-probability -1.9"}
    doubted["agent_voicing"]["Syllable_Rate_Per_S"] = None
    answer = verdict(said, fine, doubted)
    assert answer["content"] is None and doubt in answer["undetermined"]["content"]
    assert answer["paralinguistics"] is None and doubt in answer["undetermined"]["paralinguistics"]
    # The signal-only syllable rate still measures pace without the transcript.
    doubted["agent_voicing"]["Syllable_Rate_Per_S"] = 2.5
    assert verdict(said, fine, doubted)["paralinguistics"] == "both_good"


def test_only_a_backbone_that_declares_it_may_leave_a_label_null():
    answer = json.dumps(
        {
            "reasoning": "r",
            "content": None,
            "voice_quality": "1",
            "paralinguistics": "2",
            "undetermined": {"content": "no quoted words"},
        }
    )
    llm = parse_verdict(answer, TRACE)
    assert not llm.ok and "content: null is not a label" in llm.error
    assert parse_verdict(answer, TRACE, allow_undetermined=True).undetermined == {"content": "no quoted words"}
    unexplained = json.dumps({"reasoning": "r", "content": None, "voice_quality": "1", "paralinguistics": "2"})
    assert not parse_verdict(unexplained, TRACE, allow_undetermined=True).ok


def test_an_llm_answer_with_a_null_label_is_repaired_then_invalid(tmp_path):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id="p")])
    null_answer = json.dumps(
        {
            "reasoning": "r",
            "content": None,
            "voice_quality": "1",
            "paralinguistics": "2",
            "undetermined": {"content": "cannot tell"},
        }
    )
    with LLMServer(default=Reply(null_answer)) as server:
        outcome = run_judge(
            JudgeOptions(
                bench=bench,
                model="openai/test-judge",
                api_base=server.api_base,
                api_key="dummy",
                cache_dir=tmp_path / "cache",
                out=tmp_path / "run",
                progress=False,
                retry=RetryPolicy(max_retries=0),
            ),
            notice=lambda m: None,
        )
        assert server.request_count == 2  # the answer and one repair
    [record] = read_results(outcome.out / "results.jsonl").records
    assert record["status"] == "invalid" and "null is not a label" in record["reason"]


# -- the run folder, fuse and the summary -------------------------------------------------------


def _provenance(emotion_reason: str) -> dict:
    return {
        "audio_sha256": "0" * 64,
        "extractors": {
            "asr": {"name": "asr", "version": "1", "fingerprint": "f", "status": "ok"},
            "emotion": {
                "name": "emotion",
                "version": "1",
                "fingerprint": "f",
                "status": "unavailable",
                "reason": emotion_reason,
            },
        },
    }


def test_undetermined_items_through_judge_fuse_and_summary(tmp_path, capsys):
    no_emotion = "weights for emotion2vec_plus_large not found; tried the hub cache. To fix: pass --set ..."

    def clip(text: str) -> dict:
        values = blueprint(text)
        del values["agent_emotion"]
        return {**values, "provenance": _provenance(no_emotion)}

    specs = [
        PairSpec(
            id="question",
            instruction_text="What is the capital of France?",
            response_1=clip("The capital of France is Paris."),
            response_2=clip("It is Berlin."),
        ),
        PairSpec(
            id="cheerful",
            instruction_text="Say 'hello there' cheerfully.",
            response_1=clip("Hello there."),
            response_2=clip("Hello there."),
        ),
        PairSpec(
            id="plain",
            instruction_text="Say 'hello there'.",
            response_1=clip("Hello there."),
            response_2=clip("Goodbye."),
        ),
    ]
    bench = write_benchmark(tmp_path / "bench", specs)
    out = tmp_path / "run"
    assert (
        main(["judge", "--bench", str(bench), "--model", "cues", "--fusion", "cap", "--out", str(out), "--quiet"]) == 0
    )
    printed = capsys.readouterr()
    assert "undetermined (a deciding cue missing): content 1, paralinguistics 1, overall 2" in printed.out
    assert "emotion: 0 of 6 clips: weights for emotion2vec_plus_large not found" in printed.out
    assert "warning: emotion: missing for 6 of 6 clips (100%)" in printed.err

    records = {r["id"]: r for r in read_results(out / "results.jsonl").records}
    question, cheerful, plain = records["question"], records["cheerful"], records["plain"]
    assert question["status"] == "ok" and question["verdicts"]["content"] is None
    assert set(question["undetermined"]) == {"content"}
    assert question["fused"] == {name: None for name in TRACE.fusion.policies} and question["overall"] is None
    assert cheerful["verdicts"] == {"content": "both_good", "voice_quality": "both_good", "paralinguistics": None}
    assert "emotion unmeasured" in cheerful["undetermined"]["paralinguistics"] and cheerful["overall"] is None
    assert plain["undetermined"] == {} and plain["overall"] == "1"

    summary = json.loads((out / "summary.json").read_text())
    assert summary["undetermined"] == {"content": 1, "voice_quality": 0, "paralinguistics": 1, "overall": 2}
    emotion = summary["cues"]["groups"]["emotion"]
    assert (emotion["measured"], emotion["missing"], emotion["reasons"]) == (0, 6, {no_emotion: 6})

    assert main(["fuse", str(out), "--fusion", "vote", "--table"]) == 0
    table = capsys.readouterr().out
    assert "undetermined 2" in table and "C: no quoted words" in table
    refused = {r["id"]: r for r in read_results(out / "results.jsonl").records}
    said = dict(content="1", voice_quality="both_good", paralinguistics="both_good")
    assert refused["question"]["overall"] is None and refused["plain"]["overall"] == TRACE.fusion.fuse("vote", said)
    assert json.loads((out / "summary.json").read_text())["cues"] == summary["cues"]  # kept by re-fusing

    # Both presentation orders: undetermined in either order stays undetermined.
    swapped = tmp_path / "swapped"
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--swap", "--out", str(swapped), "--quiet"]) == 0
    both = {r["id"]: r for r in read_results(swapped / "results.jsonl").records}
    assert both["question"]["verdicts"]["content"] is None and set(both["question"]["undetermined"]) == {"content"}
    assert both["plain"]["verdicts"] == plain["verdicts"] and both["plain"]["undetermined"] == {}


# -- which cues the clips had -------------------------------------------------------------------


def test_cue_availability_counts_clips_and_gives_the_reasons():
    measured = {**blueprint(), "provenance": _provenance("")}
    silent = {**blueprint(), "provenance": _provenance("")}
    silent["agent_audio_properties"]["Mean_Pitch_Hz"] = None
    silent["provenance"]["extractors"]["pitch"] = {
        "status": "ok",
        "null_reasons": {"agent_audio_properties.Mean_Pitch_Hz": "no voiced frames"},
    }
    doubted = {
        **blueprint(),
        "transcript_quality": {"reliable": False, "reason": "compression ratio 3.1"},
        "provenance": _provenance(""),
    }
    cues = cue_availability([measured] * 8 + [silent, doubted], KEYS, drop=("accent",))
    groups = cues["groups"]
    assert cues["clips"] == 10
    assert groups["pitch"]["measured"] == 9 and groups["pitch"]["reasons"] == {"no voiced frames": 1}
    assert groups["transcript"]["reasons"] == {"transcript marked unreliable (compression ratio 3.1)": 1}
    assert groups["speaking rate"]["missing"] == 1  # derived from the doubted transcript
    assert groups["accent"] == {
        "used": False,
        "measured": 0,
        "missing": 10,
        "reasons": {"dropped with --drop accent": 10},
        "standin": 0,
    }
    # One clip in ten missing is within the tolerance; more is warned about; a dropped group never.
    assert cues["warnings"] == []
    more = cue_availability([measured] * 8 + [silent, silent], KEYS)
    assert more["warnings"] == ["pitch: missing for 2 of 10 clips (20%): no voiced frames"]


def test_cues_made_with_stand_in_weights_are_warned_about():
    """Stand-in weights (trace_eval/stage1/standins.py) make values that look like cues: the run says so."""
    real = {**blueprint(), "provenance": _provenance("")}
    standin = {**blueprint(), "provenance": _provenance("")}
    standin["provenance"]["extractors"]["asr"] = {
        "name": "asr",
        "status": "ok",
        "standin": "stand-in weights (random): the values are not cues",
    }
    cues = cue_availability([real] * 3 + [standin], KEYS)
    assert cues["groups"]["transcript"]["standin"] == 1 and cues["groups"]["pitch"]["standin"] == 0
    assert cues["warnings"] == [
        "transcript: made with stand-in weights for 1 of 4 clips "
        "(random weights from scripts/make_standin_models.py): not cues"
    ]
    assert cue_availability([real] * 4, KEYS)["warnings"] == []


def test_a_rambling_answer_of_ten_minutes_fails_content_whatever_its_transcript():
    """Past `content_max_s` (300 s) an answer fails Content even where its transcript is doubted or says the
    words: a rambling answer is a wrong one, not one whose content is unknown."""
    instruction = 'Say "The conference has been extended."'
    right = {**blueprint("The conference has been extended."), "duration_s": 2.4}
    words = "The conference has been extended. " + "And another thing, " * 400
    rambling = {
        **blueprint(words),
        "duration_s": 600.0,
        "transcript_quality": {"reliable": False, "reason": "compression ratio 3.1 (repetition)"},
    }
    answer = verdict(instruction, rambling, right)
    assert answer["content"] == "2", answer["reasoning"]
    assert "response 1 runs 600 s, past the 300 s an answer may take" in answer["reasoning"]
    assert answer["confidence"]["content"] > 0.95  # five minutes past the limit: sure
    # Below the limit the doubted transcript decides nothing, as before.
    shorter = verdict(instruction, {**rambling, "duration_s": 120.0}, right)
    assert shorter["content"] is None and "transcript marked unreliable" in shorter["undetermined"]["content"]
