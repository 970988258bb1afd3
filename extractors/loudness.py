"""Loudness cues after ITU-R BS.1770 (K-weighted, gated), with pyloudnorm's K-weighting filters.

Every clip is measured at 16 kHz, the 0-8 kHz band where speech carries its
energy, so answers delivered at different sample rates are compared on equal terms.
The clip is filtered a minute at a time (the filters' state carried over) and only
the mean square of each 400 ms block is kept, so memory does not grow with its
length; the values are those of pyloudnorm's Meter on the whole clip.

- Integrated_Loudness_LUFS: BS.1770 gated integrated loudness.
- Std_Dev_Loudness_LUFS: spread of the momentary (400 ms, 100 ms hop) block
  loudness over the blocks that pass the absolute gate (-70 LUFS) and a relative
  gate 20 LU below the integrated loudness, as EBU Tech 3342 does for loudness
  range, so pauses do not count as loudness variation.
- Full_Loudness_Contour_LUFS: the power mean of the momentary blocks centred in
  each of 20 equal time segments (the nearest block when a segment holds no block
  centre); a segment below the absolute gate (silence) is null.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from extractors.base import Clip, Extractor, Section, register

__all__ = ["LoudnessExtractor", "block_powers", "gated_loudness"]

_PROPERTIES = "agent_audio_properties"
_INTEGRATED = "Integrated_Loudness_LUFS"
_STD = "Std_Dev_Loudness_LUFS"
_CONTOUR = "Full_Loudness_Contour_LUFS"

_ABSOLUTE_GATE_LUFS = -70.0  # BS.1770: blocks below this are silence
_CHUNK_SAMPLES = 60 * 16000  # filtered a minute at a time


@dataclass
class Config:
    block_s: float = 0.4  # BS.1770 momentary gating block
    overlap: float = 0.75  # 100 ms hop between blocks
    std_relative_gate_lu: float = -20.0  # blocks this far below integrated loudness are pauses, left out of the spread
    contour_points: int = 20


def _power_mean_lufs(block_lufs: np.ndarray) -> float:
    return float(10.0 * np.log10(np.mean(np.power(10.0, block_lufs / 10.0))))


def block_powers(samples: np.ndarray, rate: int, block_s: float, overlap: float) -> np.ndarray:
    """Mean square of the K-weighted signal in every gating block, as pyloudnorm's Meter computes them
    (same filters, block bounds and sums), filtering the clip a chunk at a time."""
    from pyloudnorm.iirfilter import IIRfilter
    from scipy.signal import lfilter

    # BS.1770's K-weighting: a +4 dB shelf above 1.5 kHz, then a high-pass at 38 Hz.
    stages = [IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, rate, "high_shelf"), IIRfilter(0.0, 0.5, 38.0, rate, "high_pass")]
    states = [np.zeros(max(len(stage.a), len(stage.b)) - 1) for stage in stages]
    step = 1.0 - overlap
    count = int(np.round((len(samples) / rate - block_s) / (block_s * step))) + 1
    bounds = [(int(block_s * (j * step) * rate), int(block_s * (j * step + 1) * rate)) for j in range(count)]
    powers = np.zeros(count)
    held, held_from, block = np.zeros(0), 0, 0  # filtered samples from held_from on, not yet summed
    for start in range(0, len(samples), _CHUNK_SAMPLES):
        chunk = np.asarray(samples[start : start + _CHUNK_SAMPLES], dtype=np.float64)
        for k, stage in enumerate(stages):
            filtered, states[k] = lfilter(stage.b, stage.a, chunk, zi=states[k])
            chunk = stage.passband_gain * filtered
        held = np.concatenate([held, chunk])
        end = start + len(chunk)
        while block < count and (bounds[block][1] <= end or end == len(samples)):
            low, high = bounds[block]
            powers[block] = (1.0 / (block_s * rate)) * np.sum(np.square(held[low - held_from : high - held_from]))
            block += 1
        drop = (bounds[block][0] if block < count else end) - held_from
        held, held_from = held[drop:], held_from + drop
    return powers


def gated_loudness(powers: np.ndarray) -> tuple[float, np.ndarray]:
    """BS.1770 integrated loudness (LUFS; -inf when every block is silent) and each block's loudness."""
    with np.errstate(divide="ignore", invalid="ignore"):
        block_lufs = -0.691 + 10.0 * np.log10(powers)
        audible = block_lufs >= _ABSOLUTE_GATE_LUFS
        relative_gate = -0.691 + 10.0 * np.log10(np.mean(powers[audible])) - 10.0 if audible.any() else np.nan
        gated = (block_lufs > relative_gate) & (block_lufs > _ABSOLUTE_GATE_LUFS)
        integrated = -0.691 + 10.0 * np.log10(np.nan_to_num(np.mean(powers[gated]))) if gated.any() else -np.inf
    return float(integrated), block_lufs


