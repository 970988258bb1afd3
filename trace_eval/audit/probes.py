"""The probes of a bias audit: each makes a copy of a response that changes one surface cue.

A probe is a pure function of the samples, their rate and a seed: the same audio gives the same copy,
byte for byte. It returns the changed copy and the reference it is to be judged against: the original
itself, except where the change needs room the original lacks (a louder copy that would clip), where the
reference is the original lowered by the missing headroom, so the two still differ by the stated cue only.

What listeners do with each change (the `Expectation`) is part of the probe, so the report can say whether a
judge is in line with them:

- loudness: SpeechJudgeAudit's listeners preferred the copy made 6 dB louder 61% of the time (ties half).
  No published figure for 3 dB here; a judge is in line anywhere from indifference to that lean, within a
  tolerance of 0.1, and mirrored for quieter copies (a derived figure, said so in the report).
- a large drop (-20 dB): far past that lean, the quieter of two otherwise equal answers is the worse one: a
  clear loss on Voice Quality (at most 0.3), no win overall.
- silence padding, tempo 0.9x/1.1x with pitch kept: a listener notices nothing that matters (0.5).
- the answer repeated: a repeat adds nothing, so the copy should not win (at most 0.5, plus the tolerance).
- the first half only (content lost) and background noise at 20 dB SNR (quality lost): a clear loss on the
  damaged dimension (at most 0.3), no win overall, indifference on the others.
- one word made 6 dB louder in the reference, another in the copy (their spans from the original's word times):
  where the instruction asks to stress the reference's word, the copy stresses the wrong one, a clear loss on
  Paralinguistics (at most 0.3); where it asks for no emphasis, which word stands out is no request, and
  Paralinguistics should not move (0.5). These two probes change chosen words: they apply only to the clips
  whose instruction and blueprint give the words (`choose`), and say why not for the others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_eval.judge.cues import DEFAULT_THRESHOLDS, UNMEASURED_MANNERS, _same_word, _words
from trace_eval.judge.instructions import read_instruction
from trace_eval.judge.prosody_rules import occurrences, stress_targets

__all__ = [
    "PROBES",
    "Changed",
    "ClipWords",
    "Expectation",
    "Probe",
    "TOLERANCE",
    "WordChoice",
    "probe_seed",
]

# How far from the listeners' rate a judge's interval may sit and still be in line with them.
TOLERANCE = 0.1
# Peak level a copy may reach (-1 dBFS): louder would clip once written as 16-bit PCM.
MAX_PEAK = 10 ** (-1 / 20)
SPEECHJUDGEAUDIT = "SpeechJudgeAudit listeners (+6 dB copy preferred 61%, ties half)"


@dataclass(frozen=True)
class Expectation:
    """What listeners do: the rate at which the changed copy wins, and the band a judge's interval must reach.

    `baseline` is a published listener rate (None where none is published); `band` the rates counted as in
    line with listeners; `source` where the figures come from.
    """

    band: tuple[float, float]
    baseline: float | None
    source: str

    def verdict(self, interval: tuple[float, float] | None) -> str | None:
        """in line (the interval reaches the band), swayed towards (above it) or against (below it) the copy."""
        if interval is None:
            return None
        low, high = interval
        if high < self.band[0]:
            return "swayed against"
        if low > self.band[1]:
            return "swayed towards"
        return "in line"


INDIFFERENT = Expectation((0.5 - TOLERANCE, 0.5 + TOLERANCE), 0.5, "a listener notices nothing that matters")
NO_GAIN = Expectation((0.0, 0.5 + TOLERANCE), None, "a repeat adds nothing: the copy should not win")
CLEAR_LOSS = Expectation((0.0, 0.3), 0.0, "content or quality damaged: the copy should lose")


def _loudness_expectation(gain_db: float) -> Expectation:
    lean = 0.61 - 0.5  # listeners' preference for the +6 dB copy over indifference
    if abs(gain_db) == 6:
        baseline = 0.5 + np.sign(gain_db) * lean
        source = SPEECHJUDGEAUDIT if gain_db > 0 else f"mirror of {SPEECHJUDGEAUDIT} (derived)"
    else:
        baseline = None
        source = f"no published figure; between indifference and the 6 dB lean of {SPEECHJUDGEAUDIT}"
    edge = 0.5 + np.sign(gain_db) * lean
    band = (min(0.5, edge) - TOLERANCE, max(0.5, edge) + TOLERANCE)
    return Expectation((round(band[0], 3), round(band[1], 3)), None if baseline is None else round(baseline, 3), source)


@dataclass
class Changed:
    """A probe's output: the copy, the reference it is paired with, and what was done (for the report)."""

    samples: np.ndarray
    reference: np.ndarray | None = None  # None: the original file itself
    notes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ClipWords:
    """What a probe that changes chosen words knows of a clip: its recognised words with their times (the
    original's blueprint `words`, None with `why` when it has none to trust) and its item's instruction."""

    words: list[dict] | None
    instruction: str
    why: str | None = None


