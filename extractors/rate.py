"""Speaking rate from the ASR word timings: overall rate, articulation rate and pace contour.

What is counted follows the language the transcript was decoded in (`asr.language`):
words, per minute, where the language separates words with spaces; characters (letters,
ideographs, kana, digits: trace_eval/languages.py), per second, where it does not (zh,
yue, ja, th, lo, km, my, bo), since a transcript there has no words to count. The other
unit's keys are null with the reason, so a rate is never read in the wrong unit. The
rate of every language, measured on the signal without a transcript, is the voicing
extractor's Syllable_Rate_Per_S.

- Speech_Rate_WPM, Speech_Rate_Chars_Per_S: over the whole clip, leading and trailing
  silence and pauses included (how fast the answer moves).
- Articulation_Rate_WPM, Articulation_Rate_Chars_Per_S: over the time spent speaking:
  the span from the first word's start to the last word's end, less every gap
  between consecutive words longer than `pause_s` (0.25 s). Shorter gaps are
  word boundaries and stop closures, part of articulation, and ASR word edges
  are not precise enough to tell them from speech anyway.
- Pace_Contour_WPM, Pace_Contour_Chars_Per_S: the speech span cut into equal consecutive
  windows, at most `contour_max_windows` and none shorter than `contour_min_window_s` (so
  a 10 s answer gets 5 windows of 2 s, a 3 s answer one window); each value is what the
  words whose midpoint falls in the window hold, per unit of time. It shows an answer
  speeding up or slowing down, which instructions ask for.

Needs no audio: it reads `words`, `asr.language`, `duration_s` and `transcript_quality`
from the blueprint. Rates from a transcript marked unreliable (a repetition loop, speech
Whisper took for silence) are null with the transcript's reason, and so is a rate
beyond what people say (`max_speech_wpm`, `max_articulation_wpm`, and per second
`max_speech_chars_per_s`, `max_articulation_chars_per_s`): such a number measures the
recogniser, not the speaker.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from extractors.base import Clip, ClipError, Extractor, Section, register
from trace_eval.languages import characters, separates_words

__all__ = ["CHARACTERS", "RateConfig", "RateExtractor", "Unit", "WORDS", "speaking_rates"]

_PROPERTIES = "agent_audio_properties"


@dataclass(frozen=True)
class Unit:
    """What a rate counts, and in what time unit."""

    speech: str  # the blueprint keys: speech rate, articulation rate, pace contour
    articulation: str
    contour: str
    seconds: float  # of the time unit: 60 for per minute
    name: str  # in a reason: "words per minute"
    count: Callable[[str], int]  # of one recognised word

    @property
    def keys(self) -> tuple[str, str, str]:
        return self.speech, self.articulation, self.contour


WORDS = Unit("Speech_Rate_WPM", "Articulation_Rate_WPM", "Pace_Contour_WPM", 60.0, "words per minute", lambda w: 1)
CHARACTERS = Unit(
    "Speech_Rate_Chars_Per_S",
    "Articulation_Rate_Chars_Per_S",
    "Pace_Contour_Chars_Per_S",
    1.0,
    "characters per second",
    characters,
)


@dataclass
class RateConfig:
    pause_s: float = 0.25  # a gap between words longer than this is a pause, not speaking time
    contour_min_window_s: float = 2.0
    contour_max_windows: int = 5
    max_speech_wpm: float = 400.0  # beyond fast speech (espeak-ng at its fast setting measures about 370)
    max_articulation_wpm: float = 450.0
    # Where characters are counted: beyond fast speech in every such script (Mandarin, one syllable a character,
    # tops out near 8; Thai, about 2.5 letters a syllable, near 20)
    max_speech_chars_per_s: float = 25.0
    max_articulation_chars_per_s: float = 30.0


@dataclass
class Rates:
    """The three cues in one unit (None where not computable) and why each None is None, by blueprint key."""

    speech: float | None
    articulation: float | None
    contour: list[float] | None
    null_reasons: dict[str, str]


def _timings(words: list) -> list[tuple[float, float, str]]:
    """(start, end, text) of each word in time order; raises ValueError on malformed entries."""
    spans = []
    for k, w in enumerate(words):
        try:
            start, end = float(w["start"]), float(w["end"])
        except (TypeError, KeyError, ValueError) as e:
            raise ValueError(f"word {k} has no numeric start/end: {w!r}") from e
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise ValueError(f"word {k} has an invalid time span: {w!r}")
        spans.append((start, end, str(w.get("word") or "")))
    return sorted(spans)


def _none(unit: Unit, reason: str) -> Rates:
    return Rates(None, None, None, dict.fromkeys(unit.keys, reason))


def speaking_rates(words: list, duration_s: float, config: RateConfig | None = None, unit: Unit = WORDS) -> Rates:
    """The rate cues for one clip from its word timings (seconds) and duration, counted in `unit`."""
    config = config or RateConfig()
    spans = _timings(words)
    if not spans:
        return _none(unit, "no words transcribed")
    max_speech, max_articulation = (
        (config.max_speech_wpm, config.max_articulation_wpm)
        if unit is WORDS
        else (config.max_speech_chars_per_s, config.max_articulation_chars_per_s)
    )
    reasons: dict[str, str] = {}
    counts = [unit.count(text) for _, _, text in spans]
    n = sum(counts)
    if n == 0:
        return _none(unit, f"no {unit.name.split()[0]} in the transcript")

    speech = None
    if duration_s > 0:
        speech = round(n / duration_s * unit.seconds, 1)
    else:
        reasons[unit.speech] = "clip duration is zero"

    first, last = spans[0][0], max(end for _, end, _ in spans)
    speaking = last - first
    previous_end = spans[0][1]
    for start, end, _ in spans[1:]:
        gap = start - previous_end
        if gap > config.pause_s:
            speaking -= gap
        previous_end = max(previous_end, end)
    articulation = None
    if speaking > 0:
        articulation = round(n / speaking * unit.seconds, 1)
    else:
        reasons[unit.articulation] = "word timings span no time"

    if speech is not None and speech > max_speech:
        reasons[unit.speech] = f"{speech:g} {unit.name} is beyond human speech (above {max_speech:g})"
        speech = None
    if articulation is not None and articulation > max_articulation:
        reasons[unit.articulation] = (
            f"{articulation:g} {unit.name} of speaking time is beyond human speech (above {max_articulation:g})"
        )
        # The contour counts the same words over the same time: it cannot be trusted either.
        reasons[unit.contour] = reasons[unit.articulation]
        return Rates(speech, None, None, reasons)

    contour = None
    span = last - first
    if span > 0:
        windows = max(1, min(config.contour_max_windows, int(span // config.contour_min_window_s)))
        length = span / windows
        in_window = [0] * windows
        for (start, end, _), count in zip(spans, counts):
            in_window[min(windows - 1, int(((start + end) / 2 - first) / length))] += count
        contour = [round(c / length * unit.seconds, 1) for c in in_window]
    else:
        reasons[unit.contour] = "word timings span no time"
    return Rates(speech, articulation, contour, reasons)


@register
class RateExtractor(Extractor):
    name = "rate"
    version = "3"
    description = (
        "Speech rate, articulation rate and pace contour from ASR word timings: words per minute where the "
        "language separates words with spaces, characters per second where it does not"
    )
    sample_rate = None
    depends_on = ("asr",)
    outputs = tuple(f"{_PROPERTIES}.{key}" for unit in (WORDS, CHARACTERS) for key in unit.keys)
    libraries = ()  # counting words and seconds: no arithmetic a library could change
    Config = RateConfig

    def extract_one(self, clip: Clip) -> Section:
        words = clip.blueprint.get("words")
        if words is None:
            return _section(WORDS, _none(WORDS, "no word timings: asr did not run or failed on this clip"))
        try:
            _timings(words)
        except ValueError as e:
            raise ClipError(f"malformed word timings: {e}") from e
        language = (clip.blueprint.get("asr") or {}).get("language")
        if language is None and words:
            return _section(WORDS, _none(WORDS, "the transcript's language is not recorded (asr.language)"))
        unit = WORDS if language is None or separates_words(language) else CHARACTERS
        quality = clip.blueprint.get("transcript_quality") or {}
        if words and quality.get("reliable") is False:
            reason = f"transcript unreliable: {quality.get('reason') or 'no reason recorded'}"
            return _section(unit, _none(unit, reason), language)
        rates = speaking_rates(words, clip.duration_s, self.config, unit)
        asr_reason = (clip.blueprint.get("asr") or {}).get("reason")
        if asr_reason and not words:  # say why there are no words (e.g. no speech detected)
            rates.null_reasons = {key: f"no words transcribed: {asr_reason}" for key in rates.null_reasons}
        return _section(unit, rates, language if words else None)


def _section(unit: Unit, rates: Rates, language: str | None = None) -> Section:
    """The rates in `unit`, and the other unit's keys null with the reason (the same reason as this unit's when
    there are no words to count in either)."""
    values = {unit.speech: rates.speech, unit.articulation: rates.articulation, unit.contour: rates.contour}
    reasons = dict(rates.null_reasons)
    other = CHARACTERS if unit is WORDS else WORDS
    if language is None:
        shared = next(iter(rates.null_reasons.values()), "no words transcribed")
        why = dict.fromkeys(other.keys, shared)
    elif unit is WORDS:
        why = dict.fromkeys(other.keys, f"words are separated by spaces in {language}: see {WORDS.speech}")
    else:
        why = dict.fromkeys(other.keys, f"words are not separated by spaces in {language}: see {CHARACTERS.speech}")
    values.update(dict.fromkeys(other.keys))
    reasons.update(why)
    return Section({_PROPERTIES: values}, {f"{_PROPERTIES}.{key}": reason for key, reason in reasons.items()})
