"""Speech quality with DNSMOS: P.835 (signal, background, overall) and P.808 (overall).

The extractor: where the ONNX files come from, which clips hold speech to rate, how
clips are grouped into runs, and what goes into the blueprint. The networks and their arithmetic (windows, features,
the shared convolution front-end, calibration) are in `extractors/_dnsmos_net.py`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extractors._dnsmos_net import (
    INPUT_LENGTH_S,
    LAYOUTS,
    SAMPLE_RATE,
    WINDOW_SAMPLES,
    DnsmosScorer,
    DnsmosScores,
    score_one_window_at_a_time,
    tile_to_window,
    window_starts,
)
from extractors.base import Clip, ClipError, Extractor, ExtractorUnavailable, ModelInfo, Section, register

__all__ = [
    "DnsmosExtractor",
    "DnsmosScorer",
    "DnsmosScores",
    "SCORE_DECIMALS",
    "SCORE_TOLERANCE",
    "loudest_block_dbfs",
    "no_speech",
    "speech_seconds",
    "score_one_window_at_a_time",
    "to_section",
    "tile_to_window",
    "window_starts",
]

# ---------------------------------------------------------------------------------------
# The extractor

_SECTION = "agent_audio_quality"
_KEYS = {
    "signal": "DNSMOS_Personalized_Signal_Quality",
    "background": "DNSMOS_Personalized_Background_Quality",
    "overall": "DNSMOS_Personalized_Overall_Quality",
    "p808": "P808_Overall_Quality",
}
_PLAIN_KEYS = {
    "plain_signal": "DNSMOS_Signal_Quality",
    "plain_background": "DNSMOS_Background_Quality",
    "plain_overall": "DNSMOS_Overall_Quality",
}
_CARD = "dnsmos"
# How far a stored score may be from the same clip's score on another CPU: the NCHWc layout sums by the CPU's
# blocks (raw scores then differ by about 1e-6), and a score stored at 4 decimals moves by at most one unit.
SCORE_TOLERANCE = 1e-4
SCORE_DECIMALS = 4


@dataclass
class Config:
    non_personalized: bool = False  # also score with the non-personalized P.835 model (DNSMOS_*_Quality keys)
    # Only speech is rated (see `no_speech`): a clip whose loudest 400 ms is below this level is silence...
    silence_dbfs: float = -70.0
    # ...and one where Silero VAD finds less speech than this (at this speech probability) holds no speech.
    min_speech_s: float = 0.25
    vad_threshold: float = 0.5
    vad_lowpass_hz: float | None = 4000.0  # the detector hears the band that carries speech (None: all of it)
    # Clips are scored in groups of about this much audio, and one ONNX run holds this much
    # window audio: 20 s, two windows of 9.01 s. On a CPU more gains no speed and costs memory
    # (8 windows: 0.6 GB more); a GPU is kept busier with more (--set dnsmos.batch_seconds=72).
    batch_seconds: float = 20.0
    num_threads: int = 0  # ONNX Runtime threads; 0 = all cores
    # "nchwc": onnxruntime's NCHWc layout, about 1.6 times faster on a CPU than the reference; its convolutions
    # sum by blocks of 16 channels on AVX-512 CPUs and of 8 on others, so scores agree within SCORE_TOLERANCE
    # between such CPUs (the blocks are recorded in the section's numerics). "reference": onnxruntime's graph
    # optimisation kept below its layout level, the same sums on every CPU of the numeric class
    # (docs/reproducibility.md).
    layout: str = "nchwc"
    model_path: str | None = None  # folder with the speechmos layout; default: the installed speechmos package


@register
class DnsmosExtractor(Extractor):
    name = "dnsmos"
    version = "6"
    description = "DNSMOS P.835 personalized signal/background/overall and P.808 overall quality (MOS 1-5)"
    sample_rate = SAMPLE_RATE
    uses_gpu = True  # with onnxruntime-gpu installed; otherwise it runs on the CPU and says so
    batched = True
    outputs = tuple(f"{_SECTION}.{key}" for key in (*_KEYS.values(), *_PLAIN_KEYS.values()))
    libraries = ("onnxruntime", "numpy", "faster-whisper")  # faster-whisper: the speech gate's Silero VAD
    Config = Config

    def __init__(self, config: Any = None, device: str = "cpu"):
        super().__init__(config, device)
        if self.config.layout not in LAYOUTS:
            raise ValueError(f"dnsmos.layout={self.config.layout!r}; expected one of: {', '.join(LAYOUTS)}")
        self.scorer: DnsmosScorer | None = None
        self._model_dir: Path | None = None
        self._revision: str | None = None

    def model(self) -> ModelInfo:
        return ModelInfo(
            id="microsoft/DNSMOS (speechmos 0.0.1.1)",
            revision=self._card_revision(),
            source=str(self._model_dir) if self.scorer else None,
        )

    def _card_revision(self) -> str | None:
        if self._revision is None:
            try:
                from extractors.models import load_card

                digests = load_card(_CARD).sha256
                self._revision = hashlib.sha256("".join(digests[f] for f in sorted(digests)).encode()).hexdigest()[:12]
            except (KeyError, OSError, ValueError):
                return None
        return self._revision

    def _find_model_dir(self) -> Path:
        from extractors.models import load_card, resolve_model, verify_sha256

        card = load_card(_CARD)
        env_dir = Path(os.environ["TRACE_MODELS_DIR"]) / _CARD if os.environ.get("TRACE_MODELS_DIR") else None
        if self.config.model_path or (env_dir is not None and env_dir.is_dir()):
            return resolve_model(card, self.config.model_path, "dnsmos.model_path")
        spec = importlib.util.find_spec("speechmos")
        if spec is None or not spec.submodule_search_locations:
            raise ExtractorUnavailable(
                "DNSMOS weights come from the speechmos package, which is not installed. To fix: "
                "pip install speechmos==0.0.1.1, or pass --set dnsmos.model_path=DIR holding "
                f"{', '.join(card.files)}"
            )
        directory = Path(list(spec.submodule_search_locations)[0])
        missing = [f for f in card.files if not (directory / f).is_file()]
        if missing:
            raise ExtractorUnavailable(
                f"the speechmos package at {directory} lacks {', '.join(missing)}. To fix: "
                "pip install --force-reinstall speechmos==0.0.1.1, or pass --set dnsmos.model_path=DIR"
            )
        verify_sha256(directory, card)
        return directory

    def load(self) -> None:
        if self.scorer is not None:
            return
        if importlib.util.find_spec("onnxruntime") is None:
            raise ExtractorUnavailable("DNSMOS needs onnxruntime. To fix: pip install onnxruntime")
        try:
            from faster_whisper.vad import get_vad_model

            get_vad_model()
        except (ImportError, RuntimeError) as e:
            raise ExtractorUnavailable(
                f"DNSMOS rates speech only, found by the Silero VAD that ships with faster-whisper ({e}). "
                "To fix: pip install faster-whisper"
            ) from e
        self._model_dir = self._find_model_dir()
        windows_per_run = max(1, int(self.config.batch_seconds // INPUT_LENGTH_S))
        try:
            self.scorer = DnsmosScorer(
                self._model_dir,
                self.config.num_threads,
                windows_per_run,
                self.config.non_personalized,
                self.device,
                self.config.layout,
            )
        except Exception as e:  # onnxruntime raises its own error types for unreadable graphs
            raise ExtractorUnavailable(
                f"DNSMOS models in {self._model_dir} could not be loaded ({type(e).__name__}: {e}). To fix: "
                "pip install --force-reinstall speechmos==0.0.1.1 onnxruntime, or pass --set dnsmos.model_path=DIR"
            ) from e
        self.device = self.scorer.device

    def numerics(self) -> dict:
        numerics = super().numerics()
        if self.device != "cpu":
            return numerics
        if self.config.layout == "reference":
            numerics["onnxruntime_layout"] = "reference: convolutions as matrix products, the class's sums"
        elif platform.machine().lower() in ("x86_64", "amd64"):  # MLAS blocks by its vector width
            block = 16 if numerics.get("kernels", {}).get("onnxruntime") == "AVX512F" else 8
            numerics["onnxruntime_layout"] = f"NCHWc, convolutions summed by blocks of {block} channels"
        else:
            numerics["onnxruntime_layout"] = "NCHWc, convolutions summed by the blocks of this CPU's kernels"
        return numerics

    @property
    def _loaded(self) -> DnsmosScorer:
        if self.scorer is None:
            raise RuntimeError("dnsmos: the scorer is used before load()")
        return self.scorer

    def extract(self, clips: list[Clip]) -> list[Section | ClipError]:
        self.load()
        results: list[Section | ClipError | None] = [None] * len(clips)
        samples: dict[int, np.ndarray] = {}
        for i, clip in enumerate(clips):
            try:
                checked = _checked_samples(clip)
                reason = no_speech(checked, self.config)
            except ClipError as e:
                results[i] = e
                continue
            if reason is None:
                samples[i] = checked
            else:
                results[i] = self._nothing_to_rate(reason)
        for batch in self._batches(samples):
            scored: list[DnsmosScores | ClipError]
            try:
                scored = list(self._loaded.score([samples[i] for i in batch]))
            except Exception:  # find the clip that breaks the stacked run; the others still get scores
                scored = [self._score_alone(samples[i]) for i in batch]
            for i, scores in zip(batch, scored):
                results[i] = scores if isinstance(scores, ClipError) else to_section(scores)
        return [r if r is not None else ClipError("dnsmos: no result (a bug)") for r in results]

    def _nothing_to_rate(self, reason: str) -> Section:
        keys = list(_KEYS.values()) + (list(_PLAIN_KEYS.values()) if self.config.non_personalized else [])
        return Section({_SECTION: {key: None for key in keys}}, {f"{_SECTION}.{key}": reason for key in keys})

    def _score_alone(self, samples: np.ndarray) -> DnsmosScores | ClipError:
        try:
            return self._loaded.score([samples])[0]
        except Exception as e:
            return ClipError(f"DNSMOS failed: {type(e).__name__}: {e}")

    def _batches(self, samples: dict[int, np.ndarray]) -> list[list[int]]:
        """Clip indices grouped so each group holds about batch_seconds of (tiled) audio."""
        batches: list[list[int]] = []
        seconds = 0.0
        for i in sorted(samples, key=lambda i: len(samples[i])):
            duration = max(len(samples[i]), WINDOW_SAMPLES) / SAMPLE_RATE
            if batches and seconds + duration <= self.config.batch_seconds:
                batches[-1].append(i)
                seconds += duration
            else:
                batches.append([i])
                seconds = duration
        return batches


def _checked_samples(clip: Clip) -> np.ndarray:
    try:
        samples = np.asarray(clip.samples(SAMPLE_RATE), dtype=np.float32)
    except Exception as e:
        raise ClipError(f"no 16 kHz samples: {type(e).__name__}: {e}") from e
    if samples.ndim != 1 or len(samples) == 0:
        raise ClipError(f"expected mono samples, got shape {samples.shape}")
    if not np.all(np.isfinite(samples)):
        raise ClipError("samples contain NaN or infinity")
    return samples


# ---------------------------------------------------------------------------------------
# Speech to rate

_LEVEL_BLOCK = SAMPLE_RATE * 4 // 10  # 400 ms, the BS.1770 gating block
_LEVEL_HOP = SAMPLE_RATE // 10


def no_speech(samples: np.ndarray, config: Config) -> str | None:
    """Why a clip holds no speech to rate, or None when it holds some.

    The networks score anything: digital silence gets P.808 2.3 and background 4.1,
    and noise alone gets scores too, which would read as real ratings. Speech here is
    sound above silence (its loudest 400 ms at `silence_dbfs` or more, the absolute
    gate of BS.1770 on the unweighted signal) in which Silero VAD (the model that
    ships inside faster-whisper, run on the CPU) finds at least `min_speech_s` of
    speech. It is trained on speech in noise, and hears the clip low-passed at
    `vad_lowpass_hz` (4 kHz), the band that carries speech: half of white noise's
    power lies above it. Read speech of 5-7 s under white noise at -10 dB SNR then
    still gives 2.4-4.1 s of speech (a sentence of 3 s gives none), while white, pink
    or brown noise alone gives none (speech probability below 0.2).
    """
    if not samples.any():
        return "digital silence: no speech to rate"
    level = loudest_block_dbfs(samples)
    if level < config.silence_dbfs:
        return (
            f"silence: the loudest 400 ms is at {level:.1f} dBFS, below {config.silence_dbfs:g} dBFS: no speech to rate"
        )
    found = speech_seconds(samples, config.vad_threshold, config.vad_lowpass_hz)
    if found < config.min_speech_s:
        return (
            f"no speech: voice activity detection (Silero VAD) finds {found:.2f} s of speech, "
            f"less than {config.min_speech_s:g} s (noise or other sound only)"
        )
    return None


def speech_seconds(samples: np.ndarray, threshold: float, lowpass_hz: float | None = None) -> float:
    """Seconds of speech Silero VAD finds (frames of 32 ms at speech probability `threshold` or more),
    in the clip low-passed at `lowpass_hz` (8th-order Butterworth) when given."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    if lowpass_hz is not None:
        from scipy.signal import butter, sosfilt

        samples = sosfilt(butter(8, lowpass_hz, "lowpass", fs=SAMPLE_RATE, output="sos"), samples)
    options = VadOptions(threshold=threshold, speech_pad_ms=0)
    spans = get_speech_timestamps(np.asarray(samples, dtype=np.float32), options, sampling_rate=SAMPLE_RATE)
    return sum(span["end"] - span["start"] for span in spans) / SAMPLE_RATE


