"""ASR extractor: real transcription with the shipped Whisper tiny.en (faster-whisper) on
espeak-ng speech; the transformers path end to end on a tiny random Whisper, and on the
same tiny.en rewritten in the transformers layout, against faster-whisper. Other languages,
and the multilingual Whisper base that detects them: tests/extractors/test_languages.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jiwer
import numpy as np
import pytest
from tiny_models import build_tiny_whisper, build_tiny_whisper_en_from_package

from extractors import REGISTRY, Clip, ExtractorUnavailable, Section
from extractors._whisper_decoding import Fallback
from extractors._whisper_hf import dynamic_time_warping, split_words
from extractors.asr import (
    AsrConfig,
    AsrExtractor,
    ClipLanguage,
    WindowTranscript,
    Word,
    choose_backend,
    compression_ratio,
    longest_repeat,
    plan_windows,
    recogniser_input,
)
from extractors.loudness import LoudnessExtractor
from extractors.rate import RateExtractor
from trace_eval.audio import Audio, load_audio
from trace_eval.synth import Voice, speak

RATE = 16000
SENTENCES = [
    "The weather today is sunny and warm.",
    "Please open the window before you leave.",
    "Can you help me carry these boxes upstairs?",
    "The children are playing in the garden.",
    "Turn left at the next corner and keep walking.",
    "We will meet at the station tomorrow.",
]

NO_FALLBACK = (0.0,)  # temperature 0 only: Whisper's fallback off
TINY_EN = {"model": "whisper-tiny.en-ct2", "language": "en"}  # tiny.en alone, as these tests are about it


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]", " ", text.lower()).split())


def clip_of(path: Path) -> Clip:
    return Clip(sha256=path.stem, audio=load_audio(path))


def long_clip(paths: list[Path], pause_s: float = 1.5) -> Clip:
    """Sentences one after another with pauses: longer than Whisper's 30 s window."""
    silence = np.zeros(int(pause_s * RATE), dtype=np.float32)
    parts = []
    for path in paths:
        parts += [load_audio(path).at(RATE), silence]
    return Clip(sha256="long", audio=Audio(np.concatenate(parts), RATE))


def check_asr_section(section: Section, clip: Clip, backend: str) -> None:
    """The keys and types every consumer of the blueprint relies on."""
    assert isinstance(section, Section), section
    values = section.values
    assert set(values) == {"agent_response", "language", "words", "asr", "transcript_quality"}
    quality = values["transcript_quality"]
    assert set(quality) == {"avg_logprob", "compression_ratio", "no_speech_prob", "temperature", "reliable", "reason"}
    assert isinstance(quality["reliable"], bool) and (quality["reason"] is None) == quality["reliable"]
    if values["words"]:
        assert quality["temperature"] in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
        assert quality["avg_logprob"] <= 0 and 0 <= quality["no_speech_prob"] <= 1
    assert isinstance(values["agent_response"], str)
    assert values["agent_response"] == values["agent_response"].strip()
    assert values["asr"]["backend"] == backend
    assert isinstance(values["asr"]["model"], str) and values["asr"]["model"]
    assert "language" in values["asr"]
    previous_start = 0.0
    for word in values["words"]:
        assert set(word) == {"word", "start", "end", "probability"}
        assert isinstance(word["word"], str) and word["word"] and word["word"] == word["word"].strip()
        assert 0.0 <= word["start"] <= word["end"] <= clip.duration_s + 1e-6
        assert word["start"] >= previous_start - 1e-6
        assert 0.0 <= word["probability"] <= 1.0
        previous_start = word["start"]
    if not values["words"]:
        assert values["agent_response"] == "" and values["asr"].get("reason")


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("speech")
    files = {f"plain{i}": speak(s, folder / f"plain{i}.wav") for i, s in enumerate(SENTENCES)}
    for wpm in (110, 220):
        files[f"wpm{wpm}"] = speak(SENTENCES[4], folder / f"wpm{wpm}.wav", Voice(wpm=wpm))
    files["slow_part"] = speak(" ".join(SENTENCES[:2]), folder / "slow_part.wav", Voice(wpm=100))
    files["fast_part"] = speak(" ".join(SENTENCES[2:4]), folder / "fast_part.wav", Voice(wpm=250))
    return files


# -- faster-whisper with the shipped tiny.en ---------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_en() -> AsrExtractor:
    extractor = AsrExtractor(AsrConfig(**TINY_EN), device="cpu")
    extractor.load()
    return extractor


def test_the_shipped_tiny_en(tiny_en):
    assert REGISTRY["asr"] is AsrExtractor
    assert tiny_en.config.backend == "faster-whisper"
    assert tiny_en.config.compute_type == "int8"  # exact integer products, in the numeric class's kernels
    model = tiny_en.model()
    assert model.id == "Systran/faster-whisper-tiny.en" and len(model.revision) == 40
    assert Path(model.source, "model.bin").is_file()


