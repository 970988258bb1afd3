"""Pace and fluency from the signal alone: voiced share, pauses, syllable rate.

No transcript is needed, so these cues exist for every clip and language.

- Voiced_Fraction: voiced time (Praat pitch track, as in the pitch extractor)
  over the whole clip, leading and trailing silence included.
- Pauses: stretches of at least `min_pause_s` below a silence threshold between
  the first and the last sounding stretch (leading and trailing silence is not a
  pause); a sounding stretch without any voiced frame (a click, a breath) counts
  as silence. The threshold follows the clip's own level: 25 dB below its 99th
  percentile intensity (de Jong & Wempe 2009), raised to 6 dB above the noise
  floor in noisy clips; a gain change therefore leaves the result unchanged.
- Syllable_Rate_Per_S: syllable nuclei per second of speaking time (sounding time
  between the first and last sounding stretch, pauses excluded), i.e. an
  articulation rate. Nuclei are intensity peaks inside sounding stretches that
  stand out at least `min_dip_db` from the dips around them (peak prominence)
  and fall on voiced frames (de Jong & Wempe 2009). Above `max_syllables_per_s`
  (10, beyond human speech) the peaks are not syllables: null with the reason.

A clip longer than 5 minutes is analysed in the pitch extractor's windows, so that
memory does not grow with its length (see extractors/pitch.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from extractors.base import Clip, ClipError, Extractor, Section, register
from extractors.pitch import Config as PitchConfig
from extractors.pitch import praat_sounds, track_pitch

__all__ = ["VoicingExtractor"]

_SECTION = "agent_voicing"
_VOICED = "Voiced_Fraction"
_PAUSE_COUNT = "Pause_Count"
_PAUSE_TOTAL = "Pause_Total_S"
_LONGEST_PAUSE = "Longest_Pause_S"
_SYLLABLE_RATE = "Syllable_Rate_Per_S"
# Intensity within this of the clip's peak is always sounding.
_STEADY_LEVEL_DB = 3.0
_KEYS = (_VOICED, _PAUSE_COUNT, _PAUSE_TOTAL, _LONGEST_PAUSE, _SYLLABLE_RATE)


@dataclass
class Config:
    min_pause_s: float = 0.25
    min_sounding_s: float = 0.1  # shorter sounding bursts (clicks, breaths) inside silence stay silence
    silence_below_peak_db: float = 25.0  # silence threshold below the 99th percentile intensity
    above_noise_floor_db: float = 6.0  # ...but at least this far above the 5th percentile (noisy clips)
    min_dip_db: float = 2.0  # a syllable nucleus stands out this much from its neighbouring dips
    intensity_min_pitch_hz: float = 75.0  # Praat intensity window is 6.4 / this: short enough to part fast syllables
    time_step_s: float = 0.01
    min_voiced_s: float = 0.1  # less voiced time than this is no speech to measure
    max_syllables_per_s: float = 10.0  # more is beyond human speech: a measurement, not a speaker


@dataclass
class Stretches:
    """Runs of equal booleans over frames: start index, length, value."""

    starts: np.ndarray
    lengths: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, flags: np.ndarray) -> Stretches:
        change = np.flatnonzero(np.diff(flags.astype(np.int8))) + 1
        starts = np.concatenate(([0], change))
        lengths = np.diff(np.concatenate((starts, [len(flags)])))
        return cls(starts, lengths, flags[starts])


def _absorb_short(flags: np.ndarray, value: bool, min_frames: int, at_edges: bool) -> np.ndarray:
    """Flip runs of `value` shorter than `min_frames`; runs touching the clip's ends only if `at_edges`."""
    flags = flags.copy()
    runs = Stretches.of(flags)
    last = len(runs.starts) - 1
    for i, (start, length, run_value) in enumerate(zip(runs.starts, runs.lengths, runs.values)):
        if run_value == value and length < min_frames and (at_edges or 0 < i < last):
            flags[start : start + length] = not value
    return flags


def sounding_frames(intensity_db: np.ndarray, voiced: np.ndarray, config: Config) -> np.ndarray:
    """Frames of speech: above the clip-relative silence threshold, in stretches that hold voicing.

    Short gaps inside speech are not pauses; short bursts and unvoiced stretches
    (clicks, breaths, coughs) inside silence are not speech.
    """
    peak = np.percentile(intensity_db, 99)
    floor = np.percentile(intensity_db, 5)
    threshold = max(peak - config.silence_below_peak_db, floor + config.above_noise_floor_db)
    # A clip of steady level (a held vowel, a hum) is all sounding, not all silence.
    threshold = min(threshold, peak - _STEADY_LEVEL_DB)
    sounding = intensity_db >= threshold
    min_pause = int(round(config.min_pause_s / config.time_step_s))
    min_sounding = int(round(config.min_sounding_s / config.time_step_s))
    sounding = _absorb_short(sounding, False, min_pause, at_edges=False)
    sounding = _absorb_short(sounding, True, min_sounding, at_edges=True)
    runs = Stretches.of(sounding)
    for start, length, run_value in zip(runs.starts, runs.lengths, runs.values):
        if run_value and not voiced[start : start + length].any():
            sounding[start : start + length] = False
    return sounding