def loudest_block_dbfs(samples: np.ndarray) -> float:
    """Level of the loudest 400 ms (mean square, 100 ms apart; the whole clip when shorter) in dB re full scale."""
    hops = len(samples) // _LEVEL_HOP
    if hops < _LEVEL_BLOCK // _LEVEL_HOP:
        power = float(np.mean(np.square(samples, dtype=np.float64)))
    else:
        energy = np.empty(hops)
        for i in range(0, hops, 600):  # a minute at a time, so memory does not grow with the clip
            frames = (
                samples[i * _LEVEL_HOP : min(i + 600, hops) * _LEVEL_HOP].astype(np.float64).reshape(-1, _LEVEL_HOP)
            )
            energy[i : i + len(frames)] = np.einsum("ij,ij->i", frames, frames)
        power = float(np.convolve(energy, np.ones(_LEVEL_BLOCK // _LEVEL_HOP), "valid").max()) / _LEVEL_BLOCK
    return 10.0 * np.log10(max(power, 1e-20))


def to_section(scores: DnsmosScores) -> Section:
    """The blueprint fragment: scores rounded to SCORE_DECIMALS, a non-finite one null with its reason."""
    values: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    keys = dict(_KEYS, **(_PLAIN_KEYS if scores.plain_signal is not None else {}))
    for field_name, key in keys.items():
        value = getattr(scores, field_name)
        if value is not None and np.isfinite(value):
            values[key] = round(value, SCORE_DECIMALS)
        else:
            values[key] = None
            reasons[f"{_SECTION}.{key}"] = "the DNSMOS network returned a non-finite score"
    return Section({_SECTION: values}, reasons)