def test_default_on_cpu_is_base_for_every_language_and_tiny_en_for_english():
    """Both ship on PyPI; base is joined from its two packages into the user's cache, digests checked."""
    default = AsrExtractor(device="cpu")
    assert (default.config.model, default.config.english_model) == ("whisper-base-ct2", "whisper-tiny.en-ct2")
    assert default.model().id == "Systran/faster-whisper-base + Systran/faster-whisper-tiny.en"
    assert default.model().revision == (
        "ebe41f70d5b6dfa9166e2c581c45c9c0cfc57b66 + 0d3d19a32d3338f10357c0889762bd8d64bbdeba"
    )
    default.load()
    base, tiny = default.model().source.split(" + ")
    assert Path(base, "model.bin").stat().st_size == 145_217_532 and Path(tiny, "model.bin").is_file()
    assert default._loaded.multilingual and not default._english.multilingual
    alone = AsrExtractor(AsrConfig(english_model="whisper-base-ct2"))  # base decodes English too
    assert alone.english_card is None and alone.model().id == "Systran/faster-whisper-base"
    assert alone.fingerprint() != default.fingerprint()


def test_transcribes_plain_sentences(tiny_en, speech):
    clips = [clip_of(speech[f"plain{i}"]) for i in range(len(SENTENCES))]
    sections = tiny_en.extract(clips)
    for section, clip in zip(sections, clips):
        check_asr_section(section, clip, "faster-whisper")
        assert section.values["asr"]["language"] == "en"
        assert "reason" not in section.values["asr"]
    hypotheses = [normalise(s.values["agent_response"]) for s in sections]
    error_rate = jiwer.wer([normalise(s) for s in SENTENCES], hypotheses)
    assert error_rate <= 0.2, list(zip(SENTENCES, hypotheses))
    # Word timings cover the speech: the last word ends near the end of the clip.
    for section, clip in zip(sections, clips):
        words = section.values["words"]
        assert len(words) >= 5
        assert words[-1]["end"] > 0.6 * clip.duration_s


def test_slower_speech_gives_lower_speech_rate(tiny_en, speech):
    clips = [clip_of(speech["wpm110"]), clip_of(speech["wpm220"])]
    rates = []
    for clip, section in zip(clips, tiny_en.extract(clips)):
        blueprint = {"duration_s": clip.duration_s, **section.values}
        rate = RateExtractor().extract_one(Clip(clip.sha256, None, blueprint))
        rates.append(rate.values["agent_audio_properties"]["Speech_Rate_WPM"])
    slow, fast = rates
    assert slow is not None and fast is not None
    assert fast > 1.5 * slow, rates
    assert 80 < slow < 160 and 160 < fast < 300, rates  # espeak-ng -s is roughly words per minute


def test_pace_contour_shows_an_answer_speeding_up(tiny_en, speech):
    clip = long_clip([speech["slow_part"], speech["fast_part"]], pause_s=0.3)
    (section,) = tiny_en.extract([clip])
    blueprint = {"duration_s": clip.duration_s, **section.values}
    contour = (
        RateExtractor()
        .extract_one(Clip(clip.sha256, None, blueprint))
        .values["agent_audio_properties"]["Pace_Contour_WPM"]
    )
    assert len(contour) == 5
    assert contour[-1] > 1.8 * contour[0], contour


def test_silence_and_noise_give_an_empty_transcript_with_a_reason(tiny_en):
    rng = np.random.default_rng(0)
    clips = [
        Clip("silence", Audio(np.zeros(3 * RATE, dtype=np.float32), RATE)),
        Clip("hiss", Audio((rng.standard_normal(3 * RATE) * 1e-4).astype(np.float32), RATE)),
        Clip("noise", Audio((rng.standard_normal(3 * RATE) * 0.1).astype(np.float32), RATE)),
    ]
    for clip, section in zip(clips, tiny_en.extract(clips)):
        check_asr_section(section, clip, "faster-whisper")
        assert section.values["agent_response"] == "", clip.sha256
        assert section.values["words"] == []
        assert "no speech" in section.values["asr"]["reason"]


def _at_loudness(source: Path, lufs: float, out: Path) -> Clip:
    """`source` brought to `lufs` by sox (16-bit, no dither), as a quiet answer is delivered."""
    measured = LoudnessExtractor().extract_one(clip_of(source)).values["agent_audio_properties"]
    gain = lufs - measured["Integrated_Loudness_LUFS"]
    subprocess.run(["sox", "-D", "-R", str(source), "-b", "16", str(out), "gain", f"{gain:.2f}"], check=True)
    return clip_of(out)