@register
class LoudnessExtractor(Extractor):
    name = "loudness"
    version = "1"
    description = "BS.1770 integrated loudness, momentary-loudness spread and 20-point contour (pyloudnorm)"
    sample_rate = 16000
    outputs = tuple(f"{_PROPERTIES}.{key}" for key in (_INTEGRATED, _STD, _CONTOUR))
    libraries = ("pyloudnorm", "scipy", "numpy")
    Config = Config

    def load(self) -> None:
        # Imported where the extractor loads, so that worker processes forked after it inherit the
        # module: pyloudnorm imports scipy.signal, 0.7 s of CPU in every process that imports it.
        import pyloudnorm  # noqa: F401

    def extract_one(self, clip: Clip) -> Section:
        config: Config = self.config
        samples = clip.samples(self.sample_rate)
        duration_s = len(samples) / self.sample_rate
        values: dict[str, object] = {_INTEGRATED: None, _STD: None, _CONTOUR: None}
        reasons: dict[str, str] = {}

        def null(keys: tuple[str, ...], reason: str) -> Section:
            reasons.update({f"{_PROPERTIES}.{key}": reason for key in keys})
            return Section({_PROPERTIES: values}, reasons)

        if duration_s < config.block_s:
            return null(
                (_INTEGRATED, _STD, _CONTOUR),
                f"clip is {duration_s:.2f} s, shorter than the {config.block_s} s BS.1770 gating block",
            )

        powers = block_powers(samples, self.sample_rate, config.block_s, config.overlap)
        integrated, block_lufs = gated_loudness(powers)  # block_lufs: -inf for silent blocks
        if not np.isfinite(integrated):
            return null(
                (_INTEGRATED, _STD, _CONTOUR),
                f"silence: every {config.block_s} s block is below the {_ABSOLUTE_GATE_LUFS:.0f} LUFS absolute gate",
            )
        values[_INTEGRATED] = round(float(integrated), 2)

        relative_gate = integrated + config.std_relative_gate_lu
        gated = block_lufs[(block_lufs >= _ABSOLUTE_GATE_LUFS) & (block_lufs >= relative_gate)]
        if len(gated) >= 2:
            values[_STD] = round(float(np.std(gated)), 2)
        else:
            reasons[f"{_PROPERTIES}.{_STD}"] = (
                f"{len(gated)} loud enough {config.block_s} s block(s); a spread needs at least 2 "
                f"(clip of {duration_s:.2f} s)"
            )

        values[_CONTOUR] = self._contour(block_lufs, duration_s)
        return Section({_PROPERTIES: values}, reasons)

    def _contour(self, block_lufs: np.ndarray, duration_s: float) -> list[float | None]:
        config: Config = self.config
        hop_s = config.block_s * (1.0 - config.overlap)
        centres = np.arange(len(block_lufs)) * hop_s + config.block_s / 2.0
        edges = np.linspace(0.0, duration_s, config.contour_points + 1)
        contour: list[float | None] = []
        for start, end in zip(edges[:-1], edges[1:]):
            inside = (centres >= start) & (centres < end)
            if not inside.any():  # short clip: fewer blocks than segments
                inside = np.zeros(len(centres), dtype=bool)
                inside[int(np.argmin(np.abs(centres - (start + end) / 2.0)))] = True
            audible = block_lufs[inside]
            audible = audible[audible >= _ABSOLUTE_GATE_LUFS]
            contour.append(round(_power_mean_lufs(audible), 2) if len(audible) else None)
        return contour
