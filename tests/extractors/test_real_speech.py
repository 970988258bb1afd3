"""Stage 1 on real human speech with known transcripts, not only on espeak-ng.

Two Debian packages hold it: LibriVox read speech at 16 kHz (pocketsphinx-testdata,
five sentences of Sense and Sensibility) and the Asterisk telephone prompts at
8 kHz (asterisk-core-sounds-en-wav, transcripts in asterisk-core-sounds-en). A
fixed selection keeps the run short. On this clean read speech the CPU profile
(faster-whisper, tiny.en) must transcribe well, trust its transcripts, give
human speaking rates and pitch, and score DNSMOS exactly as the reference does.
"""

from __future__ import annotations

import pytest
from recorded_speech import MissingSpeech, Recording, asterisk, error_rate, fold, librivox

from extractors import Clip
from extractors.asr import AsrConfig, AsrExtractor
from extractors.dnsmos import SAMPLE_RATE as DNSMOS_RATE
from extractors.dnsmos import Config as DnsmosConfig
from extractors.dnsmos import DnsmosExtractor
from extractors.pitch import PitchExtractor
from extractors.rate import RateExtractor

# Measured word error rates of the CPU profile (scripts/real_speech_wer.py): 4.2% LibriVox, 3.3% Asterisk.
MAX_WER = {"librivox": 0.10, "asterisk": 0.10}


def normalise(text: str) -> str:
    return fold(text, "en")


@pytest.fixture(scope="module")
def recordings() -> list[Recording]:
    try:
        found = librivox() + asterisk()
    except MissingSpeech as e:
        pytest.fail(str(e))
    assert len([r for r in found if r.corpus == "librivox"]) == 5
    return found


@pytest.fixture(scope="module")
def transcribed(recordings) -> list[tuple[Recording, dict]]:
    """Each recording with its blueprint so far: duration and the asr section."""
    asr = AsrExtractor(AsrConfig(), device="cpu")
    sections = asr.extract([r.clip for r in recordings])
    return [(r, {"duration_s": r.clip.duration_s, **s.values}) for r, s in zip(recordings, sections)]


def word_error_rates(transcribed) -> dict[str, float]:
    return {
        corpus: error_rate([(r.reference, b["agent_response"]) for r, b in transcribed if r.corpus == corpus], "en")
        for corpus in MAX_WER
    }


def test_the_asterisk_prompts_are_8_khz_telephone_audio(recordings):
    assert {r.clip.audio.sample_rate for r in recordings if r.corpus == "asterisk"} == {8000}
    assert {r.clip.audio.sample_rate for r in recordings if r.corpus == "librivox"} == {16000}


def test_word_error_rate_of_the_cpu_profile(transcribed):
    rates = word_error_rates(transcribed)
    misheard = [
        (r.reference, b["agent_response"])
        for r, b in transcribed
        if normalise(r.reference) != normalise(b["agent_response"])
    ]
    for corpus, bound in MAX_WER.items():
        assert rates[corpus] <= bound, (rates, misheard)


def test_clean_read_speech_is_trusted_and_spoken_at_a_human_rate(transcribed):
    for recording, blueprint in transcribed:
        quality = blueprint["transcript_quality"]
        assert quality["reliable"] is True, (recording.name, blueprint["agent_response"], quality)
        assert quality["temperature"] == 0.0 and quality["compression_ratio"] < 2.4
        rate = RateExtractor().extract_one(Clip(recording.name, None, blueprint))
        wpm = rate.values["agent_audio_properties"]["Speech_Rate_WPM"]
        assert wpm is not None and 60 <= wpm <= 300, (recording.name, wpm, rate.null_reasons)


def test_dnsmos_equals_the_reference_implementation(recordings):
    from speechmos import dnsmos

    extractor = DnsmosExtractor(DnsmosConfig(num_threads=1), "cpu")
    extractor.load()
    by_corpus = {corpus: [r for r in recordings if r.corpus == corpus] for corpus in MAX_WER}
    chosen = by_corpus["librivox"][:2] + by_corpus["asterisk"][:2]
    samples = [r.clip.samples(DNSMOS_RATE) for r in chosen]
    for recording, audio, got in zip(chosen, samples, extractor.scorer.score(samples)):
        want = dnsmos.run(audio, DNSMOS_RATE, model_type="dnsmos_personalized")
        assert got.signal == pytest.approx(want["sig_mos"], abs=1e-4), recording.name
        assert got.background == pytest.approx(want["bak_mos"], abs=1e-4), recording.name
        assert got.overall == pytest.approx(want["ovrl_mos"], abs=1e-4), recording.name
        assert got.p808 == pytest.approx(want["p808_mos"], abs=1e-4), recording.name


def test_pitch_is_in_the_human_range(recordings):
    pitch = PitchExtractor()
    for recording in recordings:
        values = pitch.extract_one(recording.clip).values["agent_audio_properties"]
        assert 75 <= values["Mean_Pitch_Hz"] <= 300, (recording.name, values["Mean_Pitch_Hz"])
        assert 0 < values["Std_Dev_Pitch_Hz"] < 100, (recording.name, values["Std_Dev_Pitch_Hz"])