def test_a_quiet_answer_is_heard_as_its_level_normalised_copy(tiny_en, tmp_path):
    # Fed to Whisper as it is, the quiet clip was heard as "Dinner Ms. Maddie." (and, in the arithmetic before
    # asr 7, its en-gb twin as "You know what I mean, Brad did."); its level-normalised copy as the -23 LUFS one.
    sources = [
        speak("Dinner is ready.", tmp_path / "dinner.wav", Voice(voice="en-us")),
        Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav"),
    ]
    for source in sources:
        quiet = _at_loudness(source, -40.0, tmp_path / f"{source.stem}-quiet.wav")
        normal = _at_loudness(source, -23.0, tmp_path / f"{source.stem}-normal.wav")
        heard_quiet, heard_normal = tiny_en.extract([quiet, normal])
        assert normalise(heard_quiet.values["agent_response"]) == normalise(heard_normal.values["agent_response"])
        assert heard_quiet.values["transcript_quality"]["reliable"] is True
        assert heard_quiet.values["asr"]["input_gain_db"] == pytest.approx(17.0, abs=0.3)
        # The blueprint keeps the loudness the answer was delivered at.
        kept = LoudnessExtractor().extract_one(quiet).values["agent_audio_properties"]["Integrated_Loudness_LUFS"]
        assert kept == pytest.approx(-40.0, abs=0.3)
    assert normalise(heard_quiet.values["agent_response"]) == "he was not an old sposed young man"


def test_the_input_level_setting_enters_the_fingerprint():
    default, as_recorded = AsrExtractor(AsrConfig()), AsrExtractor(AsrConfig(input_loudness_lufs=None))
    assert default.fingerprint() != as_recorded.fingerprint()
    rng = np.random.default_rng(1)
    quiet = (rng.standard_normal(RATE) * 0.001).astype(np.float32)
    assert recogniser_input(quiet, as_recorded.config) == (quiet, 0.0)
    louder, gain = recogniser_input(quiet, AsrConfig(max_input_gain_db=12.0))
    assert gain == 12.0 and np.allclose(louder, quiet * 10 ** (12 / 20))


def test_files_longer_than_30_s_are_transcribed_whole(tiny_en, speech):
    clip = long_clip([speech[f"plain{i}"] for i in range(len(SENTENCES))] * 2)
    assert clip.duration_s > 35
    (section,) = tiny_en.extract([clip])
    check_asr_section(section, clip, "faster-whisper")
    text = normalise(section.values["agent_response"])
    assert text.count("garden") == 2 and text.count("station") == 2, text
    assert section.values["words"][-1]["end"] > 30.0


# -- how far to trust a transcript ------------------------------------------------------------------
FOX = "The quick brown fox jumps over the lazy dog."
GATHER = "Everyone please gather at the front entrance of the building right now."


def test_a_low_confidence_window_is_decoded_again_the_same_way_on_every_run(tmp_path):
    # At temperature 0 tiny.en is unsure of this very fast clip (average log-probability -1.06), so it samples
    # at 0.2 ... 1.0 and keeps its most probable attempt: every fresh run, on any CPU, samples the same, since
    # the sampler is seeded from the window's audio and the kernels are pinned.
    path = speak(FOX, tmp_path / "fox330.wav", Voice(wpm=330))
    script = (
        "import json, sys; from extractors.asr import AsrConfig, AsrExtractor; from extractors import Clip; "
        "from trace_eval.audio import load_audio; "
        "(s,) = AsrExtractor(AsrConfig(vad=False, model='whisper-tiny.en-ct2', language='en'))"
        ".extract([Clip('x' * 64, load_audio(sys.argv[1]))]); "
        "print(json.dumps([s.values['agent_response'], s.values['transcript_quality'], s.values['words']]))"
    )
    root = Path(__file__).resolve().parents[2]
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, str(path)], cwd=root, capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    quality = runs[0][1]
    assert "after decoding at temperatures up to 1 (kept: the attempt at" in (quality["reason"] or ""), quality


def test_a_sampled_window_does_not_depend_on_what_was_decoded_before_it_or_beside_it(tmp_path):
    # CTranslate2 seeds a worker thread's sampler once; the sampled temperatures of each window run on a
    # model loaded for it, after its own seed is set, so order, repetition and windows decoded at the same
    # time (each on a thread of its own) change nothing.
    from extractors._whisper_ct2 import FasterWhisper
    from extractors.asr import card_for
    from extractors.models import resolve_model

    sampled_only = Fallback((0.6,), 2.4, -1.0, seed=0)
    weights = resolve_model(card_for("whisper-tiny.en-ct2"))
    backend = FasterWhisper(weights, sampled_only, workers=1)
    a = clip_of(speak(FOX, tmp_path / "a.wav", Voice(wpm=330))).samples(RATE)
    b = clip_of(speak(GATHER, tmp_path / "b.wav", Voice(wpm=300, voice="en+whisper"))).samples(RATE)
    first = backend.transcribe([a, b, a], "en", [11, 22, 11])
    again = backend.transcribe([b, a], "en", [22, 11])
    assert first[0] == first[2] == again[1] and first[1] == again[0]
    assert first[0].temperature == 0.6 and first[0].text
    assert backend.transcribe([a], "en", [12])[0].words != first[0].words  # another seed, another sample
    together = FasterWhisper(weights, Fallback((0.0, 0.6), 2.4, -1.0, seed=0), workers=3)
    beam_first = together.transcribe([a, b, a, b], "en", [11, 22, 11, 22])
    assert beam_first == [together.transcribe([w], "en", [s])[0] for w, s in zip([a, b, a, b], [11, 22, 11, 22])]


