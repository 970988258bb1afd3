"""Each probe changes its one cue and nothing else, deterministically, on real read speech (LibriVox)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyloudnorm
import pytest

from trace_eval.audio import load_audio
from trace_eval.audit.probes import MAX_PEAK, PROBES, ClipWords, WordChoice, probe_seed, speech_power

SPEECH = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0930.wav")
pytestmark = pytest.mark.skipif(not SPEECH.is_file(), reason="pocketsphinx-testdata is not installed")


@pytest.fixture(scope="module")
def speech() -> tuple[np.ndarray, int]:
    audio = load_audio(SPEECH)
    return audio.samples, audio.sample_rate


# Word times of SPEECH ("he might even have been made amiable himself") as a recogniser gives them.
WORDS = [
    {"word": " He", "start": 0.20, "end": 0.34},
    {"word": " might", "start": 0.34, "end": 0.60},
    {"word": " even", "start": 0.60, "end": 0.86},
    {"word": " have", "start": 0.86, "end": 1.00},
    {"word": " been", "start": 1.00, "end": 1.10},
    {"word": " made", "start": 1.10, "end": 1.40},
    {"word": " amiable", "start": 1.40, "end": 1.90},
    {"word": " himself.", "start": 1.90, "end": 2.50},
]
WORD_PROBES = {"emphasis-asked": "Say it, stressing 'amiable'.", "emphasis-unasked": "Read it aloud."}


def _make(name: str, samples: np.ndarray, rate: int, words: list[dict] = WORDS):
    probe, seed = PROBES[name], probe_seed("0" * 64, name)
    if probe.choose is None:
        changed = probe.make(samples, rate, seed)
    else:
        choice = probe.choose(ClipWords(words, WORD_PROBES[name]), seed)
        assert isinstance(choice, WordChoice), choice
        changed = probe.make(samples, rate, seed, choice)
    reference = samples if changed.reference is None else changed.reference
    return changed, reference


def _lufs(samples: np.ndarray, rate: int) -> float:
    # Measured as extractors/loudness.py measures it: pyloudnorm's BS.1770 meter over the whole clip.
    return float(pyloudnorm.Meter(rate).integrated_loudness(samples.astype(np.float64)))


def _as_written(samples: np.ndarray) -> np.ndarray:
    """The samples as the audit bench stores them (16-bit PCM)."""
    return np.round(np.clip(samples, -1, 1) * 32767) / 32767


def _median_pitch(samples: np.ndarray, rate: int) -> float:
    import parselmouth

    pitch = parselmouth.Sound(samples.astype(np.float64), rate).to_pitch(pitch_floor=60, pitch_ceiling=400)
    values = pitch.selected_array["frequency"]
    return float(np.median(values[values > 0]))


@pytest.mark.parametrize("gain", [3, 6, -3, -6])
def test_loudness_changes_by_the_stated_decibels_and_never_clips(speech, gain):
    samples, rate = speech
    for level in (1.0, 0.25):  # near full scale (the +dB copies need headroom) and with room to spare
        changed, reference = _make(f"loudness{gain:+d}dB", samples * level, rate)
        copy, ref = _as_written(changed.samples), _as_written(reference)
        assert abs(_lufs(copy, rate) - _lufs(ref, rate) - gain) <= 0.2
        assert np.max(np.abs(changed.samples)) <= MAX_PEAK + 1e-6
        assert len(copy) == len(ref)
        if changed.reference is not None:  # the lowering is reported, and only where the copy needed room
            assert gain > 0 and changed.notes["clipping_avoided"] and changed.notes["reference_gain_db"] < 0
            assert np.max(np.abs(samples * level)) * 10 ** (gain / 20) > MAX_PEAK
    quiet, _ = _make(f"loudness{gain:+d}dB", samples * 0.25, rate)
    assert quiet.reference is None  # room to spare: the original itself is the reference


@pytest.mark.parametrize("seconds", [1, 3])
@pytest.mark.parametrize("where", ["before", "after"])
def test_padding_adds_exactly_the_stated_silence(speech, seconds, where):
    samples, rate = speech
    changed, reference = _make(f"silence-{where}-{seconds}s", samples, rate)
    assert changed.reference is None
    added = seconds * rate
    assert len(changed.samples) == len(samples) + added
    silence, kept = (
        (changed.samples[:added], changed.samples[added:])
        if where == "before"
        else (changed.samples[-added:], changed.samples[:-added])
    )
    assert not np.any(silence)
    assert np.array_equal(kept, samples)


def test_repeat_says_the_answer_twice_and_half_keeps_its_first_half(speech):
    samples, rate = speech
    repeated, _ = _make("repeat", samples, rate)
    assert np.array_equal(repeated.samples, np.concatenate([samples, samples]))
    half, _ = _make("first-half", samples, rate)
    n = len(samples) // 2
    assert len(half.samples) == n
    fade = int(0.01 * rate)
    assert np.array_equal(half.samples[:-fade], samples[: n - fade])  # untouched up to the 10 ms fade
    assert half.samples[-1] == 0.0


@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_tempo_changes_duration_and_keeps_pitch_within_a_semitone(speech, factor):
    samples, rate = speech
    changed, _ = _make(f"tempo-{factor}x", samples, rate)
    assert len(changed.samples) / len(samples) == pytest.approx(1 / factor, rel=0.01)
    shift = 12 * np.log2(_median_pitch(changed.samples, rate) / _median_pitch(samples, rate))
    assert abs(shift) < 1.0
    assert abs(_lufs(changed.samples, rate) - _lufs(samples, rate)) < 0.2  # the level stays where it was


def test_noise_is_at_the_stated_snr_and_seeded(speech):
    samples, rate = speech
    changed, _ = _make("noise-20dB", samples, rate)
    noise = changed.samples.astype(np.float64) - samples
    snr = 10 * np.log10(speech_power(samples, rate) / np.mean(noise**2))
    assert snr == pytest.approx(20.0, abs=0.2)
    again, _ = _make("noise-20dB", samples, rate)
    assert np.array_equal(again.samples, changed.samples)  # same audio, same probe: same copy
    other = PROBES["noise-20dB"].make(samples, rate, probe_seed("1" * 64, "noise-20dB"))
    assert not np.array_equal(other.samples, changed.samples)  # another clip gets other noise


def test_every_probe_is_deterministic(speech):
    samples, rate = speech
    short = samples[: rate * 2]
    for name in PROBES:
        a, _ = _make(name, short, rate)
        b, _ = _make(name, short, rate)
        assert np.array_equal(a.samples, b.samples), name


def _level_db(samples: np.ndarray, rate: int, start: float, end: float) -> float:
    span = samples[int(start * rate) : int(end * rate)].astype(np.float64)
    return float(10 * np.log10(np.mean(span**2)))


def test_emphasis_makes_the_asked_word_louder_in_the_reference_and_another_in_the_copy(speech):
    samples, rate = speech
    changed, reference = _make("emphasis-asked", samples, rate)
    assert changed.notes["reference_word"] == "amiable" and changed.notes["copy_word"] != "amiable"
    copy_word = next(w for w in WORDS if w["word"].strip() == changed.notes["copy_word"])
    asked = WORDS[6]
    # Inside each word (clear of its 10 ms fades) 6 dB above the other side; outside both words, the same samples.
    for word, louder, quieter in ((asked, reference, changed.samples), (copy_word, changed.samples, reference)):
        inner = (word["start"] + 0.011, word["end"] - 0.011)
        assert _level_db(louder, rate, *inner) - _level_db(quieter, rate, *inner) == pytest.approx(6.0, abs=0.01)
    outside = np.ones(len(samples), dtype=bool)
    for word in (asked, copy_word):
        outside[int(word["start"] * rate) : int(word["end"] * rate) + 1] = False
    assert np.allclose(changed.samples[outside], reference[outside], atol=1e-7)
    assert np.max(np.abs(changed.samples)) <= MAX_PEAK + 1e-6 and np.max(np.abs(reference)) <= MAX_PEAK + 1e-6


ASKED_ELSEWHERE = "the instruction asks for emphasis (the emphasis-asked probe's)"


@pytest.mark.parametrize(
    "name, clip, why",
    [
        ("emphasis-asked", ClipWords(WORDS, "Read it aloud."), "the instruction asks to stress no word"),
        ("emphasis-asked", ClipWords(WORDS, "Stress 'money'."), "“money” is not among the clip's recognised words"),
        (
            "emphasis-asked",
            ClipWords(None, "Stress 'even'.", "no blueprint of the answer"),
            "no blueprint of the answer",
        ),
        ("emphasis-unasked", ClipWords(WORDS, "Say it, stressing 'amiable'."), ASKED_ELSEWHERE),
        ("emphasis-unasked", ClipWords(WORDS, "Read it with emphasis on a different word."), ASKED_ELSEWHERE),
        ("emphasis-unasked", ClipWords(WORDS[3:5], "Read it."), "fewer than two different words long enough to stress"),
    ],
)
def test_a_word_probe_says_why_a_clip_has_no_word_to_change(name, clip, why):
    assert PROBES[name].choose(clip, 0) == why
