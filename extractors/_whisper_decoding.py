"""What the ASR extractor and its Whisper backends share: the window result and the fallback.

Both backends (extractors/_whisper_ct2.py, extractors/_whisper_hf.py) import from here,
and so does extractors/asr.py, which imports the backends: each dependency points one way.

The fallback is Whisper's: a window is decoded at temperature 0 (beam search, no
randomness), and again at rising temperatures while its text loops (compression
ratio above the threshold) or its average log-probability is too low. Sampling is
seeded per window, from the clip's audio hash and the window's place in it
(`window_seed`), so a window's transcript does not depend on what else was in its
batch, on the engine, or on the order the windows were decoded in. When no
temperature passes, the attempt kept is the most probable one that does not loop
(what openai-whisper and faster-whisper keep), and the reported temperature is that
attempt's own.

Every decision is taken on the numbers as a blueprint stores them (`stored`: 3 decimals), never on a last
bit: two attempts that store the same average log-probability tie, and the tie goes to the lower
temperature; an attempt is retried when its stored log-probability is below the threshold.
"""

from __future__ import annotations

import dataclasses
import hashlib
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DECIMALS", "Fallback", "WindowTranscript", "Word", "compression_ratio", "stored", "window_seed"]

DECIMALS = 3  # of the decoding numbers in a blueprint (transcript_quality)


def stored(value: float) -> float:
    """A decoding number as the blueprint stores it: what decisions compare."""
    return round(value, DECIMALS)


@dataclass(frozen=True)
class Word:
    word: str
    start: float  # seconds from the start of the window (of the clip, once placed)
    end: float
    probability: float


@dataclass
class WindowTranscript:
    """What a backend returns for one window of audio."""

    text: str
    words: list[Word]
    language: str | None
    no_speech_prob: float
    avg_logprob: float
    compression_ratio: float  # of the text (gzip), as Whisper computes it
    temperature: float  # the temperature of the attempt kept: 0 when beam search passed
    tokens: int  # text tokens decoded (weights the average log-probability across windows)
    tried_up_to: float = 0.0  # the highest temperature tried: above `temperature` when no attempt passed


def compression_ratio(text: str) -> float:
    """Whisper's repetition measure: text bytes over their zlib-compressed bytes."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def window_seed(seed: int, audio_sha256: str, start_sample: int, end_sample: int) -> int:
    """The sampling seed of one window: the configured seed, the clip's audio and where the window lies in it."""
    key = f"{seed}:{audio_sha256}:{start_sample}:{end_sample}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "little") & 0x7FFFFFFF


class WhisperBackend(Protocol):
    """What `asr` asks of a backend (CTranslate2 in _whisper_ct2, transformers in _whisper_hf)."""

    @property
    def multilingual(self) -> bool: ...  # whether it knows other languages than English (and can tell them apart)

    def supports_language(self, language: str | None) -> bool: ...

    # Each window's language probabilities, from Whisper's language token.
    def detect_languages(self, windows: list[np.ndarray]) -> list[dict[str, float]]: ...

    # The window decoded by beam search in each language, without timestamps or words (the check of an unsure
    # language token): text, tokens and their average log-probability; at most `max_tokens` tokens each.
    def decode_in_languages(
        self, window: np.ndarray, languages: list[str], max_tokens: int
    ) -> list[WindowTranscript]: ...

    def transcribe(
        self,
        windows: list[np.ndarray],
        language: str | None,
        seeds: list[int],
        fallback: bool = True,
        max_tokens: int | None = None,
    ) -> list[WindowTranscript]: ...  # fallback=False: the first temperature only (beam search); max_tokens: a cap


@dataclass(frozen=True)
class Fallback:
    """How a backend decodes one window: Whisper's temperature fallback, seeded per window."""

    temperatures: tuple[float, ...]
    compression_ratio_threshold: float
    logprob_threshold: float
    seed: int

    @property
    def sampled(self) -> tuple[float, ...]:
        """The temperatures tried after beam search, in order."""
        return tuple(t for t in self.temperatures if t > 0)

    def loops(self, attempt: WindowTranscript) -> bool:
        return stored(attempt.compression_ratio) > self.compression_ratio_threshold

    def needs_retry(self, attempt: WindowTranscript) -> bool:
        return self.loops(attempt) or stored(attempt.avg_logprob) < self.logprob_threshold

    def best_of_failed(self, attempts: list[WindowTranscript]) -> WindowTranscript:
        """When every attempt failed: the most probable one that does not loop (else of all); of attempts that
        store the same average log-probability, the one at the lowest temperature."""
        not_looping = [a for a in attempts if not self.loops(a)]
        kept = max(not_looping or attempts, key=lambda a: (stored(a.avg_logprob), -a.temperature))
        return dataclasses.replace(kept, tried_up_to=max(a.temperature for a in attempts))
