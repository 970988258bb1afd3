"""Prompt rendering (trace, transcript, audio; --drop; swapped order) and the offline cues rules."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from llm_server import PairSpec, blueprint, prosody_section, write_benchmark

from trace_eval.bench import load_benchmark
from trace_eval.judge.cues import judge_case, paralinguistic_cues, split_instruction
from trace_eval.judge.parse import parse_verdict
from trace_eval.judge.prompts import BLUEPRINT_GROUPS, Case, available_prompts, blueprint_view, load_prompt
from trace_eval.judge.runner import build_cases
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")


def _bench(tmp_path: Path, **spec) -> tuple:
    spec.setdefault("id", "a")
    root = write_benchmark(tmp_path / "bench", [PairSpec(**spec)])
    bench = load_benchmark(root)
    return bench, bench.pairs[0]


def _blueprint_json(user_text: str, n: int) -> dict:
    block = re.split(rf"Response {n} blueprint \(language: [^\n]*\):\n", user_text, maxsplit=1)[1].split("\n\n", 1)[0]
    return json.loads(block)


def test_every_prompt_file_loads_with_a_version():
    prompts = available_prompts()
    assert {"trace", "transcript", "audio"} <= set(prompts)
    for prompt in prompts.values():
        assert prompt.id == f"{prompt.name}-v{prompt.version}"


def test_trace_prompt_shows_instruction_and_both_blueprints(tmp_path):
    bench, pair = _bench(
        tmp_path,
        instruction=blueprint("say hello there slowly"),
        response_1=blueprint("hello there", wpm=95.123456),
        response_2=blueprint("hi", emotion={"sad": 0.1, "happy": 0.9}),
    )
    prompt = load_prompt("trace")
    cases, _ = build_cases(bench, [pair], TRACE, prompt, drop=())
    system, user = prompt.render(cases["a"][0])
    for words in ("Content", "Voice Quality", "Paralinguistics", "both_bad", "both_good", "order in which", "longer"):
        assert words in system["content"]
    text = user["content"]
    # the manifest's instruction_text, exact, rather than the recogniser's transcript
    assert 'User instruction (text; language: not recorded):\nSay "hello there" please.' in text
    assert "say hello there slowly" not in text
    first, second = _blueprint_json(text, 1), _blueprint_json(text, 2)
    assert first["agent_response"] == "hello there" and second["agent_response"] == "hi"
    assert first["agent_audio_properties"]["Speech_Rate_WPM"] == 95.1  # three significant digits
    assert list(second["agent_emotion"]) == ["happy", "sad"]  # best first
    for key in ("agent_emotion", "agent_accent", "agent_audio_quality", "agent_audio_properties", "agent_voicing"):
        assert key in first
    assert "provenance" not in first and "format_version" not in first


def test_trace_prompt_shows_prosody_as_a_line_per_phrase_never_a_number_per_word(tmp_path):
    text = "Is it raining, or is it snowing?"
    changes = {"loudness_db": 6.1, "loudness": "louder", "pitch_st": 0.4, "pitch": "steady"}
    changes |= {"rate_ratio": 0.8, "rate": "slower", "reason": None}
    section = prosody_section(
        text, {"raining,": 1.9, "snowing?": 1.2}, ending_st=4.1, paused_after=(2,), changes=changes
    )
    bench, pair = _bench(tmp_path, response_1=blueprint(text, prosody=section))
    prompt = load_prompt("trace")
    system, user = prompt.render(build_cases(bench, [pair], TRACE, prompt, drop=())[0]["a"][0])
    assert "agent_prosody" in system["content"] and "*asterisks*" in system["content"]
    assert _blueprint_json(user["content"], 1)["agent_prosody"] == [
        "prominent: *raining* 1.9, *snowing* 1.2",
        "phrase 1 “Is it *raining*,” rising +4.1 st; pause 0.40 s after “raining”",
        "phrase 2 “or is it *snowing*?” rising +4.1 st",
        "last third against the first: louder by 6.1 dB, pitch steady (+0.4 st), slower by 20%",
    ]
    assert "prominence" not in user["content"] and "pitch_median_st" not in user["content"]
    assert prompt.version >= 4


def test_instruction_text_is_used_when_there_is_no_transcript(tmp_path):
    bench, pair = _bench(tmp_path, instruction=blueprint(None), instruction_text='Say "hi" loudly.')
    prompt = load_prompt("trace")
    case = build_cases(bench, [pair], TRACE, prompt, drop=())[0]["a"][0]
    assert 'Say "hi" loudly.' in prompt.render(case)[1]["content"]


@pytest.mark.parametrize("group", sorted(BLUEPRINT_GROUPS))
def test_drop_removes_exactly_its_keys(tmp_path, group):
    bench, pair = _bench(tmp_path)
    prompt = load_prompt("trace")
    case = build_cases(bench, [pair], TRACE, prompt, drop=(group,))[0]["a"][0]
    shown = _blueprint_json(prompt.render(case)[1]["content"], 1)
    full = blueprint_view(blueprint(), prompt.blueprint_keys)
    assert set(full) - set(shown) == set(BLUEPRINT_GROUPS[group])


def test_swapped_case_shows_response_2_first(tmp_path):
    bench, pair = _bench(tmp_path, response_1=blueprint("first answer"), response_2=blueprint("second answer"))
    prompt = load_prompt("trace")
    original, swapped = build_cases(bench, [pair], TRACE, prompt, drop=())[0]["a"]
    text = prompt.render(swapped)[1]["content"]
    assert _blueprint_json(text, 1)["agent_response"] == "second answer"
    assert _blueprint_json(text, 2)["agent_response"] == "first answer"
    assert swapped.audio[1] == original.audio[2]


def test_transcript_prompt_shows_transcripts_only(tmp_path):
    bench, pair = _bench(tmp_path, response_1=blueprint("first answer"), response_2=blueprint(""))
    prompt = load_prompt("transcript")
    text = prompt.render(build_cases(bench, [pair], TRACE, prompt, drop=())[0]["a"][0])[1]["content"]
    assert "first answer" in text and "(no speech recognised)" in text
    assert "agent_emotion" not in text and "LUFS" not in text


def test_audio_prompt_sends_the_three_clips_as_input_audio(tmp_path):
    bench, pair = _bench(tmp_path)
    prompt = load_prompt("audio")
    case = build_cases(bench, [pair], TRACE, prompt, drop=())[0]["a"][0]
    user = prompt.render(case)[1]["content"]
    audio_parts = [p for p in user if p["type"] == "input_audio"]
    assert len(audio_parts) == 3
    for part, relative in zip(audio_parts, (pair.instruction_path, pair.audio1_path, pair.audio2_path), strict=True):
        assert part["input_audio"]["format"] == "wav"
        assert base64.b64decode(part["input_audio"]["data"]) == (bench.root / relative).read_bytes()


def test_audio_prompt_converts_other_formats_and_falls_back_to_instruction_text(tmp_path):
    flac = tmp_path / "answer.flac"
    sf.write(str(flac), np.zeros(800, dtype="float32"), 8000)
    case = Case("x", None, "Say hi.", audio=(None, flac, flac))
    user = load_prompt("audio").render(case)[1]["content"]
    assert any(p["type"] == "text" and "Say hi." in p["text"] for p in user)
    audio = [p["input_audio"] for p in user if p["type"] == "input_audio"]
    assert len(audio) == 2 and audio[0]["format"] == "wav"
    assert base64.b64decode(audio[0]["data"])[:4] == b"RIFF"


# -- cues backbone rules -------------------------------------------------------------------


def _cues(instruction: str, bp1: dict, bp2: dict) -> dict:
    keys = load_prompt("trace").blueprint_keys
    case = Case("x", None, instruction, (blueprint_view(bp1, keys), blueprint_view(bp2, keys)))
    verdict = judge_case(case)
    assert parse_verdict(
        json.dumps(verdict), load_rubric("trace"), allow_undetermined=True
    ).ok  # the same path as an LLM answer
    return verdict


def test_quoted_words_are_not_cue_words():
    quoted, rest = split_instruction('Say "The thunder rolled slowly" in a deep voice, then “go fast”.')
    assert quoted == "The thunder rolled slowly go fast"
    names = [c.name for c in paralinguistic_cues('Say "The thunder rolled slowly" in a deep voice.')]
    assert names == ["low pitch"]


@pytest.mark.parametrize(
    "instruction, names",
    [
        ("Please answer slowly.", ["slow"]),
        ("Say it quickly and loudly.", ["fast", "loud"]),
        ("Start slowly, then speed up.", ["speeding up"]),
        ("Say the first part fast and the rest slowly.", ["fast then slow"]),
        ("Whisper it in a high-pitched voice, sounding happy.", ["quiet", "high pitch", "happy"]),
        ("Tell me about the weather.", []),
    ],
)
def test_cue_words(instruction, names):
    assert [c.name for c in paralinguistic_cues(instruction)] == names


def test_cues_content_from_quoted_words_and_speech_presence():
    said = 'Say "the quick brown fox jumps over the lazy dog".'
    full = blueprint("The quick brown fox jumps over the lazy dog.")
    assert _cues(said, full, blueprint("The quick brown fox."))["content"] == "1"
    assert _cues(said, blueprint("Sure! The quick brown fox jumps over a lazy dog."), full)["content"] == "both_good"
    # Nothing quoted: no speech is evidence of failure, speech alone is no evidence of success.
    assert _cues("Tell me a joke.", blueprint(""), blueprint("Why did the chicken"))["content"] is None
    assert _cues("Tell me a joke.", blueprint(""), blueprint(" "))["content"] == "both_bad"
    assert _cues(said, blueprint("no"), blueprint("nope"))["content"] == "both_bad"


def test_cues_voice_quality_from_dnsmos():
    assert _cues("Hi.", blueprint(p808=3.5), blueprint(p808=2.1))["voice_quality"] == "1"
    assert _cues("Hi.", blueprint(p808=3.0), blueprint(p808=3.6))["voice_quality"] == "both_good"
    assert _cues("Hi.", blueprint(p808=2.0), blueprint(p808=2.2))["voice_quality"] == "both_bad"


@pytest.mark.parametrize(
    "instruction, bp1, bp2, label",
    [
        ("Say it slowly.", blueprint(wpm=100), blueprint(wpm=230), "1"),
        ("Say it quickly.", blueprint(wpm=100), blueprint(wpm=120), "both_bad"),
        ("Whisper it.", blueprint(lufs=-20), blueprint(lufs=-40), "2"),
        ("Say it loudly.", blueprint(lufs=-20), blueprint(lufs=-22), "both_good"),
        ("Use a deep voice.", blueprint(pitch_hz=90), blueprint(pitch_hz=250), "1"),
        ("Say it sadly.", blueprint(emotion={"neutral": 0.8, "sad": 0.2}), blueprint(emotion={"sad": 0.6}), "2"),
        ("Say it slowly, then quickly.", blueprint(pace=[90, 95, 240, 250]), blueprint(pace=[150] * 4), "1"),
        ("Tell me about cats.", blueprint(wpm=300), blueprint(lufs=-50), "both_good"),
    ],
)
def test_cues_paralinguistics(instruction, bp1, bp2, label):
    assert _cues(instruction, bp1, bp2)["paralinguistics"] == label


def test_an_unmeasured_cue_asked_for_leaves_paralinguistics_undetermined():
    unmeasured = blueprint(wpm=None, p808=None, lufs=-20)
    unmeasured["agent_voicing"]["Syllable_Rate_Per_S"] = None
    unmeasured["agent_audio_quality"]["DNSMOS_Personalized_Overall_Quality"] = None
    verdict = _cues("Say it slowly.", unmeasured, blueprint(wpm=100, p808=3.5))
    assert verdict["paralinguistics"] is None and verdict["voice_quality"] is None  # no P.808 either
    assert verdict["undetermined"]["voice_quality"] == "response 1 P.808 unmeasured"
    assert verdict["undetermined"]["paralinguistics"] == "slow: rate unmeasured for response 1"
    # Response 2 fails, but whether 1 passes is unknown: "1" or both_bad, so undetermined.
    assert _cues("Say it slowly.", unmeasured, blueprint(wpm=240))["paralinguistics"] is None
    # A measured failure is evidence whatever else is missing: response 1 is too loud.
    assert (
        _cues("Say it slowly and quietly.", unmeasured, blueprint(wpm=240, lufs=-40))["paralinguistics"] == "both_bad"
    )


def test_syllable_rate_stands_in_for_a_missing_transcript_rate():
    slow, fast = blueprint(wpm=None), blueprint(wpm=None)
    slow["agent_voicing"]["Syllable_Rate_Per_S"], fast["agent_voicing"]["Syllable_Rate_Per_S"] = 2.8, 6.5
    assert _cues("Say it slowly.", slow, fast)["paralinguistics"] == "1"
