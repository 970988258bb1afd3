"""Pitch (F0) cues with Praat's autocorrelation tracker, through parselmouth.

Voices range from low male (~65 Hz) to children (~600 Hz), so the pitch range is
found per clip in two passes (Hirst 2011): a first pass over a wide range locates
the speaker, a second pass narrows the range to 0.75 x the 25th percentile ..
2 x the 75th percentile of the first pass, which removes most octave jumps
without clipping expressive excursions.

Full_Pitch_Contour_Hz splits the clip into equal time segments and gives the
mean voiced F0 of each; a segment with no voiced frame (a pause, silence) is null.

A clip longer than WINDOW_S (5 minutes) is tracked a window at a time, with 2 s
of context either side, so that memory does not grow with its length. Praat
judges silence against the peak of the sound it analyses; each window's silence
threshold is scaled so that it judges against the whole clip's peak, as one
analysis of the whole clip does. Only the best path through the candidates is
found per window.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from extractors.base import Clip, ClipError, Extractor, Section, register

__all__ = ["PitchExtractor", "PitchTrack", "WINDOW_S", "praat_sounds", "track_pitch"]

_PROPERTIES = "agent_audio_properties"
_MEAN = "Mean_Pitch_Hz"
_STD = "Std_Dev_Pitch_Hz"
_CONTOUR = "Full_Pitch_Contour_Hz"
_RANGE = "Pitch_Range_Semitones"

# Bounds the second pass never leaves, whatever the first pass found.
_HARD_FLOOR_HZ = 40.0
_HARD_CEILING_HZ = 1200.0
_SILENCE_THRESHOLD = 0.03  # Praat's default, relative to the peak of the sound
WINDOW_S = 300.0  # longer clips are analysed a window of this length at a time
_CONTEXT_S = 2.0  # analysed either side of a window, then dropped


@dataclass
class Config:
    floor_hz: float = 50.0  # first pass: low enough for deep male voices
    ceiling_hz: float = 800.0  # first pass: high enough for children
    two_pass: bool = True  # narrow the range to the speaker before the final track
    second_pass_floor_factor: float = 0.75  # x 25th percentile of the first pass
    second_pass_ceiling_factor: float = 2.0  # x 75th percentile of the first pass
    time_step_s: float = 0.01
    min_voiced_s: float = 0.05  # less voiced time than this is not a measurable voice
    contour_points: int = 20
    range_percentiles: tuple[float, float] = (5.0, 95.0)


@dataclass
class PitchTrack:
    """Frame times (s) and F0 (Hz, 0 where unvoiced) of one clip."""

    times: np.ndarray
    f0: np.ndarray
    time_step_s: float

    @property
    def voiced(self) -> np.ndarray:
        return self.f0 > 0

    @property
    def voiced_s(self) -> float:
        return float(np.count_nonzero(self.voiced)) * self.time_step_s


def praat_sounds(samples: np.ndarray, rate: int) -> Iterator[tuple[int, int, Any, float]]:
    """The clip as Praat sounds: (start, end, sound, silence threshold), the sound holding samples
    start..end (with context either side when the clip is longer than WINDOW_S) and timed as in the clip."""
    import parselmouth

    longest = int(WINDOW_S * rate)
    if len(samples) <= longest:
        yield (
            0,
            len(samples),
            parselmouth.Sound(np.asarray(samples, dtype=np.float64), sampling_frequency=rate),
            _SILENCE_THRESHOLD,
        )
        return
    size = -(-len(samples) // -(-len(samples) // longest))  # windows of equal length, none longer than WINDOW_S
    peak = max(_peak(samples[i : i + size]) for i in range(0, len(samples), size))
    context = int(_CONTEXT_S * rate)
    for start in range(0, len(samples), size):
        end = min(start + size, len(samples))
        low = max(start - context, 0)
        part = np.asarray(samples[low : min(end + context, len(samples))], dtype=np.float64)
        part_peak = _peak(part)
        threshold = _SILENCE_THRESHOLD * peak / part_peak if part_peak > 0 else _SILENCE_THRESHOLD
        yield start, end, parselmouth.Sound(part, sampling_frequency=rate, start_time=low / rate), threshold


def _peak(samples: np.ndarray) -> float:
    """Praat's peak of a sound: the largest distance from its mean."""
    samples = np.asarray(samples, dtype=np.float64)
    return float(np.abs(samples - samples.mean()).max()) if len(samples) else 0.0


