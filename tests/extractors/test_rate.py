"""Speaking-rate extractor on word lists whose rates are worked out by hand, in words per minute where the language
separates words with spaces and in characters per second where it does not."""

from __future__ import annotations

import pytest

from extractors import REGISTRY, Clip, ClipError
from extractors.rate import CHARACTERS, RateConfig, RateExtractor, speaking_rates

PROPS = "agent_audio_properties"
KEYS = ("Speech_Rate_WPM", "Articulation_Rate_WPM", "Pace_Contour_WPM")
CHAR_KEYS = ("Speech_Rate_Chars_Per_S", "Articulation_Rate_Chars_Per_S", "Pace_Contour_Chars_Per_S")


def words(*spans: tuple[float, float]) -> list[dict]:
    return [{"word": f"w{i}", "start": s, "end": e, "probability": 0.9} for i, (s, e) in enumerate(spans)]


def run(blueprint: dict, **config):
    """The rate section of a clip; its transcript is English unless the blueprint says otherwise."""
    blueprint = {"asr": {"language": "en"}, **blueprint} if "words" in blueprint else blueprint
    return RateExtractor(RateConfig(**config)).extract_one(Clip("x", None, blueprint))


def in_words(section) -> tuple[dict, dict]:
    """The words-per-minute values of a section and their null reasons (the characters' are null in English)."""
    values = {key: section.values[PROPS][key] for key in KEYS}
    return values, {k: v for k, v in section.null_reasons.items() if k.split(".")[1] in KEYS}


def test_declares_its_dependency_and_needs_no_audio():
    assert REGISTRY["rate"] is RateExtractor
    assert RateExtractor.depends_on == ("asr",)
    assert RateExtractor.sample_rate is None
    assert set(RateExtractor.outputs) == {f"{PROPS}.{key}" for key in KEYS + CHAR_KEYS}


def test_rates_of_four_words_with_one_pause():
    # 4 words in a 4 s clip; speech from 0.0 to 3.0 s with one 1.0 s pause (gaps of 0.1 s are not pauses)
    section = run({"duration_s": 4.0, "words": words((0.0, 0.5), (0.6, 1.0), (2.0, 2.5), (2.6, 3.0))})
    values, reasons = in_words(section)
    assert values["Speech_Rate_WPM"] == 60.0  # 4 words / 4 s
    assert values["Articulation_Rate_WPM"] == 120.0  # 4 words / (3.0 - 1.0) s
    assert values["Pace_Contour_WPM"] == [80.0]  # 3 s of speech: one window, 4 words / 3 s
    assert reasons == {}
    assert all(section.values[PROPS][key] is None for key in CHAR_KEYS)
    assert section.null_reasons[f"{PROPS}.Speech_Rate_Chars_Per_S"] == (
        "words are separated by spaces in en: see Speech_Rate_WPM"
    )


def test_pace_contour_shows_an_answer_slowing_down():
    spans = [
        (0.0, 0.5),
        (0.5, 1.0),
        (1.0, 1.5),
        (1.5, 2.0),  # midpoints in 0-2 s
        (2.2, 2.8),
        (3.2, 3.8),  # 2-4 s
        (5.0, 5.5),  # 4-6 s
        (7.0, 7.5),  # 6-8 s
        (8.5, 9.0),
        (9.5, 10.0),
    ]  # 8-10 s
    rates = speaking_rates(words(*spans), duration_s=12.0)
    assert rates.speech == 50.0  # 10 words / 12 s
    # pauses 0.4 + 1.2 + 1.5 + 1.0 + 0.5 = 4.6 s of the 10 s span; the 0.2 s gap is speaking time
    assert rates.articulation == round(10 / 5.4 * 60, 1) == 111.1
    assert rates.contour == [120.0, 60.0, 30.0, 30.0, 60.0]  # 5 windows of 2 s


def test_contour_windows_follow_the_settings():
    spans = [(t, t + 0.4) for t in range(10)]  # one word a second, speech from 0 to 9.4 s
    # default: windows of at least 2 s, so 4 windows of 2.35 s holding 3, 2, 2 and 3 midpoints
    assert speaking_rates(words(*spans), 10.0).contour == [76.6, 51.1, 51.1, 76.6]
    # windows of at least 4 s: 2 windows of 4.7 s, 5 midpoints each
    assert speaking_rates(words(*spans), 10.0, RateConfig(contour_min_window_s=4.0)).contour == [63.8, 63.8]
    assert speaking_rates(words(*spans), 10.0, RateConfig(contour_max_windows=1)).contour == [63.8]