def test_a_batch_too_large_for_the_device_is_decoded_in_halves_to_the_same_values(tiny_en, speech):
    clips = [clip_of(speech[f"plain{i}"]) for i in range(5)]
    whole = [section.values for section in tiny_en.extract(clips)]
    small = AsrExtractor(AsrConfig(**TINY_EN), device="cpu")  # a device that holds two windows at a time
    small.load()
    decoder, _ = small._decoder("en")
    transcribe, sizes = decoder.transcribe, []

    def at_most_two(windows, language, seeds):
        sizes.append(len(windows))
        if len(windows) > 2:
            raise RuntimeError("CUDA failed with error out of memory")  # as CTranslate2 says it on a GPU
        return transcribe(windows, language, seeds)

    decoder.transcribe = at_most_two
    assert [section.values for section in small.extract(clips)] == whole
    assert sizes == [5, 2, 2, 1] and small.max_windows == 2  # halved once, then cut to what fitted
    sizes.clear()
    assert [section.values for section in small.extract(clips)] == whole
    assert sizes == [2, 2, 1]  # the next batch is not tried whole again

    small.max_windows, lengths = None, []

    def one_bad(windows, language, seeds):  # any other failure: the halves again, down to the one window
        lengths.extend([] if lengths else [len(w) for w in windows])
        if lengths[2] in [len(w) for w in windows]:
            raise ValueError("a window this model cannot take")
        return transcribe(windows, language, seeds)

    decoder.transcribe = one_bad
    outcomes = small.extract(clips)
    failed = [n for n, outcome in enumerate(outcomes) if not isinstance(outcome, Section)]
    assert len(failed) == 1 and "a window this model cannot take" in str(outcomes[failed[0]])
    assert [o.values for n, o in enumerate(outcomes) if n not in failed] == [
        v for n, v in enumerate(whole) if n not in failed
    ]
    assert small.max_windows is None  # not a matter of memory


def test_fast_clear_speech_keeps_its_transcript(tiny_en, tmp_path):
    path = speak(GATHER, tmp_path / "gather260.wav", Voice(wpm=260))  # about 2.5 s, 280 words/min
    clip = clip_of(path)
    assert 2.2 < clip.duration_s < 2.8
    (section,) = tiny_en.extract([clip])
    check_asr_section(section, clip, "faster-whisper")
    assert jiwer.wer(normalise(GATHER), normalise(section.values["agent_response"])) <= 0.2, section.values
    blueprint = {"duration_s": clip.duration_s, **section.values}
    rate = RateExtractor().extract_one(Clip(clip.sha256, None, blueprint)).values["agent_audio_properties"]
    assert 200 < rate["Speech_Rate_WPM"] < 350, rate


def test_a_looping_clip_goes_to_the_fallback_and_a_loop_that_survives_it_is_flagged(tmp_path):
    # Decoded whole (no voice-activity trimming), this whispered "tick tock" makes tiny.en loop at
    # temperature 0: "Tick, tick, tick, ..." 112 times for ten words said.
    path = speak(
        "tick tock tick tock tick tock tick tock tick tock", tmp_path / "loop.wav", Voice(wpm=100, voice="en+whisper")
    )
    clip = clip_of(path)

    def decoded(**config) -> tuple[dict, dict]:
        config = {"input_loudness_lufs": None, **config}  # as recorded: brought to -23 LUFS, every attempt loops
        (section,) = AsrExtractor(AsrConfig(vad=False, **TINY_EN, **config)).extract([clip])
        blueprint = {"duration_s": clip.duration_s, **section.values}
        return blueprint, RateExtractor().extract_one(Clip(clip.sha256, None, blueprint)).values[
            "agent_audio_properties"
        ]

    looping, rates = decoded(temperatures=NO_FALLBACK)
    quality = looping["transcript_quality"]
    assert len(looping["agent_response"].split()) > 40, looping["agent_response"]
    assert quality["reliable"] is False and quality["compression_ratio"] > 2.4, quality
    assert "repetition loop" in quality["reason"]
    assert rates["Speech_Rate_WPM"] is None

    fixed, _ = decoded()
    quality = fixed["transcript_quality"]
    # The loop sends the window to the sampled temperatures, which may end it. Which sentence a sample gives
    # depends on the arithmetic's last bits: each numeric class's exact result is held by the golden files
    # (tests/goldens/*/loop-whole.json); here, what holds in every class: every temperature was tried unless
    # one passed, and a loop kept is flagged.
    passed = quality["temperature"] > 0 and quality["reliable"]
    assert passed or "after decoding at temperatures up to 1 (kept: the attempt at" in quality["reason"], quality
    still_loops = quality["compression_ratio"] > 2.4 or longest_repeat(fixed["agent_response"])[1] > 4
    assert ("repetition loop" in (quality["reason"] or "")) == still_loops, quality

    # Heard at -23 LUFS, no temperature passes: what is kept (a loop, or an attempt too unsure, as the class's
    # arithmetic falls) is flagged with the temperatures tried, and no rate is read from it.
    louder, rates = decoded(input_loudness_lufs=-23.0)
    quality = louder["transcript_quality"]
    assert quality["reliable"] is False and "after decoding at temperatures up to 1" in quality["reason"], quality
    assert "repetition loop" in quality["reason"] or "low recogniser confidence" in quality["reason"], quality
    assert rates["Speech_Rate_WPM"] is None