@dataclass(frozen=True)
class WordChoice:
    """The word made prominent in the reference and the one made prominent in the copy: (word, start s, end s)."""

    reference: tuple[str, float, float]
    copy: tuple[str, float, float]


@dataclass(frozen=True)
class Probe:
    name: str
    cue: str  # loudness | silence | repetition | truncation | tempo | noise | emphasis
    description: str
    # (samples, rate, seed) -> the copy; a probe with `choose` is also given its WordChoice
    make: Callable[..., Changed]
    expect: Callable[[str], Expectation]  # per label: a dimension name or "overall"
    # The label the probe's verdict is read on: the damaged dimension for a loss (under the cap policy a
    # response that fails another dimension is both_bad overall whatever this probe did), else overall.
    headline: str = "overall"
    # A probe that changes chosen words: the words of one clip (with the seed), or why the clip has none to change.
    choose: Callable[[ClipWords, int], WordChoice | str] | None = None


def probe_seed(audio_sha256: str, probe: str) -> int:
    """The seed of one probe on one clip: the same audio and probe always give the same copy."""
    return int.from_bytes(hashlib.sha256(f"{audio_sha256}:{probe}".encode()).digest()[:8], "little")


def _gain(gain_db: float) -> Callable[[np.ndarray, int, int], Changed]:
    def make(samples: np.ndarray, rate: int, seed: int) -> Changed:
        return _within_full_scale(samples * 10 ** (gain_db / 20), samples, {"gain_db": gain_db})

    return make


def _pad(seconds: float, before: bool) -> Callable[[np.ndarray, int, int], Changed]:
    def make(samples: np.ndarray, rate: int, seed: int) -> Changed:
        silence = np.zeros(int(round(seconds * rate)), dtype=np.float32)
        parts = [silence, samples] if before else [samples, silence]
        return Changed(np.concatenate(parts).astype(np.float32), notes={"silence_s": seconds, "before": before})

    return make


def _repeat(samples: np.ndarray, rate: int, seed: int) -> Changed:
    return Changed(np.concatenate([samples, samples]).astype(np.float32), notes={"times": 2})


FADE_S = 0.01  # a cut ends in a 10 ms fade, not a click


