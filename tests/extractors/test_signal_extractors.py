"""Pitch, loudness and voicing extractors on speech and signals whose answers are known.

Speech comes from espeak-ng + sox with chosen rate, pitch and gain; pitch accuracy is
checked against synthetic harmonic signals at exact F0.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from extractors import REGISTRY, Clip, Section
from trace_eval.audio import Audio, load_audio
from trace_eval.synth import Voice, speak

RATE = 16000
SENTENCE = "The quick brown fox jumps over the lazy dog."
SECOND_SENTENCE = "Then it runs far away into the green forest."
SIGNAL_EXTRACTORS = ("pitch", "loudness", "voicing")

# -- helpers ------------------------------------------------------------------------------------


def run(name: str, audio: Audio, **config) -> Section:
    extractor_cls = REGISTRY[name]
    extractor = extractor_cls(extractor_cls.Config(**config))
    section = extractor.extract_one(Clip(sha256="x", audio=audio))
    check_section(name, section)
    return section


def value(section: Section, dotted: str):
    node = section.values
    for part in dotted.split("."):
        node = node[part]
    return node


def check_section(name: str, section: Section) -> None:
    """The contract every section keeps: all owned keys present, null exactly when a reason is given, valid JSON."""
    outputs = REGISTRY[name].outputs
    for key in outputs:
        if value(section, key) is None:
            assert section.null_reasons.get(key), f"{key} is null without a reason"
        else:
            assert key not in section.null_reasons, f"{key} has a value and a null reason"
    assert set(section.null_reasons) <= set(outputs)
    json.dumps(section.values, allow_nan=False)
    json.dumps(section.null_reasons, allow_nan=False)


def harmonic(
    f0_hz: float,
    seconds: float = 2.0,
    rate: int = RATE,
    end_f0_hz: float | None = None,
    gain_db_from: float = -12.0,
    gain_db_to: float = -12.0,
) -> Audio:
    """A voice-like harmonic signal (1/k partials up to 7 kHz) with F0 gliding linearly to end_f0_hz."""
    n = int(seconds * rate)
    f0 = np.linspace(f0_hz, end_f0_hz or f0_hz, n)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    top = min(7000.0, rate / 2 * 0.9)
    signal = sum(np.sin(k * phase) / k for k in range(1, int(top / max(f0_hz, end_f0_hz or f0_hz)) + 1))
    signal = signal / np.max(np.abs(signal)) * 10 ** (np.linspace(gain_db_from, gain_db_to, n) / 20)
    return Audio(signal.astype(np.float32), rate)


def sox_pitch(src: Path, dst: Path, cents: int) -> Path:
    subprocess.run(["sox", str(src), str(dst), "pitch", str(cents)], check=True, capture_output=True)
    return dst


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> dict[str, Audio]:
    """Every spoken clip the tests use, made once (speak() says what to install when espeak-ng is missing)."""
    folder = tmp_path_factory.mktemp("speech")
    voices = {
        "plain": Voice(),
        "slow": Voice(wpm=100),
        "fast": Voice(wpm=240),
        "low_setting": Voice(pitch=20),
        "high_setting": Voice(pitch=80),
        "quiet": Voice(gain_db=-20),
        "female": Voice(voice="en-us+f3", pitch=80),
        "rate_8k": Voice(sample_rate=8000),
        "rate_48k": Voice(sample_rate=48000),
    }
    paths = {name: speak(SENTENCE, folder / f"{name}.wav", voice) for name, voice in voices.items()}
    paths["second"] = speak(SECOND_SENTENCE, folder / "second.wav")
    paths["deep"] = sox_pitch(paths["plain"], folder / "deep.wav", -800)
    paths["child"] = sox_pitch(paths["female"], folder / "child.wav", 1000)
    clips = {name: load_audio(path) for name, path in paths.items()}
    gap = np.zeros(int(0.8 * RATE), dtype=np.float32)
    clips["with_pause"] = Audio(np.concatenate([clips["plain"].samples, gap, clips["second"].samples]), RATE)
    return clips


def mean_pitch(audio: Audio) -> float:
    return value(run("pitch", audio), "agent_audio_properties.Mean_Pitch_Hz")


# -- contract ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SIGNAL_EXTRACTORS)
def test_registered_as_per_clip_extractors_owning_their_keys(name):
    cls = REGISTRY[name]
    assert cls.batched is False and cls.uses_gpu is False
    group = "agent_voicing" if name == "voicing" else "agent_audio_properties"
    assert cls.outputs and all(key.startswith(group + ".") for key in cls.outputs)
    assert REGISTRY[name]().fingerprint() == REGISTRY[name]().fingerprint()


def test_config_changes_fingerprint():
    default = REGISTRY["voicing"]()
    stricter = REGISTRY["voicing"](REGISTRY["voicing"].Config(min_pause_s=0.5))
    assert default.fingerprint() != stricter.fingerprint()


# -- pitch -------------------------------------------------------------------------------------


@pytest.mark.parametrize("f0_hz", [70.0, 120.0, 220.0, 450.0, 650.0])
def test_pitch_of_harmonic_signal_from_deep_male_to_child(f0_hz):
    section = run("pitch", harmonic(f0_hz))
    props = section.values["agent_audio_properties"]
    assert props["Mean_Pitch_Hz"] == pytest.approx(f0_hz, rel=0.03)
    assert props["Std_Dev_Pitch_Hz"] < 0.03 * f0_hz
    assert props["Pitch_Range_Semitones"] < 0.5


def test_pitch_contour_and_range_follow_a_glide():
    # One octave up over 2 s: the 5th..95th percentile range is 0.9 octave, about 10.8 semitones.
    props = run("pitch", harmonic(100.0, end_f0_hz=200.0)).values["agent_audio_properties"]
    contour = props["Full_Pitch_Contour_Hz"]
    assert len(contour) == 20 and all(point is not None for point in contour)
    assert all(later > earlier for earlier, later in zip(contour, contour[1:]))
    assert contour[0] == pytest.approx(102.5, rel=0.05) and contour[-1] == pytest.approx(197.5, rel=0.05)
    assert props["Pitch_Range_Semitones"] == pytest.approx(12 * np.log2(195 / 105), abs=0.7)


def test_higher_espeak_pitch_setting_gives_higher_mean_pitch(speech):
    assert mean_pitch(speech["high_setting"]) > 1.2 * mean_pitch(speech["low_setting"])


def test_deep_voice_below_70_hz_is_tracked(speech):
    expected = mean_pitch(speech["plain"]) * 2 ** (-800 / 1200)
    assert expected < 70
    assert mean_pitch(speech["deep"]) == pytest.approx(expected, rel=0.15)


def test_child_like_voice_above_400_hz_is_tracked(speech):
    expected = mean_pitch(speech["female"]) * 2 ** (1000 / 1200)
    assert expected > 400
    assert mean_pitch(speech["child"]) == pytest.approx(expected, rel=0.15)


def test_pitch_contour_has_20_points_null_only_where_unvoiced(speech):
    props = run("pitch", speech["with_pause"]).values["agent_audio_properties"]
    contour = props["Full_Pitch_Contour_Hz"]
    assert len(contour) == 20
    voiced_points = [point for point in contour if point is not None]
    assert len(voiced_points) >= 12
    assert None in contour  # the 0.8 s pause in the middle
    assert all(50 < point < 200 for point in voiced_points)


def test_pitch_does_not_depend_on_gain(speech):
    assert mean_pitch(speech["quiet"]) == pytest.approx(mean_pitch(speech["plain"]), rel=0.01)


# -- loudness ----------------------------------------------------------------------------------


def loudness(audio: Audio) -> dict:
    return run("loudness", audio).values["agent_audio_properties"]


def test_20_db_gain_change_moves_integrated_loudness_by_20_lu(speech):
    loud, quiet = loudness(speech["plain"]), loudness(speech["quiet"])
    assert loud["Integrated_Loudness_LUFS"] - quiet["Integrated_Loudness_LUFS"] == pytest.approx(20.0, abs=1.0)
    assert loud["Std_Dev_Loudness_LUFS"] == pytest.approx(quiet["Std_Dev_Loudness_LUFS"], abs=0.3)
    for a, b in zip(loud["Full_Loudness_Contour_LUFS"], quiet["Full_Loudness_Contour_LUFS"]):
        if a is not None and b is not None:
            assert a - b == pytest.approx(20.0, abs=1.0)


def test_loudness_of_speech_is_plausible(speech):
    props = loudness(speech["plain"])
    assert -35 < props["Integrated_Loudness_LUFS"] < -10
    assert 0 < props["Std_Dev_Loudness_LUFS"] < 10
    assert len(props["Full_Loudness_Contour_LUFS"]) == 20


def test_loudness_contour_follows_a_crescendo():
    props = loudness(harmonic(200.0, seconds=4.0, gain_db_from=-40.0, gain_db_to=-6.0))
    contour = props["Full_Loudness_Contour_LUFS"]
    assert all(point is not None for point in contour)
    assert contour[-1] - contour[0] > 25
    assert all(later > earlier - 0.5 for earlier, later in zip(contour, contour[1:]))
    assert props["Std_Dev_Loudness_LUFS"] > 3


def test_loudness_is_pyloudnorms_measured_a_chunk_at_a_time(speech, monkeypatch):
    """Filtered and summed a chunk at a time, a clip gets pyloudnorm's values on the whole of it, to the bit."""
    import pyloudnorm

    import extractors.loudness as module

    clip = speech["with_pause"].samples
    meter = pyloudnorm.Meter(RATE, block_size=0.4, overlap=0.75)
    integrated = meter.integrated_loudness(clip.astype(np.float64))
    for chunk in (len(clip), 4321):  # one chunk; chunks that end inside gating blocks
        monkeypatch.setattr(module, "_CHUNK_SAMPLES", chunk)
        got, blocks = module.gated_loudness(module.block_powers(clip, RATE, 0.4, 0.75))
        assert got == integrated and np.array_equal(blocks, meter.blockwise_loudness)