def _window(text: str, no_speech_prob: float = 0.1, avg_logprob: float = -0.3, temperature: float = 0.0):
    words = [Word(f" {w}", 0.3 * k, 0.3 * k + 0.25, 0.9) for k, w in enumerate(text.split())]
    return WindowTranscript(
        text, words, "en", no_speech_prob, avg_logprob, compression_ratio(text), temperature, len(words)
    )


def _assessed(tiny_en, window, seconds: float, language: str = "en") -> dict:
    clip = Clip("x", Audio(np.zeros(int(seconds * RATE), dtype=np.float32), RATE))
    declared = ClipLanguage({"code": language, "probability": None, "source": "declared"}, None, language)
    return tiny_en._assemble(clip, [((0, 0.0, seconds), window)], 0.0, declared).values


def test_speech_whisper_takes_for_silence_is_kept_and_marked_unreliable(tiny_en):
    # Whisper's no-speech rule (0.6 and -1) once erased such windows; the voice-activity gate found speech there.
    values = _assessed(tiny_en, _window("please hold the line", no_speech_prob=0.83, avg_logprob=-1.35), 2.4)
    assert values["agent_response"] == "please hold the line" and len(values["words"]) == 4
    quality = values["transcript_quality"]
    assert quality["reliable"] is False and quality["no_speech_prob"] == 0.83 and quality["avg_logprob"] == -1.35
    assert "takes this speech for silence" in quality["reason"] and "voice activity detection" in quality["reason"]


def test_a_loop_that_survives_the_fallback_is_flagged_and_its_rates_are_null(tiny_en):
    # What tiny.en wrote for 3 s of slow speech: eight times the real length.
    text = "Children kill it, " + ", ".join(["kill it"] * 30) + "."
    values = _assessed(tiny_en, _window(text, temperature=1.0), 3.0)
    quality = values["transcript_quality"]
    assert quality["reliable"] is False and quality["compression_ratio"] > 2.4 and quality["temperature"] == 1.0
    assert "repetition loop: compression ratio" in quality["reason"]
    assert 'repetition loop: "kill it" 31 times in a row' in quality["reason"]
    assert "more words than the speech allows" in quality["reason"]
    rate = RateExtractor().extract_one(Clip("x", None, {"duration_s": 3.0, **values}))
    assert rate.values["agent_audio_properties"]["Speech_Rate_WPM"] is None
    assert rate.null_reasons["agent_audio_properties.Speech_Rate_WPM"].startswith("transcript unreliable: repetition")


def test_repeats_and_compression_measure_loops_not_speech():
    assert longest_repeat("no, no, no, that is not it") == ("no", 3)
    assert longest_repeat("we will, we will, we will, we will, we will rock you") == ("we will", 5)
    assert longest_repeat("a plain sentence") == ("", 1)
    assert compression_ratio(GATHER) < 1.5 < 2.4 < compression_ratio(" ".join(["kill it"] * 30))


def test_loops_and_speed_are_counted_in_characters_where_words_are_not_separated(tiny_en):
    assert longest_repeat("谢谢谢谢谢谢", language="zh") == ("谢", 6)
    assert longest_repeat("我们，我们，我们，我们，我们好", language="zh") == ("我们", 5)
    assert longest_repeat("我们明天去北京看长城。", language="zh") == ("", 1)
    assert longest_repeat("谢谢谢谢谢谢") == ("", 1)  # as words: one word said once
    # 80 characters in 2 s of speech: beyond any speaker, though only one "word" by spaces
    values = _assessed(tiny_en, _window("我们明天去北京看长城" * 8), 2.0, language="zh")
    reason = values["transcript_quality"]["reason"]
    assert "more characters than the speech allows: 40.0 per second of speech, above 25" in reason
    assert values["agent_response"] == "我们明天去北京看长城" * 8 and values["language"]["code"] == "zh"
    assert _assessed(tiny_en, _window("我们明天去北京看长城。"), 2.0, language="zh")["transcript_quality"]["reliable"]