def _first_half(samples: np.ndarray, rate: int, seed: int) -> Changed:
    half = samples[: len(samples) // 2].astype(np.float32)
    fade = min(len(half), int(FADE_S * rate))
    if fade:
        half[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return Changed(half, notes={"kept_s": round(len(half) / rate, 3)})


def integrated_lufs(samples: np.ndarray, rate: int) -> float:
    """BS.1770 integrated loudness, as extractors/loudness.py measures it (pyloudnorm's meter)."""
    import pyloudnorm

    return float(pyloudnorm.Meter(rate).integrated_loudness(samples.astype(np.float64)))


def _within_full_scale(copy: np.ndarray, original: np.ndarray, notes: dict) -> Changed:
    """The copy as it is when it fits under MAX_PEAK; else both sides lowered by the room it lacks, so the
    pair differs by the probe's cue only (and the lowering is reported)."""
    peak = float(np.max(np.abs(copy))) if len(copy) else 0.0
    if peak <= MAX_PEAK:
        return Changed(copy.astype(np.float32), notes=notes)
    room = MAX_PEAK / peak
    return Changed(
        (copy * room).astype(np.float32),
        reference=(original * room).astype(np.float32),
        notes={**notes, "clipping_avoided": True, "reference_gain_db": round(float(20 * np.log10(room)), 2)},
    )


TEMPO_WINDOW_S = 0.032


def _tempo(factor: float) -> Callable[[np.ndarray, int, int], Changed]:
    def make(samples: np.ndarray, rate: int, seed: int) -> Changed:
        import librosa

        # A phase vocoder: the speed changes, the pitch stays (rate > 1 is faster). Its window is about 32 ms, as
        # speech analysis uses: librosa's default (2048 samples, 128 ms at 16 kHz) smears speech until the
        # recogniser mishears it. It loses some energy (2-4 dB on speech), which is put back so that tempo is
        # the only cue changed.
        n_fft = int(2 ** round(np.log2(TEMPO_WINDOW_S * rate)))
        stretched = librosa.effects.time_stretch(
            samples.astype(np.float32), rate=factor, n_fft=n_fft, hop_length=n_fft // 4
        ).astype(np.float64)
        before, after = integrated_lufs(samples, rate), integrated_lufs(stretched, rate)
        if np.isfinite(before) and np.isfinite(after):
            stretched *= 10 ** ((before - after) / 20)
        return _within_full_scale(stretched, samples, {"tempo": factor})

    return make


SPEECH_GATE_DB = -40.0  # frames this far below the loudest frame are pauses, left out of the speech level
FRAME_S = 0.02


def speech_power(samples: np.ndarray, rate: int) -> float:
    """Mean power of the frames that hold speech (within 40 dB of the loudest 20 ms frame)."""
    frame = max(1, int(FRAME_S * rate))
    count = max(1, len(samples) // frame)
    frames = samples[: count * frame].astype(np.float64).reshape(count, -1) if len(samples) >= frame else None
    if frames is None:
        return float(np.mean(np.square(samples, dtype=np.float64)))
    powers = np.mean(np.square(frames), axis=1)
    loudest = float(np.max(powers))
    if loudest <= 0:
        return 0.0
    return float(np.mean(powers[powers >= loudest * 10 ** (SPEECH_GATE_DB / 10)]))


def _noise(snr_db: float) -> Callable[[np.ndarray, int, int], Changed]:
    def make(samples: np.ndarray, rate: int, seed: int) -> Changed:
        noise = np.random.default_rng(seed).standard_normal(len(samples))
        level = speech_power(samples, rate) / 10 ** (snr_db / 10)
        mixed = samples + noise * np.sqrt(level)
        return _within_full_scale(mixed, samples, {"snr_db": snr_db, "noise": "white, Gaussian", "seed": seed})

    return make


def _same(expectation: Expectation) -> Callable[[str], Expectation]:
    return lambda label: expectation


def _listeners(expectation: Expectation) -> Callable[[str], Expectation]:
    """Listeners' lean on how it sounds; the words are the same, so Content should not move."""
    return lambda label: INDIFFERENT if label == "content" else expectation


NO_WIN_OVERALL = Expectation(
    (0.0, 0.5 + TOLERANCE), None, "the damaged copy should not win overall (a tie where both fail elsewhere)"
)


def _loss_on(dimension: str) -> Callable[[str], Expectation]:
    """A clear loss on the damaged dimension; overall, no win (an answer that fails another dimension is
    both_bad under the cap policy, damaged or not); indifference elsewhere."""
    return lambda label: CLEAR_LOSS if label == dimension else NO_WIN_OVERALL if label == "overall" else INDIFFERENT


EMPHASIS_DB = 6.0  # a word made prominent: louder by this, with RAMP_S fades so no click marks the span
RAMP_S = 0.01
MIN_WORD_S = 0.12  # a word shorter than this is too short to hear stressed


def _word_gain(samples: np.ndarray, rate: int, span: tuple[str, float, float]) -> np.ndarray:
    """`samples` with one word's span EMPHASIS_DB louder, fading in and out over RAMP_S (raised cosine)."""
    _, start, end = span
    first, last = max(0, int(round(start * rate))), min(len(samples), int(round(end * rate)))
    shape = np.zeros(len(samples))
    shape[first:last] = 1.0
    ramp = min(int(RAMP_S * rate), (last - first) // 2)
    if ramp:
        fade = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, ramp))
        shape[first : first + ramp], shape[last - ramp : last] = fade, fade[::-1]
    return samples * (1.0 + (10 ** (EMPHASIS_DB / 20) - 1.0) * shape)


def _emphasis(samples: np.ndarray, rate: int, seed: int, choice: WordChoice) -> Changed:
    """The reference with one word made prominent, the copy with another: the pair differs by which word only.
    Both lowered alike where either would peak above MAX_PEAK."""
    reference, copy = _word_gain(samples, rate, choice.reference), _word_gain(samples, rate, choice.copy)
    peak = max(float(np.max(np.abs(reference))), float(np.max(np.abs(copy)))) if len(samples) else 0.0
    notes: dict[str, Any] = {"reference_word": choice.reference[0], "copy_word": choice.copy[0], "gain_db": EMPHASIS_DB}
    room = 1.0 if peak <= MAX_PEAK else MAX_PEAK / peak
    if room < 1.0:
        notes |= {"clipping_avoided": True, "reference_gain_db": round(float(20 * np.log10(room)), 2)}
    return Changed((copy * room).astype(np.float32), reference=(reference * room).astype(np.float32), notes=notes)


def _asked_words(instruction: str) -> list[str]:
    return stress_targets(instruction, read_instruction(instruction).quoted, _words)


def _same_heard(heard: str, asked: str) -> bool:
    return _same_word(heard, asked, DEFAULT_THRESHOLDS)


def _audible(clip: ClipWords) -> list[int] | str:
    """The indices of the clip's words long enough to hear stressed, or why it has none."""
    if clip.words is None:
        return clip.why or "no recognised words"
    found = []
    for i, word in enumerate(clip.words):
        start, end = word.get("start"), word.get("end")
        timed = isinstance(start, (int, float)) and isinstance(end, (int, float)) and end - start >= MIN_WORD_S
        if timed and _words(str(word.get("word", ""))):
            found.append(i)
    return found


def _span(clip: ClipWords, indices: list[int]) -> tuple[str, float, float]:
    assert clip.words is not None
    words = [clip.words[i] for i in indices]
    return " ".join(str(w["word"]).strip() for w in words), float(words[0]["start"]), float(words[-1]["end"])


def _pick(candidates: list[int], seed: int) -> int:
    return candidates[int(np.random.default_rng(seed).integers(len(candidates)))]


def _choose_asked(clip: ClipWords, seed: int) -> WordChoice | str:
    """The asked word (its first occurrence) in the reference, a seeded other word in the copy."""
    asked = _asked_words(clip.instruction)
    if not asked:
        return "the instruction asks to stress no word"
    audible = _audible(clip)
    if isinstance(audible, str):
        return audible
    assert clip.words is not None
    runs = occurrences(clip.words, _words(asked[0]), _words, _same_heard)
    if not runs:
        return f"“{asked[0]}” is not among the clip's recognised words"
    others = [i for i in audible if not any(i in run for run in runs)]
    if not others:
        return "no other word long enough to stress"
    return WordChoice(_span(clip, runs[0]), _span(clip, [_pick(others, seed)]))


def _choose_unasked(clip: ClipWords, seed: int) -> WordChoice | str:
    """Two seeded words, one made prominent in the reference and one in the copy, where no emphasis is asked."""
    if _asked_words(clip.instruction) or UNMEASURED_MANNERS["emphasis"].search(clip.instruction.lower()):
        return "the instruction asks for emphasis (the emphasis-asked probe's)"
    audible = _audible(clip)
    if isinstance(audible, str):
        return audible
    assert clip.words is not None
    first = _pick(audible, seed)
    said = _words(str(clip.words[first]["word"]))
    others = [i for i in audible if _words(str(clip.words[i]["word"])) != said]
    if not others:
        return "fewer than two different words long enough to stress"
    return WordChoice(_span(clip, [first]), _span(clip, [_pick(others, seed + 1)]))


def _probes() -> dict[str, Probe]:
    found: list[Probe] = []
    for gain in (3, 6, -3, -6):
        expectation = _loudness_expectation(gain)
        found.append(
            Probe(f"loudness{gain:+d}dB", "loudness", f"{gain:+d} dB gain", _gain(gain), _listeners(expectation))
        )
    found.append(
        Probe(
            "loudness-20dB",
            "loudness",
            "-20 dB gain: the same answer far quieter",
            _gain(-20),
            _loss_on("voice_quality"),
            headline="voice_quality",
        )
    )
    for seconds in (1, 3):
        for before in (True, False):
            where = "before" if before else "after"
            found.append(
                Probe(
                    f"silence-{where}-{seconds}s",
                    "silence",
                    f"{seconds} s of silence {where} the answer",
                    _pad(seconds, before),
                    _same(INDIFFERENT),
                )
            )
    found += [
        Probe("repeat", "repetition", "the answer said twice", _repeat, _same(NO_GAIN)),
        Probe(
            "first-half",
            "truncation",
            "the first half of the answer only",
            _first_half,
            _loss_on("content"),
            headline="content",
        ),
        Probe("tempo-0.9x", "tempo", "tempo 0.9x, pitch kept", _tempo(0.9), _same(INDIFFERENT)),
        Probe("tempo-1.1x", "tempo", "tempo 1.1x, pitch kept", _tempo(1.1), _same(INDIFFERENT)),
        Probe(
            "noise-20dB",
            "noise",
            "white noise at 20 dB SNR",
            _noise(20.0),
            _loss_on("voice_quality"),
            headline="voice_quality",
        ),
        Probe(
            "emphasis-asked",
            "emphasis",
            "the word the instruction asks to stress 6 dB louder in the reference, another word in the copy",
            _emphasis,
            _loss_on("paralinguistics"),
            headline="paralinguistics",
            choose=_choose_asked,
        ),
        Probe(
            "emphasis-unasked",
            "emphasis",
            "one word 6 dB louder in the reference, another in the copy, where no emphasis is asked",
            _emphasis,
            _same(INDIFFERENT),
            headline="paralinguistics",
            choose=_choose_unasked,
        ),
    ]
    return {probe.name: probe for probe in found}


PROBES: dict[str, Probe] = _probes()
