"""Prosody per word and per phrase on speech whose prosody is known, synthetic and recorded.

Clips are made as scripts/bench_prosody.py makes them (the same functions): espeak-ng SSML around one word,
sox on one word's span of recorded speech (LibriVox, Asterisk), questions against statements, recorded endings
bent up or down. Each clip goes through the recogniser (CPU profile) and prosody as Stage 1 runs them. The
recorded clips also show that nothing is measured where the evidence is missing.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from script_modules import load_script

from extractors import REGISTRY, Clip, ClipError
from extractors.prosody import ProsodyConfig, ProsodyExtractor, prominences, syllable_count
from trace_eval.audio import Audio, load_audio
from trace_eval.stage1.store import section_errors
from trace_eval.synth import Voice, speak

bench = load_script("bench_prosody")
stress = load_script("bench_stress")

WORD_FIELDS = ("pitch_median_st", "pitch_range_st", "loudness_db", "duration_ratio", "prominence")


@pytest.fixture(scope="module")
def listen():
    return bench.Listener()


def check_evidence(heard) -> dict:
    """Every null in the section has its reason beside it, and nothing else does; the section fits the schema."""
    prosody = heard.prosody
    assert section_errors({"agent_prosody": prosody}) == []
    json.dumps(prosody, allow_nan=False)
    if prosody is None:
        assert heard.null_reasons.get("agent_prosody")
        return prosody
    assert len(prosody["words"]) == len(heard.blueprint["words"])
    for w in prosody["words"]:
        missing = [f for f in WORD_FIELDS if w[f] is None]
        assert bool(missing) == (w["reason"] is not None), w
    for phrase in prosody["phrases"]:
        assert (phrase["final_contour"] is None) == (phrase["reason"] is not None), phrase
    changes = prosody["changes"]
    values = [changes[k] for k in ("loudness_db", "pitch_st", "rate_ratio")]
    assert (None in values) == (changes["reason"] is not None), changes
    assert (prosody["speaker_median_pitch_hz"] is None) == (
        "agent_prosody.speaker_median_pitch_hz" in heard.null_reasons
    )
    return prosody


# -- syllables ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "word, language, count",
    [
        ("fox", "en", 1),
        ("library", "en", 3),
        ("made", "en", 1),  # a silent final e
        ("little", "en", 2),  # ...but not in -le
        ("Dog.", "en", 1),
        ("été", "fr", 2),  # accents folded
        ("Straße", "de", 2),
        ("молоко", "ru", 3),
        ("καλημέρα", "el", 4),
        ("你好", "zh", 2),  # a character each
        ("ありがとう", "ja", 5),
        ("きょう", "ja", 2),  # small kana do not count
        ("안녕하세요", "ko", 5),
    ],
)
def test_syllables_by_script(word, language, count):
    assert syllable_count(word, language) == (count, None)


@pytest.mark.parametrize(
    "word, reason",
    [("สวัสดี", "no syllable estimate for the Thai script"), ("1990", "no letters"), ("hmm", "no vowel letter")],
)
def test_no_syllable_estimate_says_why(word, reason):
    count, why = syllable_count(word, "en")
    assert count is None and reason in why


# -- the contract -----------------------------------------------------------------------------------


def test_registered_after_asr_owning_its_section():
    cls = REGISTRY["prosody"]
    assert cls is ProsodyExtractor and cls.depends_on == ("asr",) and cls.sample_rate == 16000
    assert cls.outputs == ("agent_prosody",) and not cls.uses_gpu
    assert cls().fingerprint() != cls(ProsodyConfig(prominent_z=1.0)).fingerprint()


def test_prominence_weighs_its_parts_and_the_weights_are_a_setting():
    """A word only longer than the rest stands out where length counts, and not with the default weights, which
    leave length out (scripts/bench_stress.py); the weights are a setting (`--set prosody.prominence_weights=...`),
    part of the fingerprint."""
    from trace_eval.stage1.settings import make_config

    words = [
        {"pitch_median_st": 0.0, "pitch_range_st": 1.0, "loudness_db": 0.0, "duration_ratio": 1.0} for _ in range(5)
    ]
    words[1]["loudness_db"] = 1.0  # a little louder than the others
    words[3]["duration_ratio"] = 2.0  # twice as long
    equal = make_config(ProsodyExtractor, {"prominence_weights": "1,1,1,1"})
    assert equal.prominence_weights == (1.0, 1.0, 1.0, 1.0)
    by_default = prominences(words, ProsodyConfig())
    assert max(range(5), key=lambda k: by_default[k]) == 1 and by_default[3] < 0
    assert max(range(5), key=lambda k: prominences(words, equal)[k]) in (1, 3)
    assert prominences(words, ProsodyConfig(prominence_weights=(0, 0, 0, 1)))[3] == pytest.approx(2.0)
    assert prominences(words[:2], ProsodyConfig()) == [None, None]  # fewer words than a z-score needs
    assert ProsodyExtractor().fingerprint() != ProsodyExtractor(equal).fingerprint()


@pytest.fixture(scope="module")
def fox_path(tmp_path_factory):
    return speak(bench.SENTENCES[0][0], tmp_path_factory.mktemp("fox") / "fox.wav", Voice(wpm=150))


@pytest.fixture(scope="module")
def fox(fox_path, listen):
    return listen(fox_path)


def run(blueprint: dict, audio: Audio):
    return ProsodyExtractor().extract_one(Clip("x", audio, blueprint))


@pytest.mark.parametrize(
    "change, reason",
    [
        (
            {"transcript_quality": {"reliable": False, "reason": "a phrase repeated 6 times"}},
            "transcript unreliable: a",
        ),
        ({"words": None}, "no word timings: asr did not run or failed"),
        ({"words": [], "asr": {"reason": "no speech detected"}}, "no words transcribed: no speech detected"),
    ],
)
def test_no_word_prosody_without_trustworthy_words(fox, change, reason):
    audio = Audio(np.zeros(16000, dtype=np.float32), 16000)
    section = run({**fox.blueprint, **change}, audio)
    assert section.values == {"agent_prosody": None}
    assert section.null_reasons["agent_prosody"].startswith(reason)


def test_a_word_without_reliable_times_is_null_with_the_reason(fox, fox_path):
    audio = load_audio(fox_path)
    words = [dict(w) for w in fox.blueprint["words"]]
    words[2]["end"] = words[2]["start"]
    words[5]["start"], words[5]["end"] = 60.0, 60.4
    prosody = run({**fox.blueprint, "words": words}, audio).values["agent_prosody"]
    assert prosody["words"][2]["reason"] == "times unreliable: zero length"
    assert prosody["words"][5]["reason"] == "times unreliable: beyond the end of the audio"
    for k in (2, 5):
        assert all(prosody["words"][k][f] is None for f in WORD_FIELDS)
    others = [w for k, w in enumerate(prosody["words"]) if k not in (2, 5)]
    assert all(w["prominence"] is not None for w in others)


def test_malformed_word_times_fail_the_clip(fox):
    words = [{"word": "the", "start": "soon"}]
    with pytest.raises(ClipError, match="malformed word timings"):
        run({**fox.blueprint, "words": words}, Audio(np.zeros(16000, dtype=np.float32), 16000))


def test_every_field_of_plain_speech(fox):
    prosody = check_evidence(fox)
    assert 70 < prosody["speaker_median_pitch_hz"] < 200
    assert -0.3 < prosody["time_shift_s"] < 0.1  # the recogniser's times move onto the signal, never far
    assert [w["word"] for w in prosody["words"]] == [w["word"].strip() for w in fox.blueprint["words"]]
    assert all(w["reason"] is None for w in prosody["words"])
    starts = [w["start"] for w in prosody["words"]]
    assert starts == sorted(starts)
    assert [p["text"] for p in prosody["phrases"]] == [fox.blueprint["agent_response"]]
    assert prosody["phrases"][0]["final_contour"] == "falling"
    assert prosody["pauses"] == []  # read without a pause


# -- stressed words ---------------------------------------------------------------------------------


def places(listen, folder, variant: str) -> list[int | None]:
    """Where the stressed word of each synthetic sentence ranks by prominence (1: the most prominent), None where
    the recogniser did not write it."""
    found = []
    for k, (text, target) in enumerate(bench.SENTENCES):
        heard = listen(bench.synthetic(text, target, variant, folder / f"{k}.wav"))
        check_evidence(heard)
        index = bench.find_word(heard.words, target)
        found.append(None if index is None else bench.rank(heard, index))
    return found


def test_the_stressed_word_is_among_the_most_prominent_in_9_of_10_synthetic_cases(listen, tmp_path):
    # <prosody pitch="+50%" volume="+100%" rate="-30%"> around one word of each sentence
    found = [p for p in places(listen, tmp_path, "pitch, volume, rate") if p is not None]
    assert len(found) >= 8, "the recogniser should write the stressed word of most sentences"
    assert sum(p <= 3 for p in found) >= 0.9 * len(found), found


def test_an_emphasised_word_is_among_the_most_prominent_in_most_cases(listen, tmp_path):
    found = [p for p in places(listen, tmp_path, "emphasis") if p is not None]  # espeak-ng's <emphasis>: weaker
    assert len(found) >= 8 and sum(p <= 3 for p in found) >= 2 / 3 * len(found), found


@pytest.mark.parametrize(
    "clip",
    [bench.LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0920.wav", bench.ASTERISK / "conf-leaderhasleft.wav"],
)
@pytest.mark.parametrize("effect", list(bench.RECORDED_EFFECTS))
def test_a_recorded_word_made_louder_or_higher_stands_out(listen, tmp_path, clip, effect):
    plain = listen(clip)
    index = bench.stressable_word(plain.words)
    start, end = plain.words[index]["start"], plain.words[index]["end"]
    altered = listen(bench.alter_span(clip, tmp_path / "altered.wav", start, end, bench.RECORDED_EFFECTS[effect]))
    check_evidence(altered)
    stressed = bench.overlapping(altered.words, start, end)
    assert stressed is not None and bench.normalise(altered.words[stressed]["word"]) == bench.normalise(
        plain.words[index]["word"]
    )
    before, after = plain.words[index], altered.words[stressed]
    if effect.startswith("gain"):  # 6 dB through a limiter; the clip's speech level rises with the word
        assert after["loudness_db"] >= before["loudness_db"] + 1.5
    else:
        assert after["pitch_median_st"] >= before["pitch_median_st"] + 2
    assert after["prominence"] > before["prominence"]


# -- endings ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("question, statement", bench.QUESTIONS[:3])
def test_questions_rise_and_statements_fall(listen, tmp_path, question, statement):
    asked = listen(speak(question, tmp_path / "q.wav", Voice(wpm=150)))
    said = listen(speak(statement, tmp_path / "s.wav", Voice(wpm=150)))
    assert bench.final_contour(asked)[0] == "rising"
    assert bench.final_contour(said)[0] == "falling"


@pytest.mark.parametrize(
    "clip", [bench.LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0930.wav", bench.ASTERISK / "vm-nobodyavail.wav"]
)
def test_recorded_endings_bent_up_rise_and_bent_down_fall(listen, tmp_path, clip):
    # the last 0.5 s of speech bent 8 semitones up: a statement's fall (-4 to -6 semitones) turns into a rise or
    # levels out; bent 4 down, it falls further
    as_recorded = bench.final_contour(listen(clip))
    up = bench.final_contour(listen(bench.bend_ending(clip, tmp_path / "up.wav", bench.BEND_UP_CENTS)))
    down = bench.final_contour(listen(bench.bend_ending(clip, tmp_path / "down.wav", bench.BEND_DOWN_CENTS)))
    assert as_recorded[0] == "falling" and up[0] != "falling" and down[0] == "falling"
    assert up[1] >= as_recorded[1] + 3 and down[1] <= as_recorded[1] - 1


# -- weak evidence ----------------------------------------------------------------------------------


def test_whispered_speech_has_no_pitch_but_its_loudness_and_durations(listen, tmp_path):
    heard = listen(speak(bench.SENTENCES[1][0], tmp_path / "whisper.wav", Voice(wpm=150, voice="en+whisper")))
    prosody = check_evidence(heard)
    assert heard.blueprint["words"] and prosody["speaker_median_pitch_hz"] is None
    for w in prosody["words"]:
        assert w["pitch_median_st"] is None and w["pitch_range_st"] is None
        assert "pitch: no voice found in the clip" in w["reason"]
    assert all(w["loudness_db"] is not None for w in prosody["words"])
    assert all(p["final_contour"] is None and p["reason"] == "no voice found in the clip" for p in prosody["phrases"])
    assert prosody["changes"]["pitch_st"] is None and prosody["changes"]["loudness_db"] is not None


def test_a_short_prompt_has_no_prominence_and_no_changes(listen):
    heard = listen(bench.ASTERISK / "vm-goodbye.wav")  # "Goodbye!"
    prosody = check_evidence(heard)
    assert len(prosody["words"]) <= 2
    assert all(w["prominence"] is None and "prominence" in w["reason"] for w in prosody["words"])
    assert prosody["prominent_words"] == []
    assert "too short to compare thirds" in prosody["changes"]["reason"]


@pytest.mark.parametrize("clip", bench.recorded_clips()[:5] + bench.recorded_clips()[-3:])
def test_recorded_speech_has_every_null_explained(listen, clip):
    prosody = check_evidence(listen(clip))
    assert prosody["words"] and prosody["speaker_median_pitch_hz"]
    for w in prosody["words"]:  # values people can produce
        assert w["pitch_median_st"] is None or abs(w["pitch_median_st"]) < 12
        assert w["loudness_db"] is None or abs(w["loudness_db"]) < 30
        assert w["duration_ratio"] is None or 0.1 < w["duration_ratio"] < 10
    assert all(math.isfinite(p["duration_s"]) and p["duration_s"] >= 0.25 for p in prosody["pauses"])


def test_pauses_are_placed_after_their_word(listen, tmp_path):
    # "Please send the report <600 ms> to the manager today."
    path = speak(
        '<speak>Please send the report. <break time="600ms"/> To the manager today.</speak>',
        tmp_path / "p.wav",
        Voice(wpm=150, ssml=True),
    )
    prosody = check_evidence(listen(path))
    [pause] = prosody["pauses"]
    assert bench.normalise(pause["word"]) == "report" and 0.5 < pause["duration_s"] < 0.9
    assert [p["last_word"] for p in prosody["phrases"]] == [pause["after_word"], len(prosody["words"]) - 1]


# scripts/bench_stress.py on a fixed subset: its first 4 sentences by 2 voices in both manners, each asked word
# against another. The values recorded with `prosody` 4 and the judge's focus rule (`prosody` 3 with a
# prominence of 0.75 alone: 26 and 9; the equal weights of `prosody` 2: 19 and 5); a change that lowers either
# fails here first.
STRESS_SUBSET_TOP2 = 27  # stressed words among the two most prominent, of the 27 recognised (32 clips)
STRESS_SUBSET_JUDGED = 10  # pairs the cues judge gets right, of 16


def test_a_fixed_subset_of_the_stress_benchmark_holds_its_recorded_rates(tmp_path):
    clips = stress.synthetic(tmp_path, stress.SENTENCES[:4], stress.VOICES[:2])
    hearing = stress.Hearing(tmp_path)
    top2, found, right, pairs = stress.found_and_judged(clips, {c.path: hearing(c.path) for c in clips})
    assert (found, pairs) == (27, 16)
    assert top2 >= STRESS_SUBSET_TOP2 and right >= STRESS_SUBSET_JUDGED, (top2, right)
