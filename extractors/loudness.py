"""Loudness cues after ITU-R BS.1770 (K-weighted, gated), through pyloudnorm.

Every clip is measured at 16 kHz, the 0-8 kHz band where speech carries its
energy, so answers delivered at different sample rates are compared on equal terms.

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

__all__ = ["LoudnessExtractor"]

_PROPERTIES = "agent_audio_properties"
_INTEGRATED = "Integrated_Loudness_LUFS"
_STD = "Std_Dev_Loudness_LUFS"
_CONTOUR = "Full_Loudness_Contour_LUFS"

_ABSOLUTE_GATE_LUFS = -70.0  # BS.1770: blocks below this are silence


@dataclass
class Config:
    block_s: float = 0.4  # BS.1770 momentary gating block
    overlap: float = 0.75  # 100 ms hop between blocks
    std_relative_gate_lu: float = -20.0  # blocks this far below integrated loudness are pauses, left out of the spread
    contour_points: int = 20


def _power_mean_lufs(block_lufs: np.ndarray) -> float:
    return float(10.0 * np.log10(np.mean(np.power(10.0, block_lufs / 10.0))))


@register
class LoudnessExtractor(Extractor):
    name = "loudness"
    version = "1"
    description = "BS.1770 integrated loudness, momentary-loudness spread and 20-point contour (pyloudnorm)"
    sample_rate = 16000
    outputs = tuple(f"{_PROPERTIES}.{key}" for key in (_INTEGRATED, _STD, _CONTOUR))
    Config = Config

    def load(self) -> None:
        # Imported where the extractor loads, so that worker processes forked after it inherit the
        # module: pyloudnorm imports scipy.signal, 0.7 s of CPU in every process that imports it.
        import pyloudnorm  # noqa: F401

    def extract_one(self, clip: Clip) -> Section:
        import pyloudnorm

        config: Config = self.config
        samples = np.asarray(clip.samples(self.sample_rate), dtype=np.float64)
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

        meter = pyloudnorm.Meter(self.sample_rate, block_size=config.block_s, overlap=config.overlap)
        integrated = meter.integrated_loudness(samples)
        block_lufs = np.asarray(meter.blockwise_loudness, dtype=np.float64)  # -inf for silent blocks
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