def test_pause_threshold_is_a_setting():
    spans = [(0.0, 1.0), (1.2, 2.0)]  # one 0.2 s gap
    assert speaking_rates(words(*spans), 2.0).articulation == 60.0  # 2 words / 2.0 s
    assert speaking_rates(words(*spans), 2.0, RateConfig(pause_s=0.1)).articulation == 66.7  # / 1.8 s


def test_no_words_gives_nulls_with_the_asr_reason():
    section = run(
        {
            "duration_s": 3.0,
            "words": [],
            "agent_response": "",
            "asr": {"language": "en", "reason": "no speech detected (voice activity detection)"},
        }
    )
    assert section.values[PROPS] == {key: None for key in KEYS + CHAR_KEYS}
    for key in KEYS + CHAR_KEYS:
        assert "no speech detected" in section.null_reasons[f"{PROPS}.{key}"]


def test_missing_asr_output_gives_nulls_with_a_reason():
    section = run({"duration_s": 3.0})
    assert section.values[PROPS] == {key: None for key in KEYS + CHAR_KEYS}
    assert all("asr did not run or failed" in section.null_reasons[f"{PROPS}.{key}"] for key in KEYS + CHAR_KEYS)


def test_zero_duration_and_zero_length_words_are_guarded():
    section = run({"duration_s": 0.0, "words": words((0.0, 0.0), (0.0, 0.0))})
    assert in_words(section)[0] == {key: None for key in KEYS}
    assert set(in_words(section)[1]) == {f"{PROPS}.{key}" for key in KEYS}
    # one word with a length: articulation and contour are defined, the clip rate is not
    section = run({"duration_s": 0.0, "words": words((0.0, 0.5))})
    assert in_words(section)[0] == {
        "Speech_Rate_WPM": None,
        "Articulation_Rate_WPM": 120.0,
        "Pace_Contour_WPM": [120.0],
    }
    assert list(in_words(section)[1]) == [f"{PROPS}.Speech_Rate_WPM"]


def test_words_out_of_order_are_sorted():
    ordered = speaking_rates(words((0.0, 0.5), (2.0, 2.5), (4.0, 4.5)), 5.0)
    shuffled = speaking_rates(words((4.0, 4.5), (0.0, 0.5), (2.0, 2.5)), 5.0)
    assert ordered == shuffled


@pytest.mark.parametrize(
    "bad",
    [
        {"word": "a"},
        {"word": "a", "start": 1.0, "end": 0.5},
        {"word": "a", "start": "soon", "end": 1.0},
        {"word": "a", "start": float("nan"), "end": 1.0},
    ],
)
def test_malformed_word_timings_fail_the_clip_with_a_reason(bad):
    with pytest.raises(ClipError, match="malformed word timings"):
        run({"duration_s": 3.0, "words": [bad]})
    # through the batch interface the failure is recorded, not raised
    (result,) = RateExtractor().extract([Clip("x", None, {"duration_s": 3.0, "words": [bad]})])
    assert isinstance(result, ClipError)


def test_rates_from_an_unreliable_transcript_are_null_with_its_reason():
    loop = "repetition loop: compression ratio 3.10 above 2.4 at temperature 1"
    section = run(
        {
            "duration_s": 4.0,
            "words": words((0.0, 0.5), (0.6, 1.0), (2.0, 2.5), (2.6, 3.0)),
            "transcript_quality": {"reliable": False, "reason": loop},
        }
    )
    assert in_words(section)[0] == {key: None for key in KEYS}
    for key in KEYS:
        assert section.null_reasons[f"{PROPS}.{key}"] == f"transcript unreliable: {loop}"
    for key in CHAR_KEYS:  # the unit the language does not count in says so, whatever the transcript
        assert section.null_reasons[f"{PROPS}.{key}"] == "words are separated by spaces in en: see Speech_Rate_WPM"
    reliable = run(
        {
            "duration_s": 4.0,
            "words": words((0.0, 0.5), (0.6, 1.0)),
            "transcript_quality": {"reliable": True, "reason": None},
        }
    )
    assert reliable.values[PROPS]["Speech_Rate_WPM"] == 30.0


def test_speech_rate_beyond_human_speech_is_null_with_the_reason():
    # 24 words in 3 s: 480 words/min overall (a recogniser loop), each word 0.1 s with no pauses
    section = run({"duration_s": 3.0, "words": words(*[(0.125 * k, 0.125 * k + 0.1) for k in range(24)])})
    values = in_words(section)[0]
    assert values == {key: None for key in KEYS}
    assert "480 words per minute is beyond human speech (above 400)" in section.null_reasons[f"{PROPS}.Speech_Rate_WPM"]
    assert "beyond human speech (above 450)" in section.null_reasons[f"{PROPS}.Articulation_Rate_WPM"]
    assert section.null_reasons[f"{PROPS}.Pace_Contour_WPM"] == section.null_reasons[f"{PROPS}.Articulation_Rate_WPM"]