def test_steady_tone_has_almost_no_loudness_spread():
    assert loudness(harmonic(200.0, seconds=3.0))["Std_Dev_Loudness_LUFS"] < 0.2


# -- voicing -----------------------------------------------------------------------------------


def voicing(audio: Audio) -> dict:
    return run("voicing", audio).values["agent_voicing"]


def test_faster_speech_has_higher_syllable_rate(speech):
    slow, fast = voicing(speech["slow"]), voicing(speech["fast"])
    assert fast["Syllable_Rate_Per_S"] > 1.5 * slow["Syllable_Rate_Per_S"]


def test_syllable_rate_of_ordinary_speech_is_plausible(speech):
    # 11 syllables; espeak-ng at 160 wpm speaks about 4-5 syllables per second.
    assert 3.0 < voicing(speech["plain"])["Syllable_Rate_Per_S"] < 6.5


def test_inserted_pause_is_counted_and_timed(speech):
    single, joined = voicing(speech["plain"]), voicing(speech["with_pause"])
    assert single["Pause_Count"] == 0 and single["Longest_Pause_S"] == 0.0
    assert joined["Pause_Count"] >= 1
    assert 0.8 <= joined["Longest_Pause_S"] <= 1.6  # the gap plus espeak's own trailing and leading silence
    assert joined["Pause_Total_S"] >= joined["Longest_Pause_S"]
    assert 0.3 < joined["Voiced_Fraction"] < single["Voiced_Fraction"] < 1.0