def test_fallback_decisions_are_taken_on_the_numbers_as_stored():
    # Two attempts that store the same average log-probability (-1.052) tie: the lower temperature is kept,
    # whichever of them the last bit of another CPU's arithmetic would have favoured.
    fallback = Fallback((0.0, 0.2, 0.4), 2.4, -1.0, seed=0)
    beam = _window("the quick run fox", avg_logprob=-1.05238, temperature=0.0)
    sampled = _window("the quick brown fox", avg_logprob=-1.05162, temperature=0.2)
    kept = fallback.best_of_failed([beam, sampled])
    assert (kept.text, kept.temperature, kept.tried_up_to) == ("the quick run fox", 0.0, 0.2)
    assert fallback.best_of_failed([sampled, beam]).temperature == 0.0  # whatever the order
    clearer = _window("the quick brown fox", avg_logprob=-1.0514, temperature=0.4)  # stored -1.051: better
    assert fallback.best_of_failed([beam, sampled, clearer]).temperature == 0.4
    # Retried only when the stored value is below the threshold: -1.0004 is stored as -1.0.
    assert not fallback.needs_retry(_window("a b c", avg_logprob=-1.0004))
    assert fallback.needs_retry(_window("a b c", avg_logprob=-1.0006))
    # The reasons a blueprint gives agree with the numbers it stores.
    asr = AsrExtractor()
    assert asr._doubts(_window("yes", no_speech_prob=0.6004, avg_logprob=-1.2), 1.0, "en") == [
        "low recogniser confidence: average log-probability -1.20 below -1.0"
    ]
    assert asr._doubts(_window("yes", no_speech_prob=0.6006, avg_logprob=-1.2), 1.0, "en")[0].startswith(
        "Whisper takes this speech for silence"
    )


def test_a_tampered_model_file_is_refused(tmp_path, tiny_en):
    source = Path(tiny_en.model().source)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(source / name, tmp_path / name)
    (tmp_path / "model.bin").symlink_to(source / "model.bin")
    with open(tmp_path / "vocabulary.txt", "a") as f:
        f.write("extra\n")
    extractor = AsrExtractor(AsrConfig(model_path=str(tmp_path), model="whisper-tiny.en-ct2"))
    with pytest.raises(ExtractorUnavailable, match="sha256"):
        extractor.load()


def test_english_only_model_refuses_another_language():
    with pytest.raises(ExtractorUnavailable, match="asr.language"):
        AsrExtractor(AsrConfig(model="whisper-tiny.en-ct2", language="fr")).load()


def test_missing_weights_name_the_setting_that_fixes_it(monkeypatch, tmp_path):
    monkeypatch.setenv("TRACE_OFFLINE", "1")
    monkeypatch.setenv("TRACE_MODELS_DIR", str(tmp_path))
    extractor = AsrExtractor(AsrConfig(model="example-org/whisper-never-published"))
    assert extractor.config.backend == "transformers"
    with pytest.raises(ExtractorUnavailable, match=r"--set asr\.model_path=DIR"):
        extractor.load()


# -- choices and windows (no model) ---------------------------------------------------------------
def test_backend_follows_the_weights_then_the_device(tmp_path):
    assert choose_backend(AsrConfig(), "cpu") == "faster-whisper"
    assert choose_backend(AsrConfig(), "cuda") == "transformers"
    assert choose_backend(AsrConfig(model="whisper-large-v3"), "cpu") == "transformers"
    assert choose_backend(AsrConfig(model="whisper-large-v3-ct2"), "cuda") == "faster-whisper"
    (tmp_path / "model.bin").write_bytes(b"")
    assert choose_backend(AsrConfig(model_path=str(tmp_path)), "cuda") == "faster-whisper"
    with pytest.raises(ValueError, match="expected one of"):
        choose_backend(AsrConfig(backend="whisper.cpp"), "cpu")
    with pytest.raises(ValueError, match="asr.backend=transformers"):
        AsrExtractor(AsrConfig(backend="faster-whisper", model="whisper-large-v3"))


def test_fingerprint_records_the_model_actually_used():
    on_cpu, on_gpu = AsrExtractor(device="cpu"), AsrExtractor(device="cuda")
    assert on_gpu.config.backend == "transformers" and on_gpu.config.compute_type == "float16"
    assert on_cpu.fingerprint() != on_gpu.fingerprint()
    moved = AsrExtractor(
        AsrConfig(
            model_path="/elsewhere/whisper",
            backend="faster-whisper",
            model="whisper-base-ct2",
            english_model="whisper-tiny.en-ct2",
        )
    )
    assert moved.fingerprint() == on_cpu.fingerprint()  # where the weights live changes nothing


