"""The cues backbone gives the labels a listener would: known answers, each in both orders of the pair.

Values are those Stage 1 gives the speech described (docs/calibration.md).
"""

from __future__ import annotations

import pytest
from cues_verdict import verdict
from llm_server import blueprint

SWAP = {"1": "2", "2": "1", "both_good": "both_good", "both_bad": "both_bad", None: None}
FERRY = "The ferry to the island leaves every hour from the western pier."


def both_orders(instruction: str, bp1: dict, bp2: dict, dimension: str) -> tuple[dict, dict]:
    """The verdicts of (bp1, bp2) and (bp2, bp1); the label must follow the responses, not their places."""
    first, second = verdict(instruction, bp1, bp2), verdict(instruction, bp2, bp1)
    assert second[dimension] == SWAP[first[dimension]], (first["reasoning"], second["reasoning"])
    return first, second


def scored(p808: float, bak: float, *, transcript: str = FERRY, lufs: float = -23.0, wpm: float = 150.0) -> dict:
    bp = blueprint(transcript, p808=p808, lufs=lufs, wpm=wpm)
    bp["agent_audio_quality"]["DNSMOS_Personalized_Background_Quality"] = bak
    return bp


SAY = f'Say "{FERRY}"'


# -- Voice Quality --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "noisy, clean",
    [
        # Measured on the calibration set (fit-vq07, -vq10, -vq11): one sentence in one voice, clean and noisy.
        ((2.77, 1.59), (3.50, 2.33)),  # white noise at 12 dB SNR: acceptable, yet audible
        ((3.01, 1.91), (3.56, 2.56)),  # pink noise at 17 dB SNR
        ((3.08, 2.15), (3.58, 2.58)),  # white noise at 20 dB SNR: the smallest lead, 0.50 P.808
    ],
)
def test_audible_noise_loses_to_the_clean_copy(noisy, clean):
    first, _ = both_orders(SAY, scored(*clean), scored(*noisy), "voice_quality")
    assert first["voice_quality"] == "1", first["reasoning"]
    assert "cleaner" in first["reasoning"]


@pytest.mark.parametrize(
    "one, other",
    [
        ((3.42, 2.35), (3.30, 2.30)),
        ((3.59, 3.03), (3.32, 2.36)),  # fit-vq13: white noise at 30 dB SNR, faint, against the clean copy
    ],
)
def test_two_clean_sounding_renditions_are_both_good(one, other):
    first, _ = both_orders(SAY, scored(*one), scored(*other), "voice_quality")
    assert first["voice_quality"] == "both_good", first["reasoning"]


def test_dnsmos_leads_between_two_voices_are_not_noise():
    # examples/mini's mini-08: two clean espeak voices, a female one scored lower on P.808 and BAK.
    female, male = scored(3.32, 1.72), scored(3.87, 2.31)
    female["agent_audio_properties"]["Mean_Pitch_Hz"] = 208.0
    male["agent_audio_properties"]["Mean_Pitch_Hz"] = 100.0
    first, _ = both_orders(SAY, female, male, "voice_quality")
    assert first["voice_quality"] == "both_good", first["reasoning"]
    assert "compared only at one pace and voice" in first["reasoning"]


def test_an_answer_too_quiet_to_hear_fails_voice_quality_whatever_dnsmos_says():
    # The same recording 30 dB quieter: DNSMOS scores it the same.
    loud, quiet = scored(3.05, 2.2, lufs=-21.0), scored(3.05, 2.2, lufs=-51.0)
    first, _ = both_orders(SAY, loud, quiet, "voice_quality")
    assert first["voice_quality"] == "1"
    assert "loudness -51 LUFS (needs -45 LUFS)" in first["reasoning"]
    # Asked to whisper, the quiet answer meets the manner but still cannot be heard comfortably.
    first, _ = both_orders(f'Whisper "{FERRY}"', loud, quiet, "voice_quality")
    assert (first["voice_quality"], first["paralinguistics"]) == ("1", "2")
    # A quiet answer that can be heard (-40 LUFS, a -20 dB gain) passes the floor, but loses to the same
    # answer at its natural level (a listener hears the quieter of two equal answers as the worse one) ...
    first, _ = both_orders(SAY, loud, scored(3.05, 2.2, lufs=-40.0), "voice_quality")
    assert first["voice_quality"] == "1"
    assert "response 2 much quieter: 19.0 LU below the other, at -40.0 LUFS" in first["reasoning"]
    # ... and keeps its voice quality against another as quiet.
    first, _ = both_orders(SAY, scored(3.05, 2.2, lufs=-37.0), scored(3.05, 2.2, lufs=-40.0), "voice_quality")
    assert first["voice_quality"] == "both_good"


def test_fast_speech_does_not_lose_voice_quality_for_its_pace():
    # The same words in the same voice at 85 and 260 WPM: DNSMOS scores the fast copy about 1.0 lower.
    slow, fast = scored(3.6, 2.4, wpm=85.0), scored(2.75, 2.35, wpm=260.0)
    first, _ = both_orders(SAY, slow, fast, "voice_quality")
    assert first["voice_quality"] == "both_good", first["reasoning"]
    assert "pace, not quality" in first["reasoning"]
    first, _ = both_orders(f"{SAY} slowly.", slow, fast, "paralinguistics")
    assert first["paralinguistics"] == "1"  # pace is Paralinguistics' business
    # At one pace the same lead is a clear difference (heavy clipping against the clean copy).
    first, _ = both_orders(SAY, scored(3.6, 2.4), scored(2.75, 2.35), "voice_quality")
    assert first["voice_quality"] == "1"


