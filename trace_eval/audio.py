"""Audio decoding: every clip is decoded once and resampled once per rate asked for."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["AudioLoadingError", "Audio", "load_audio", "load_channels", "repeat_to_length", "sha256_file"]

# Shorter than this there is nothing any extractor can measure.
MIN_DURATION_S = 0.02


class AudioLoadingError(Exception):
    """A file that cannot be turned into samples: missing, empty, corrupt, not audio, NaN."""


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@dataclass
class Audio:
    """Mono float32 samples in [-1, 1] at their native rate, with cached resamplings."""

    samples: np.ndarray
    sample_rate: int
    channels: int = 1
    _resampled: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate

    def at(self, rate: int) -> np.ndarray:
        """Samples at `rate` Hz; computed once per rate (soxr, high quality)."""
        if rate == self.sample_rate:
            return self.samples
        if rate not in self._resampled:
            import soxr

            self._resampled[rate] = soxr.resample(self.samples, self.sample_rate, rate, quality="HQ").astype(
                np.float32, copy=False
            )
        return self._resampled[rate]


def _decode_soundfile(path: Path) -> tuple[np.ndarray, int]:
    import soundfile as sf

    data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    return data, sr


def _decode_av(path: Path) -> tuple[np.ndarray, int]:
    """Fallback for containers libsndfile does not read (m4a, some mp3)."""
    try:
        import av
    except ImportError as e:  # pragma: no cover - av is a declared dependency
        raise AudioLoadingError(f"{path}: format not readable by libsndfile and PyAV is not installed") from e
    with av.open(str(path)) as container:
        stream = next(iter(container.streams.audio), None)
        if stream is None:
            raise AudioLoadingError(f"{path}: no audio stream")
        frames = []
        for frame in container.decode(stream):
            array = frame.to_ndarray()  # planar: (channels, n); packed: (1, n * channels), interleaved
            if not frame.format.is_planar:
                array = array.reshape(-1, len(frame.layout.channels)).T
            frames.append(array)
        sr = stream.rate
    if not frames:
        raise AudioLoadingError(f"{path}: no audio frames")
    data = np.concatenate(frames, axis=1).T.astype(np.float32)  # (samples, channels)
    if np.issubdtype(frames[0].dtype, np.integer):
        data /= float(np.iinfo(frames[0].dtype).max)
    return data, sr


def load_audio(path: str | Path) -> Audio:
    """Decode wav/flac/ogg/mp3 (any rate, any channel count) to mono float32.

    Raises AudioLoadingError with the reason for anything that is not usable audio.
    """
    data, sr = load_channels(path)
    channels = data.shape[1]
    mono = data.mean(axis=1, dtype=np.float32) if channels > 1 else data[:, 0]
    if len(mono) / sr < MIN_DURATION_S:
        raise AudioLoadingError(f"{path}: too short ({len(mono) / sr * 1000:.1f} ms)")
    return Audio(np.ascontiguousarray(mono, dtype=np.float32), int(sr), channels)


def load_channels(path: str | Path) -> tuple[np.ndarray, int]:
    """Decode an audio file keeping its channels apart: float32 samples of shape (n, channels), and the rate.

    Raises AudioLoadingError with the reason for anything that is not usable audio."""
    path = Path(path)
    if not path.is_file():
        raise AudioLoadingError(f"{path}: file not found")
    if path.stat().st_size == 0:
        raise AudioLoadingError(f"{path}: empty file")
    try:
        data, sr = _decode_soundfile(path)
    except Exception as sf_error:  # libsndfile raises a generic error for every kind of bad input
        try:
            data, sr = _decode_av(path)
        except AudioLoadingError:
            raise
        except Exception:
            raise AudioLoadingError(f"{path}: not decodable audio ({sf_error})") from sf_error
    if data.size == 0:
        raise AudioLoadingError(f"{path}: no samples")
    if not np.all(np.isfinite(data)):
        raise AudioLoadingError(f"{path}: samples contain NaN or infinity")
    return np.ascontiguousarray(data, dtype=np.float32), int(sr)


def repeat_to_length(samples: np.ndarray, min_samples: int) -> np.ndarray:
    """Tile a too-short clip up to `min_samples` rather than pad it with silence, which would
    change its statistics (for models whose convolutions need a minimum input length)."""
    if len(samples) >= min_samples:
        return samples
    return np.resize(samples, min_samples).astype(np.float32, copy=False)