def test_speech_spans_are_grouped_into_windows_of_at_most_30_s():
    assert plan_windows([(0.0, 10.0), (12.0, 25.0), (26.0, 40.0)]) == [(0.0, 25.0), (26.0, 40.0)]
    assert plan_windows([(1.0, 61.0)]) == [(1.0, 31.0), (31.0, 61.0)]
    assert plan_windows([(0.0, 75.0)]) == [(0.0, 25.0), (25.0, 50.0), (50.0, 75.0)]  # cut evenly
    assert plan_windows([]) == []


def test_time_warping_follows_the_cheapest_monotonic_path():
    path = [(0, 0), (0, 1), (1, 2), (2, 3), (2, 4), (2, 5), (3, 6)]  # token, frame
    cost = np.ones((4, 7))
    for token, frame in path:
        cost[token, frame] = -1.0
    tokens, frames = dynamic_time_warping(cost)
    assert list(zip(tokens.tolist(), frames.tolist())) == path


def test_tokens_are_grouped_into_words_with_their_punctuation(tiny_random_whisper):
    from transformers import WhisperTokenizer

    from extractors._whisper_hf import _merge_punctuation
    from extractors.asr import Word

    tokenizer = WhisperTokenizer.from_pretrained(tiny_random_whisper)

    def decode(tokens):
        return tokenizer.decode(tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    tokens = tokenizer.encode(' He said "hello, world." Café 東京!', add_special_tokens=False)
    words, word_tokens = split_words(decode, tokens)
    assert [t for group in word_tokens for t in group] == tokens
    assert words == [" He", " said", ' "hello', ",", ' world."', " Café", " 東京", "!"]
    merged = _merge_punctuation([Word(w, float(i), i + 0.5, 1.0) for i, w in enumerate(words)])
    assert [w.word for w in merged] == [" He", " said", ' "hello,', ' world."', " Café", " 東京!"]
    assert [w.start for w in merged] == [0.0, 1.0, 2.0, 4.0, 5.0, 6.0]  # a word keeps its own times


# -- transformers backend on a tiny random Whisper ----------------------------------------------------
@pytest.fixture(scope="module")
def tiny_random_whisper(tmp_path_factory) -> Path:
    return build_tiny_whisper(tmp_path_factory.mktemp("tiny-whisper"))


# Random weights are never confident, so every window would fall back: tests about other things turn it off.
def transformers_asr(directory: Path, **config) -> AsrExtractor:
    extractor = AsrExtractor(AsrConfig(**{"model_path": str(directory), "beam_size": 1, **config}), device="cpu")
    extractor.load()
    return extractor


def test_transformers_backend_batched_equals_one_by_one(tiny_random_whisper, speech):
    clips = [clip_of(speech[name]) for name in ("plain0", "wpm110", "plain3", "wpm220")]
    clips.append(long_clip([speech["plain1"], speech["plain2"]] * 4))  # two windows
    assert clips[-1].duration_s > 30
    batched = transformers_asr(tiny_random_whisper, batch_seconds=1000.0, temperatures=NO_FALLBACK).extract(clips)
    single = transformers_asr(tiny_random_whisper, batch_seconds=0.1, temperatures=NO_FALLBACK)
    one_by_one = [single.extract([clip])[0] for clip in clips]
    for clip, section in zip(clips, batched):
        check_asr_section(section, clip, "transformers")
        assert section.values["words"], "the random model emits text tokens: words expected"
        text = section.values["agent_response"]
        # every character of the transcript is in exactly one word, in order
        assert "".join(text.split()) == "".join(w["word"].replace(" ", "") for w in section.values["words"])
    assert [s.values for s in batched] == [s.values for s in one_by_one]
    # the model reads the audio: different clips, different transcripts (so an order mix-up would show)
    assert len({s.values["agent_response"] for s in batched}) > 1


def test_transformers_backend_falls_back_the_same_way_batched_or_alone(tiny_random_whisper, speech):
    # Random weights: an average log-probability far below -1 at every temperature, so the fallback samples
    # at 0.2, keeps the most probable result, and the transcript is marked unreliable.
    clips = [clip_of(speech["plain0"]), clip_of(speech["wpm220"])]
    fallback = {"temperatures": (0.0, 0.2), "beam_size": 1}
    batched = transformers_asr(tiny_random_whisper, batch_seconds=1000.0, **fallback).extract(clips)
    alone = transformers_asr(tiny_random_whisper, batch_seconds=0.1, **fallback).extract(clips[:1])
    assert batched[0].values == alone[0].values
    for clip, section in zip(clips, batched):
        check_asr_section(section, clip, "transformers")
        quality = section.values["transcript_quality"]
        # None passed: the most probable attempt is kept, at its own temperature, and the reason says how far
        # the fallback went.
        assert quality["temperature"] in (0.0, 0.2) and quality["avg_logprob"] < -1
        assert "after decoding at temperatures up to 0.2" in quality["reason"]
        assert quality["reliable"] is False and "low recogniser confidence" in quality["reason"]


def test_transformers_backend_detects_language_and_gates_silence(tiny_random_whisper, speech):
    extractor = transformers_asr(tiny_random_whisper, language=None, beam_size=2, temperatures=NO_FALLBACK)
    assert extractor.model().source == str(tiny_random_whisper)
    speech_clip = clip_of(speech["plain0"])
    silence = Clip("silence", Audio(np.zeros(2 * RATE, dtype=np.float32), RATE))
    spoken, silent = extractor.extract([speech_clip, silence])
    check_asr_section(spoken, speech_clip, "transformers")
    languages = set(extractor._backend.id_of_language)
    assert spoken.values["asr"]["language"] in languages
    assert silent.values["agent_response"] == "" and "no speech" in silent.values["asr"]["reason"]


def test_transformers_backend_english_only_model(tmp_path, speech):
    directory = build_tiny_whisper(tmp_path / "tiny-en", multilingual=False, decoder_layers=1)
    clip = clip_of(speech["plain5"])
    (section,) = transformers_asr(directory, temperatures=NO_FALLBACK).extract([clip])
    check_asr_section(section, clip, "transformers")
    assert section.values["asr"]["language"] == "en"
    with pytest.raises(ExtractorUnavailable, match="asr.language"):
        transformers_asr(directory, language="de")


def test_transformers_backend_on_real_weights_agrees_with_faster_whisper(tmp_path, speech):
    """The same tiny.en through both backends: same words, word times within 0.1 s.

    faster-whisper aligns words inside CTranslate2; the transformers backend with its
    own cross-attention DTW. Agreement checks the alignment on real speech.
    """
    directory = build_tiny_whisper_en_from_package(tmp_path / "tiny.en")
    clips = [clip_of(speech[f"plain{i}"]) for i in (1, 2, 4)]
    ours = transformers_asr(directory, batch_seconds=1000.0).extract(clips)
    # faster-whisper with Whisper's 30 s input as well: a shorter one moves the last word's end by up to 0.2 s
    reference = AsrExtractor(AsrConfig(encoder_padding_s=None)).extract(clips)
    hypotheses = [normalise(s.values["agent_response"]) for s in ours]
    assert jiwer.wer([normalise(SENTENCES[i]) for i in (1, 2, 4)], hypotheses) <= 0.2, hypotheses
    for clip, section, expected in zip(clips, ours, reference):
        check_asr_section(section, clip, "transformers")
        matched = 0
        for word, other in zip(section.values["words"], expected.values["words"]):
            if normalise(word["word"]) == normalise(other["word"]):
                matched += 1
                assert abs(word["start"] - other["start"]) <= 0.1, (word, other)
                assert abs(word["end"] - other["end"]) <= 0.1, (word, other)
        assert matched >= 0.8 * len(expected.values["words"])


def test_the_judge_is_shown_an_unreliable_transcript_as_such():
    from trace_eval.judge.prompts import Case, blueprint_view, load_prompt

    loop = "repetition loop: compression ratio 9.90 above 2.4 after decoding at temperatures up to 1"
    doubtful = {
        "agent_response": "Children kill it, kill it",
        "transcript_quality": {"reliable": False, "reason": loop},
    }
    trusted = {"agent_response": "Children, keep it down.", "transcript_quality": {"reliable": True, "reason": None}}
    for name in ("trace", "transcript"):
        prompt = load_prompt(name)
        assert prompt.version >= 3
        views = tuple(blueprint_view(b, prompt.blueprint_keys) for b in (doubtful, trusted))
        user = prompt.render(Case("p", None, "Tell the children to be quiet.", views))[1]["content"]
        assert loop in user, user
        assert user.count("unreliable transcript") <= 1 and user.count(loop) == 1


def test_fallback_temperatures_are_a_setting():
    assert AsrExtractor(AsrConfig()).config.temperatures == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert AsrExtractor(AsrConfig(temperatures="0,0.5")).config.temperatures == (0.0, 0.5)  # as --set gives it
    assert AsrExtractor(AsrConfig(temperatures="0,0.5")).fingerprint() != AsrExtractor(AsrConfig()).fingerprint()
    with pytest.raises(ValueError, match="rising temperatures"):
        AsrExtractor(AsrConfig(temperatures="0.4,0.2"))


def test_words_of_a_language_written_without_spaces_are_its_characters(tiny_random_whisper):
    """As Whisper's and faster-whisper's tokenizers split zh, ja, th, lo, my, yue: word timings per character."""
    from transformers import WhisperTokenizer

    tokenizer = WhisperTokenizer.from_pretrained(tiny_random_whisper)

    def decode(tokens):
        return tokenizer.decode(tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    tokens = tokenizer.encode("我们明天去北京。", add_special_tokens=False)
    words, word_tokens = split_words(decode, tokens, "zh")
    assert "".join(words) == "我们明天去北京。" and len(words) >= 7
    assert [t for group in word_tokens for t in group] == tokens
    assert split_words(decode, tokens, "en")[0] == ["我们明天去北京。"]  # split by spaces: one word