def _praat_pitch(
    samples: np.ndarray, rate: int, floor_hz: float, ceiling_hz: float, time_step_s: float
) -> tuple[np.ndarray, np.ndarray]:
    times, f0 = [], []
    for start, end, sound, silence in praat_sounds(samples, rate):
        pitch = sound.to_pitch_ac(
            time_step=time_step_s, pitch_floor=floor_hz, pitch_ceiling=ceiling_hz, silence_threshold=silence
        )
        frame_times = np.asarray(pitch.xs(), dtype=np.float64)
        keep = (frame_times >= start / rate) & (frame_times < end / rate)  # each frame once, from its own window
        times.append(frame_times[keep])
        f0.append(np.asarray(pitch.selected_array["frequency"], dtype=np.float64)[keep])
    return np.concatenate(times), np.concatenate(f0)


def track_pitch(samples: np.ndarray, rate: int, config: Config | None = None) -> PitchTrack:
    """F0 track of mono samples (0 Hz where unvoiced); empty when the clip is too short to analyse."""
    import parselmouth

    config = config or Config()

    duration_s = len(samples) / rate
    # Praat needs three periods of the floor pitch in the window; a very short clip raises the floor.
    floor_hz = max(config.floor_hz, 3.0 / duration_s * 1.01) if duration_s > 0 else config.floor_hz
    if floor_hz >= config.ceiling_hz:
        return PitchTrack(np.zeros(0), np.zeros(0), config.time_step_s)
    try:
        times, f0 = _praat_pitch(samples, rate, floor_hz, config.ceiling_hz, config.time_step_s)
        voiced = f0[f0 > 0]
        if config.two_pass and len(voiced) * config.time_step_s >= config.min_voiced_s:
            q25, q75 = np.percentile(voiced, [25, 75])
            floor2 = float(np.clip(q25 * config.second_pass_floor_factor, max(_HARD_FLOOR_HZ, floor_hz), None))
            ceiling2 = float(np.clip(q75 * config.second_pass_ceiling_factor, None, _HARD_CEILING_HZ))
            if ceiling2 > floor2 * 1.5:
                times2, f02 = _praat_pitch(samples, rate, floor2, ceiling2, config.time_step_s)
                if np.count_nonzero(f02 > 0) > 0:
                    times, f0 = times2, f02
    except parselmouth.PraatError as e:
        raise ClipError(f"Praat pitch analysis failed: {e}") from e
    return PitchTrack(times, f0, config.time_step_s)


def _segment_means(
    times: np.ndarray, values: np.ndarray, keep: np.ndarray, duration_s: float, points: int
) -> list[float | None]:
    """Mean of the kept values in each of `points` equal time segments of [0, duration_s]; None where none."""
    edges = np.linspace(0.0, duration_s, points + 1)
    segment = np.clip(np.searchsorted(edges, times[keep], side="right") - 1, 0, points - 1)
    sums = np.bincount(segment, weights=values[keep], minlength=points)
    counts = np.bincount(segment, minlength=points)
    return [round(float(s / c), 2) if c else None for s, c in zip(sums, counts)]


@register
class PitchExtractor(Extractor):
    name = "pitch"
    version = "2"
    description = "F0 mean, spread, range and 20-point contour (Praat autocorrelation, two-pass range)"
    sample_rate = 16000
    outputs = tuple(f"{_PROPERTIES}.{key}" for key in (_MEAN, _STD, _CONTOUR, _RANGE))
    libraries = ("praat-parselmouth", "numpy")
    Config = Config

    def load(self) -> None:
        import parselmouth  # noqa: F401  (here, so that worker processes forked after it inherit it)

    def extract_one(self, clip: Clip) -> Section:
        config: Config = self.config
        track = track_pitch(clip.samples(self.sample_rate), self.sample_rate, config)
        if track.voiced_s < config.min_voiced_s:
            reason = (
                f"no voice found: {track.voiced_s:.2f} s voiced, less than {config.min_voiced_s} s "
                "(silence, noise, unvoiced sound or a clip too short for pitch analysis)"
            )
            values: dict[str, Any] = {key.split(".", 1)[1]: None for key in self.outputs}
            return Section({_PROPERTIES: values}, {key: reason for key in self.outputs})

        voiced_f0 = track.f0[track.voiced]
        low, high = np.percentile(voiced_f0, config.range_percentiles)
        values = {
            _MEAN: round(float(np.mean(voiced_f0)), 2),
            _STD: round(float(np.std(voiced_f0)), 2),
            _CONTOUR: _segment_means(track.times, track.f0, track.voiced, clip.duration_s, config.contour_points),
            _RANGE: round(float(12.0 * np.log2(high / low)), 2),
        }
        return Section({_PROPERTIES: values})
