"""Speaking rate from the ASR word timings: overall rate, articulation rate and pace contour.

- Speech_Rate_WPM: words per minute over the whole clip, leading and trailing
  silence and pauses included (how fast the answer moves).
- Articulation_Rate_WPM: words per minute over the time spent speaking: the
  span from the first word's start to the last word's end, less every gap
  between consecutive words longer than `pause_s` (0.25 s). Shorter gaps are
  word boundaries and stop closures, part of articulation, and ASR word edges
  are not precise enough to tell them from speech anyway.
- Pace_Contour_WPM: the speech span cut into equal consecutive windows, at most
  `contour_max_windows` and none shorter than `contour_min_window_s` (so a 10 s
  answer gets 5 windows of 2 s, a 3 s answer one window); each value is the
  words whose midpoint falls in the window, per minute. It shows an answer
  speeding up or slowing down, which instructions ask for.

Needs no audio: it reads `words`, `duration_s` and `transcript_quality` from the
blueprint. Rates from a transcript marked unreliable (a repetition loop, speech
Whisper took for silence) are null with the transcript's reason, and so is a rate
beyond what people say (`max_speech_wpm`, `max_articulation_wpm`): such a number
measures the recogniser, not the speaker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from extractors.base import Clip, ClipError, Extractor, Section, register

__all__ = ["RateConfig", "RateExtractor", "speaking_rates"]

_PROPERTIES = "agent_audio_properties"
_SPEECH = "Speech_Rate_WPM"
_ARTICULATION = "Articulation_Rate_WPM"
_CONTOUR = "Pace_Contour_WPM"


@dataclass
class RateConfig:
    pause_s: float = 0.25  # a gap between words longer than this is a pause, not speaking time
    contour_min_window_s: float = 2.0
    contour_max_windows: int = 5
    max_speech_wpm: float = 400.0  # beyond fast speech (espeak-ng at its fast setting measures about 370)
    max_articulation_wpm: float = 450.0


@dataclass
class Rates:
    """The three cues (None where not computable) and why each None is None."""

    speech_wpm: float | None
    articulation_wpm: float | None
    contour_wpm: list[float] | None
    null_reasons: dict[str, str]


def _timings(words: list) -> list[tuple[float, float]]:
    """(start, end) of each word in time order; raises ValueError on malformed entries."""
    spans = []
    for k, w in enumerate(words):
        try:
            start, end = float(w["start"]), float(w["end"])
        except (TypeError, KeyError, ValueError) as e:
            raise ValueError(f"word {k} has no numeric start/end: {w!r}") from e
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise ValueError(f"word {k} has an invalid time span: {w!r}")
        spans.append((start, end))
    return sorted(spans)


def speaking_rates(words: list, duration_s: float, config: RateConfig | None = None) -> Rates:
    """The rate cues for one clip from its word timings (seconds) and duration."""
    config = config or RateConfig()
    spans = _timings(words)
    if not spans:
        reason = "no words transcribed"
        return Rates(None, None, None, {_SPEECH: reason, _ARTICULATION: reason, _CONTOUR: reason})
    reasons: dict[str, str] = {}
    n = len(spans)

    speech = None
    if duration_s > 0:
        speech = round(n / duration_s * 60.0, 1)
    else:
        reasons[_SPEECH] = "clip duration is zero"

    first, last = spans[0][0], max(end for _, end in spans)
    speaking = last - first
    previous_end = spans[0][1]
    for start, end in spans[1:]:
        gap = start - previous_end
        if gap > config.pause_s:
            speaking -= gap
        previous_end = max(previous_end, end)
    articulation = None
    if speaking > 0:
        articulation = round(n / speaking * 60.0, 1)
    else:
        reasons[_ARTICULATION] = "word timings span no time"

    if speech is not None and speech > config.max_speech_wpm:
        reasons[_SPEECH] = f"{speech:g} words per minute is beyond human speech (above {config.max_speech_wpm:g})"
        speech = None
    if articulation is not None and articulation > config.max_articulation_wpm:
        reasons[_ARTICULATION] = (
            f"{articulation:g} words per minute of speaking time is beyond human speech "
            f"(above {config.max_articulation_wpm:g})"
        )
        articulation = None
        # The contour counts the same words over the same time: it cannot be trusted either.
        reasons[_CONTOUR] = reasons[_ARTICULATION]
        return Rates(speech, None, None, reasons)

    contour = None
    span = last - first
    if span > 0:
        windows = max(1, min(config.contour_max_windows, int(span // config.contour_min_window_s)))
        length = span / windows
        counts = [0] * windows
        for start, end in spans:
            counts[min(windows - 1, int(((start + end) / 2 - first) / length))] += 1
        contour = [round(c / length * 60.0, 1) for c in counts]
    else:
        reasons[_CONTOUR] = "word timings span no time"
    return Rates(speech, articulation, contour, reasons)


@register
class RateExtractor(Extractor):
    name = "rate"
    version = "2"
    description = "Speech rate, articulation rate and pace contour from ASR word timings"
    sample_rate = None
    depends_on = ("asr",)
    outputs = tuple(f"{_PROPERTIES}.{key}" for key in (_SPEECH, _ARTICULATION, _CONTOUR))
    libraries = ()  # counting words and seconds: no arithmetic a library could change
    Config = RateConfig

    def extract_one(self, clip: Clip) -> Section:
        words = clip.blueprint.get("words")
        if words is None:
            reason = "no word timings: asr did not run or failed on this clip"
            return _section(Rates(None, None, None, {_SPEECH: reason, _ARTICULATION: reason, _CONTOUR: reason}))
        quality = clip.blueprint.get("transcript_quality") or {}
        if words and quality.get("reliable") is False:
            reason = f"transcript unreliable: {quality.get('reason') or 'no reason recorded'}"
            return _section(Rates(None, None, None, {_SPEECH: reason, _ARTICULATION: reason, _CONTOUR: reason}))
        try:
            rates = speaking_rates(words, clip.duration_s, self.config)
        except ValueError as e:
            raise ClipError(f"malformed word timings: {e}") from e
        asr_reason = (clip.blueprint.get("asr") or {}).get("reason")
        if asr_reason and not words:  # say why there are no words (e.g. no speech detected)
            rates.null_reasons = {key: f"no words transcribed: {asr_reason}" for key in rates.null_reasons}
        return _section(rates)


def _section(rates: Rates) -> Section:
    values = {_SPEECH: rates.speech_wpm, _ARTICULATION: rates.articulation_wpm, _CONTOUR: rates.contour_wpm}
    reasons = {f"{_PROPERTIES}.{key}": reason for key, reason in rates.null_reasons.items()}
    return Section({_PROPERTIES: values}, reasons)