# -- Content ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "quoted, other",
    [
        (FERRY, "Penguins cannot fly but they swim very fast under the water."),
        ("Call waiting.", "Calling."),  # a near miss: not the words asked for
        ("Your call cannot be completed as dialed.", "That is not a valid conference number."),
    ],
)
def test_another_sentence_or_a_near_miss_fails_content(quoted, other):
    say = f'Say "{quoted}"'
    first, _ = both_orders(say, blueprint(quoted.lower()), blueprint(other), "content")
    assert first["content"] == "1", first["reasoning"]
    assert verdict(say, blueprint(other), blueprint(other))["content"] == "both_bad"


def test_misheard_words_still_pass_content():
    # Recognisers write "Mr" for "mister" and drop or add a letter; the words are still the ones asked for.
    quoted = "And mister John Dashwood had then leisure to consider how much there might be in his power."
    heard = "And Mr. John Dashwoods had then leisure to consider how much there might be in his power."
    first, _ = both_orders(
        f'Say "{quoted}"', blueprint(heard), blueprint("He was not an ill disposed young man."), "content"
    )
    assert first["content"] == "1", first["reasoning"]


# -- Paralinguistics --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "instruction, manner",
    [
        (f'Say this politely: "{FERRY}"', "politeness"),
        (f'Say "{FERRY}" sarcastically.', "sarcasm"),
        (f'Say "{FERRY}" warmly.', "warmth"),
        (f'In a mysterious tone, say "{FERRY}"', "other tone"),
        (f'Read "{FERRY}" with enthusiasm.', "excitement"),
        (f'Say "{FERRY}" solemnly.', "solemnly (a manner)"),
    ],
)
def test_a_manner_no_rule_measures_leaves_paralinguistics_undetermined(instruction, manner):
    first, _ = both_orders(instruction, blueprint(FERRY), blueprint(FERRY, wpm=240.0), "paralinguistics")
    assert first["paralinguistics"] is None
    assert manner in first["undetermined"]["paralinguistics"]


def test_excitement_is_undetermined_without_emotion_scores():
    bp = blueprint(FERRY, emotion={})
    first, _ = both_orders(f'Say "{FERRY}" excitedly.', bp, bp, "paralinguistics")
    assert first["paralinguistics"] is None and "emotion unmeasured" in first["undetermined"]["paralinguistics"]


@pytest.mark.parametrize(
    "instruction",
    [f'Say this slowly: "{FERRY}"', f'Say this politely: "{FERRY}"', f'Say "{FERRY}" quickly and loudly.'],
)
def test_no_speech_fails_every_manner_asked_for(instruction):
    silent = blueprint("", wpm=None, lufs=None, pitch_hz=None)
    silent["agent_voicing"] = {"Voiced_Fraction": 0.0, "Syllable_Rate_Per_S": None}
    spoken = blueprint(FERRY, wpm=100.0, lufs=-20.0)
    answer = verdict(instruction, silent, silent)
    assert answer["paralinguistics"] == "both_bad" and "no speech" in answer["reasoning"]
    if "politely" in instruction:  # the speaking answer is unmeasured: the pair stays undetermined
        assert verdict(instruction, silent, spoken)["paralinguistics"] is None
        return
    speaking = "2" if "slowly" in instruction else "both_bad"  # 100 WPM is not quick
    first, _ = both_orders(instruction, silent, spoken, "paralinguistics")
    assert first["paralinguistics"] == speaking, first["reasoning"]


def test_no_speech_fails_voice_quality():
    silent = blueprint("", p808=3.1, lufs=None, wpm=None)
    first, _ = both_orders(SAY, silent, scored(3.4, 2.3), "voice_quality")
    assert first["voice_quality"] == "2" and "response 1 has no speech" in first["reasoning"]


# -- Surface cues a listener does not hear as a change (the bias audit's probes) ---------------------------------


def _timed(wpm: float, duration_s: float, speech_s: float, lead_s: float) -> dict:
    """A blueprint whose words span `speech_s` seconds from `lead_s` on, in a clip of `duration_s` seconds."""
    bp = blueprint(FERRY, wpm=wpm)
    bp["duration_s"] = duration_s
    words = FERRY.split()
    step = speech_s / len(words)
    bp["words"] = [{"word": w, "start": lead_s + i * step, "end": lead_s + (i + 1) * step} for i, w in enumerate(words)]
    return bp


@pytest.mark.parametrize("lead_s, trail_s", [(3.0, 0.0), (0.0, 3.0), (1.0, 1.0)])
def test_silence_around_a_fast_answer_does_not_make_it_slow(lead_s, trail_s):
    # 12 words in 2.4 s: 300 WPM; over the clip with 3 s of silence, 133 or fewer: "slow" if silence counted.
    fast = _timed(300.0, 2.4, 2.4, 0.0)
    padded_duration = 2.4 + lead_s + trail_s
    padded = _timed(300.0 * 2.4 / padded_duration, padded_duration, 2.4, lead_s)
    first, _ = both_orders(f'Say this slowly: "{FERRY}"', padded, fast, "paralinguistics")
    assert first["paralinguistics"] == "both_bad", first["reasoning"]
    first, _ = both_orders(f'Say this quickly: "{FERRY}"', padded, fast, "paralinguistics")
    assert first["paralinguistics"] == "both_good", first["reasoning"]


def test_the_first_half_of_the_sentence_fails_content():
    # "The ferry to the island leaves every hour": 65% of the letters, as long as a first half is heard (53-66%)
    half = " ".join(FERRY.split()[:8]) + "."
    first, _ = both_orders(SAY, blueprint(half), blueprint(FERRY), "content")
    assert first["content"] == "2", first["reasoning"]