def test_fast_human_speech_is_kept():
    # 12 words in 3 s (240 words/min), spoken over 2.35 s (306 words/min of articulation)
    section = run({"duration_s": 3.0, "words": words(*[(0.2 * k, 0.2 * k + 0.15) for k in range(12)])})
    values, reasons = in_words(section)
    assert values["Speech_Rate_WPM"] == 240.0 and values["Articulation_Rate_WPM"] == 306.4
    assert reasons == {}


def test_syllable_rate_beyond_human_speech_is_null_with_the_reason():
    """A buzz pulsing 16 times a second has 16 intensity peaks per second on voiced frames: not syllables."""
    import numpy as np

    from extractors.voicing import VoicingExtractor
    from trace_eval.audio import Audio

    rate = 16000
    t = np.arange(2 * rate) / rate
    buzz = np.sign(np.sin(2 * np.pi * 140 * t)) * 0.3  # a voiced-like 140 Hz source
    pulses = 0.55 + 0.45 * np.sin(2 * np.pi * 16 * t)
    clip = Clip("buzz", Audio((buzz * pulses).astype(np.float32), rate))
    section = VoicingExtractor().extract_one(clip)
    assert section.values["agent_voicing"]["Syllable_Rate_Per_S"] is None
    reason = section.null_reasons["agent_voicing.Syllable_Rate_Per_S"]
    assert "syllables per second is beyond human speech (above 10)" in reason


def test_a_language_without_spaces_is_counted_in_characters_per_second():
    # Mandarin as faster-whisper splits it: one or two characters a word; punctuation is no character
    spoken = [("我们", 0.0, 0.5), ("明天", 0.5, 1.0), ("去了", 1.0, 1.2), ("北京，", 1.2, 1.8), ("好吗？", 2.8, 3.4)]
    blueprint = {
        "duration_s": 4.0,
        "asr": {"language": "zh"},
        "words": [{"word": w, "start": s, "end": e, "probability": 0.9} for w, s, e in spoken],
    }
    section = run(blueprint)
    values = section.values[PROPS]
    assert values["Speech_Rate_Chars_Per_S"] == 2.5  # 10 characters / 4 s
    assert values["Articulation_Rate_Chars_Per_S"] == 4.2  # 10 / (3.4 - 1.0 s pause)
    assert values["Pace_Contour_Chars_Per_S"] == [2.9]  # 10 / 3.4 s: one window, too short for two
    assert all(values[key] is None for key in KEYS)
    for key in KEYS:
        assert section.null_reasons[f"{PROPS}.{key}"] == (
            "words are not separated by spaces in zh: see Speech_Rate_Chars_Per_S"
        )
    assert not any(key.split(".")[1] in CHAR_KEYS for key in section.null_reasons)


def test_japanese_and_thai_are_counted_in_characters_and_spanish_in_words():
    for language, text in (("ja", "こんにちは"), ("th", "สวัสดี")):
        section = run(
            {
                "duration_s": 2.0,
                "asr": {"language": language},
                "words": [{"word": text, "start": 0.0, "end": 1.0, "probability": 0.9}],
            }
        )
        assert section.values[PROPS]["Speech_Rate_Chars_Per_S"] > 0 and section.values[PROPS]["Speech_Rate_WPM"] is None
    section = run({"duration_s": 2.0, "asr": {"language": "es"}, "words": words((0.0, 0.5), (0.6, 1.0))})
    assert section.values[PROPS]["Speech_Rate_WPM"] == 60.0
    assert section.null_reasons[f"{PROPS}.Articulation_Rate_Chars_Per_S"] == (
        "words are separated by spaces in es: see Speech_Rate_WPM"
    )


def test_characters_beyond_human_speech_are_null_with_the_reason():
    # 40 characters in one second: a recogniser loop, not a speaker
    spans = [("哈哈哈哈", 0.1 * k, 0.1 * k + 0.1) for k in range(10)]
    words_zh = [{"word": w, "start": s, "end": e, "probability": 0.9} for w, s, e in spans]
    rates = speaking_rates(words_zh, 1.0, unit=CHARACTERS)
    assert rates.speech is None and rates.articulation is None and rates.contour is None
    assert "40 characters per second is beyond human speech (above 25)" in rates.null_reasons["Speech_Rate_Chars_Per_S"]


def test_a_transcript_without_its_language_gives_no_rate():
    section = RateExtractor().extract_one(Clip("x", None, {"duration_s": 2.0, "words": words((0.0, 0.5))}))
    assert section.values[PROPS]["Speech_Rate_WPM"] is None
    assert "language is not recorded" in section.null_reasons[f"{PROPS}.Speech_Rate_WPM"]