def test_longer_minimum_pause_ignores_the_gap(speech):
    section = run("voicing", speech["with_pause"], min_pause_s=3.0)
    assert section.values["agent_voicing"]["Pause_Count"] == 0


def test_voicing_does_not_depend_on_gain(speech):
    loud, quiet = voicing(speech["with_pause"]), voicing(Audio(speech["with_pause"].samples * np.float32(0.1), RATE))
    assert quiet["Pause_Count"] == loud["Pause_Count"]
    assert quiet["Longest_Pause_S"] == pytest.approx(loud["Longest_Pause_S"], abs=0.02)
    assert quiet["Syllable_Rate_Per_S"] == pytest.approx(loud["Syllable_Rate_Per_S"], rel=0.02)


def test_pause_in_noisy_speech_is_still_found(speech):
    noise = np.random.default_rng(0).standard_normal(len(speech["with_pause"].samples)) * 10 ** (-40 / 20)
    noisy = Audio((speech["with_pause"].samples + noise).astype(np.float32), RATE)
    assert voicing(noisy)["Pause_Count"] >= 1


# -- edge cases: no crash, nulls with reasons, never NaN ----------------------------------------


def edge_clip(kind: str, speech: dict[str, Audio]) -> Audio:
    if kind == "0.1 s of speech":
        return Audio(speech["plain"].samples[RATE // 2 : RATE // 2 + RATE // 10].copy(), RATE)
    if kind == "3 s digital silence":
        return Audio(np.zeros(3 * RATE, dtype=np.float32), RATE)
    if kind == "white noise":
        return Audio((np.random.default_rng(0).standard_normal(3 * RATE) * 0.1).astype(np.float32), RATE)
    return speech[kind]


EDGE_KINDS = ("0.1 s of speech", "3 s digital silence", "white noise", "rate_8k", "rate_48k")


@pytest.mark.parametrize("kind", EDGE_KINDS)
@pytest.mark.parametrize("name", SIGNAL_EXTRACTORS)
def test_edge_clips_give_valid_sections(name, kind, speech):
    run(name, edge_clip(kind, speech))  # run() checks keys, null reasons and JSON validity


def test_nothing_measurable_in_silence(speech):
    silence = edge_clip("3 s digital silence", speech)
    for name in SIGNAL_EXTRACTORS:
        section = run(name, silence)
        nulls = [key for key in REGISTRY[name].outputs if value(section, key) is None]
        expected = [k for k in REGISTRY[name].outputs if not k.endswith("Voiced_Fraction")]
        assert nulls == expected, name
    assert voicing(silence)["Voiced_Fraction"] == 0.0


def test_noise_has_loudness_but_no_pitch_or_pauses(speech):
    noise = edge_clip("white noise", speech)
    assert all(v is None for v in run("pitch", noise).values["agent_audio_properties"].values())
    assert loudness(noise)["Integrated_Loudness_LUFS"] == pytest.approx(-17.3, abs=2.0)
    props = voicing(noise)
    assert props["Voiced_Fraction"] < 0.05 and props["Pause_Count"] is None and props["Syllable_Rate_Per_S"] is None


def test_clip_shorter_than_gating_block_has_null_loudness_with_reason(speech):
    section = run("loudness", edge_clip("0.1 s of speech", speech))
    assert all(v is None for v in section.values["agent_audio_properties"].values())
    assert "shorter than the 0.4 s" in section.null_reasons["agent_audio_properties.Integrated_Loudness_LUFS"]


@pytest.mark.parametrize("kind", ["rate_8k", "rate_48k"])
def test_other_sample_rates_agree_with_16k(kind, speech):
    plain, other = speech["plain"], speech[kind]
    assert mean_pitch(other) == pytest.approx(mean_pitch(plain), rel=0.03)
    assert loudness(other)["Integrated_Loudness_LUFS"] == pytest.approx(
        loudness(plain)["Integrated_Loudness_LUFS"], abs=1.5
    )
    assert voicing(other)["Syllable_Rate_Per_S"] == pytest.approx(voicing(plain)["Syllable_Rate_Per_S"], rel=0.15)


def test_ten_minute_clip(speech):
    unit = speech["with_pause"].samples
    repeats = int(np.ceil(600 * RATE / len(unit)))
    long_clip = Audio(np.tile(unit, repeats)[: 600 * RATE], RATE)
    pitch_contour = run("pitch", long_clip).values["agent_audio_properties"]["Full_Pitch_Contour_Hz"]
    assert len(pitch_contour) == 20 and None not in pitch_contour  # every 30 s segment holds speech
    contour = loudness(long_clip)["Full_Loudness_Contour_LUFS"]
    assert len(contour) == 20 and None not in contour
    # Each repeat holds the 0.8 s gap, and the joins add one more pause each.
    assert voicing(long_clip)["Pause_Count"] >= 2 * repeats - 3


def test_a_long_clip_is_analysed_a_window_at_a_time_as_a_whole(speech, monkeypatch):
    """Pitch and voicing in windows (here 12 s) agree with one analysis of the whole clip, also where
    speech is too quiet against the clip's peak for Praat to call it voiced (judged against the whole
    clip's peak, not the window's)."""
    import extractors.pitch as module

    unit = speech["with_pause"].samples
    long_clip = Audio(np.concatenate([np.tile(unit, 4), 0.02 * np.tile(unit, 4)]), RATE)  # 40 s, then -34 dB
    whole = {name: run(name, long_clip).values for name in ("pitch", "voicing")}
    monkeypatch.setattr(module, "WINDOW_S", 12.0)
    windowed = {name: run(name, long_clip).values for name in ("pitch", "voicing")}
    pitch, pitch_whole = windowed["pitch"]["agent_audio_properties"], whole["pitch"]["agent_audio_properties"]
    assert pitch["Mean_Pitch_Hz"] == pytest.approx(pitch_whole["Mean_Pitch_Hz"], abs=0.5)
    assert pitch["Full_Pitch_Contour_Hz"][10:] == [None] * 10  # the quiet half is silence against the clip's peak
    voicing, voicing_whole = windowed["voicing"]["agent_voicing"], whole["voicing"]["agent_voicing"]
    assert voicing["Voiced_Fraction"] == pytest.approx(voicing_whole["Voiced_Fraction"], abs=0.01)
    assert abs(voicing["Pause_Count"] - voicing_whole["Pause_Count"]) <= 1
    assert voicing["Syllable_Rate_Per_S"] == pytest.approx(voicing_whole["Syllable_Rate_Per_S"], rel=0.03)


def test_click_before_leading_silence_is_not_speech(speech):
    click = np.zeros(int(1.2 * RATE), dtype=np.float32)
    click[RATE // 10 : RATE // 10 + RATE // 20] = 0.5  # a 50 ms burst, then 1 s of silence
    clip = Audio(np.concatenate([click, speech["plain"].samples]), RATE)
    assert voicing(clip)["Pause_Count"] == 0