def nucleus_frames(intensity_db: np.ndarray, sounding: np.ndarray, voiced: np.ndarray, config: Config) -> np.ndarray:
    """Frames of syllable nuclei: intensity peaks standing out `min_dip_db` from the dips around them, on
    voiced frames of speech."""
    from scipy.signal import find_peaks

    peaks, _ = find_peaks(intensity_db, prominence=config.min_dip_db)
    return peaks[sounding[peaks] & voiced[peaks]]


def syllable_nuclei(intensity_db: np.ndarray, sounding: np.ndarray, voiced: np.ndarray, config: Config) -> int:
    return len(nucleus_frames(intensity_db, sounding, voiced, config))


@register
class VoicingExtractor(Extractor):
    name = "voicing"
    version = "3"
    description = "voiced fraction, pauses and syllable rate from intensity and pitch (de Jong & Wempe 2009)"
    sample_rate = 16000
    outputs = tuple(f"{_SECTION}.{key}" for key in _KEYS)
    libraries = ("praat-parselmouth", "numpy")
    Config = Config

    def load(self) -> None:
        # Imported where the extractor loads, so that worker processes forked after it inherit them
        # (scipy.signal costs 0.7 s of CPU in every process that imports it).
        import parselmouth  # noqa: F401
        import scipy.signal  # noqa: F401

    def extract_one(self, clip: Clip) -> Section:
        import parselmouth

        config: Config = self.config
        samples = clip.samples(self.sample_rate)
        duration_s = len(samples) / self.sample_rate
        # The pitch tracker's settings are the pitch extractor's defaults: changing them changes this version.
        track = track_pitch(samples, self.sample_rate, PitchConfig(time_step_s=config.time_step_s))
        values: dict[str, object] = {key: None for key in _KEYS}
        values[_VOICED] = round(min(track.voiced_s / duration_s, 1.0), 3)

        # Praat's intensity window is 6.4 / min pitch long; a shorter clip has no intensity contour.
        shortest_s = 6.4 / config.intensity_min_pitch_hz
        reason = None
        if duration_s < shortest_s:
            reason = f"clip is {duration_s:.2f} s, shorter than the {shortest_s:.2f} s intensity analysis window"
        elif track.voiced_s < config.min_voiced_s:
            reason = f"no speech: {track.voiced_s:.2f} s voiced, less than {config.min_voiced_s} s"
        if reason is not None:
            return Section({_SECTION: values}, {f"{_SECTION}.{key}": reason for key in _KEYS if key != _VOICED})

        # Intensity in the pitch tracker's windows (one for a clip up to 5 minutes), and the voicing
        # at each intensity frame: the nearest pitch frame of its window (both step by time_step_s).
        intensities, voicings = [], []
        for start, end, sound, _ in praat_sounds(samples, self.sample_rate):
            try:
                intensity = sound.to_intensity(
                    minimum_pitch=config.intensity_min_pitch_hz, time_step=config.time_step_s, subtract_mean=True
                )
            except parselmouth.PraatError as e:
                raise ClipError(f"Praat intensity analysis failed: {e}") from e
            times = np.asarray(intensity.xs(), dtype=np.float64)
            keep = (times >= start / self.sample_rate) & (times < end / self.sample_rate)
            intensities.append(np.asarray(intensity.values[0], dtype=np.float64)[keep])
            in_window = (track.times >= start / self.sample_rate) & (track.times < end / self.sample_rate)
            pitch_times, pitch_voiced = track.times[in_window], track.voiced[in_window]
            nearest = np.round((times[keep] - pitch_times[0]) / config.time_step_s).astype(int)
            voicings.append(pitch_voiced[np.clip(nearest, 0, len(pitch_times) - 1)])
        intensity_db, voiced = np.concatenate(intensities), np.concatenate(voicings)

        sounding = sounding_frames(intensity_db, voiced, config)
        runs = Stretches.of(sounding)
        # Silence before the first and after the last sounding stretch is not a pause.
        between_speech = np.ones(len(runs.values), dtype=bool)
        between_speech[0] &= bool(runs.values[0])
        between_speech[-1] &= bool(runs.values[-1])
        pauses = runs.lengths[between_speech & ~runs.values] * config.time_step_s
        speaking_s = float(np.count_nonzero(sounding)) * config.time_step_s
        values[_PAUSE_COUNT] = int(len(pauses))
        values[_PAUSE_TOTAL] = round(float(pauses.sum()), 2)
        values[_LONGEST_PAUSE] = round(float(pauses.max()), 2) if len(pauses) else 0.0
        nuclei = syllable_nuclei(intensity_db, sounding, voiced, config)
        reasons = {}
        if speaking_s <= 0:
            reasons[f"{_SECTION}.{_SYLLABLE_RATE}"] = "no sounding frames"
        elif nuclei / speaking_s > config.max_syllables_per_s:
            reasons[f"{_SECTION}.{_SYLLABLE_RATE}"] = (
                f"{nuclei / speaking_s:.1f} syllables per second is beyond human speech "
                f"(above {config.max_syllables_per_s:g}): the intensity peaks are not syllables"
            )
        else:
            values[_SYLLABLE_RATE] = round(nuclei / speaking_s, 2)
        return Section({_SECTION: values}, reasons)
