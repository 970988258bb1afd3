"""Whisper through faster-whisper (CTranslate2): the CPU default, float32 on CPU, fp16 on CUDA.

Windows arrive already cut by voice activity detection, so faster-whisper's own
VAD and no-speech skipping are off here: the gate is applied by the caller, the
same way for both backends. Decoding uses Whisper's temperature fallback
(extractors/_whisper_decoding.py), run here one temperature at a time so that
the attempt kept and its temperature are known.

CTranslate2 draws its samples from a generator that each worker thread seeds
once, from the global seed, when it first samples; a model's worker threads live
as long as the model. So the sampled temperatures of a window run on a model
loaded for that window, after the window's own seed is set: a few tenths of a
second for tiny.en, spent only on the windows that beam search could not pass.
Beam search at temperature 0 uses no randomness and runs on the model loaded once.

The encoder uses no randomness either, and both models are loaded from the same files with the same options:
so a window's audio is encoded once, and its sampled attempts decode that same encoder output (the encoder is
most of a window's cost: Whisper pads every window to 30 s).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path

import ctranslate2
import numpy as np

from extractors._whisper_decoding import Fallback, WindowTranscript, Word

__all__ = ["FasterWhisper"]


class FasterWhisper:
    name = "faster-whisper"

    def __init__(
        self,
        directory: Path,
        fallback: Fallback,
        device: str = "cpu",
        compute_type: str = "float32",
        beam_size: int = 5,
        num_threads: int = 0,
    ):
        # faster-whisper logs a line per clip at INFO, which floods the progress bar whenever
        # another library (funasr) has configured the root logger.
        logging.getLogger("faster_whisper").setLevel(logging.WARNING)
        kind, _, index = device.partition(":")
        self._load_args = dict(
            model_size_or_path=str(directory),
            device=kind,
            device_index=int(index or 0),
            compute_type=compute_type,
            # Two threads unless asked: the same count on every machine, whatever its cores (a thread count may
            # cut a sum differently), and never one (MKL takes another path, with other roundings, on one thread).
            cpu_threads=max(2, num_threads or 2),
            local_files_only=True,
        )
        self.model = self._load()
        self.beam_size = beam_size
        self.fallback = fallback

    def _load(self):
        from faster_whisper import WhisperModel

        return WhisperModel(**self._load_args)

    def supports_language(self, language: str | None) -> bool:
        return language is None or language in self.model.supported_languages

    @property
    def multilingual(self) -> bool:
        return bool(self.model.model.is_multilingual)

    def detect_languages(self, windows: list[np.ndarray]) -> list[dict[str, float]]:
        """Whisper's probability of every language it knows, for each window (its first 30 s)."""
        return [dict(self.model.detect_language(audio=np.asarray(w, dtype=np.float32))[2]) for w in windows]

    def transcribe(
        self, windows: list[np.ndarray], language: str | None, seeds: list[int], fallback: bool = True
    ) -> list[WindowTranscript]:
        # CTranslate2 batches inside one call only for chunks of one file; windows from
        # different clips go one at a time (on CPU, batching would not be faster anyway).
        return [
            self._transcribe_one(np.asarray(w, dtype=np.float32), language, seed, fallback)
            for w, seed in zip(windows, seeds)
        ]

    def _transcribe_one(self, audio: np.ndarray, language: str | None, seed: int, fallback: bool) -> WindowTranscript:
        attempts = []
        sampler = None
        encoded = _EncoderMemo()
        for temperature in self.fallback.temperatures if fallback else self.fallback.temperatures[:1]:
            if temperature > 0 and sampler is None:
                ctranslate2.set_random_seed(seed)
                sampler = self._load()  # new worker threads: their generator starts from this window's seed
            model = sampler if temperature > 0 else self.model
            with encoded.serving(model):
                attempt = self._decode(model, audio, language, temperature)
            if not self.fallback.needs_retry(attempt):
                return attempt
            attempts.append(attempt)
        return self.fallback.best_of_failed(attempts)

    def _decode(self, model, audio: np.ndarray, language: str | None, temperature: float) -> WindowTranscript:
        """One attempt at one temperature: beam search at 0, `best_of` samples above."""
        segments, info = model.transcribe(
            audio,
            language=language,
            task="transcribe",
            beam_size=self.beam_size,
            temperature=[temperature],
            compression_ratio_threshold=None,  # the fallback is run above, over the whole window
            log_prob_threshold=None,
            no_speech_threshold=None,  # the caller judges no-speech
            condition_on_previous_text=False,
            word_timestamps=True,
            vad_filter=False,
        )
        segments = list(segments)  # decoding happens while iterating
        words = [
            Word(w.word, float(w.start), float(w.end), float(w.probability))
            for segment in segments
            for w in segment.words or []
        ]
        tokens = sum(len(s.tokens) for s in segments)
        avg_logprob = sum(s.avg_logprob * len(s.tokens) for s in segments) / tokens if tokens else 0.0
        no_speech_prob = float(segments[0].no_speech_prob) if segments else 1.0
        text = "".join(s.text for s in segments).strip()
        # The worst piece of the window speaks for it.
        compression = max((float(s.compression_ratio) for s in segments), default=0.0)
        return WindowTranscript(
            text,
            words,
            info.language,
            no_speech_prob,
            float(avg_logprob),
            compression,
            temperature,
            tokens,
            tried_up_to=temperature,
        )


class _EncoderMemo:
    """The encoder outputs of one window's features, shared by the attempts at every temperature.

    faster-whisper encodes inside `transcribe` (once per 30 s of features); while `serving` a model, its
    `encode` returns the output already computed for the same features, by this model or another one
    loaded from the same files with the same options (the encoder draws no random numbers).
    """

    def __init__(self) -> None:
        self._outputs: dict[tuple[tuple[int, ...], str, bytes], ctranslate2.StorageView] = {}

    @contextlib.contextmanager
    def serving(self, model) -> Iterator[None]:
        encode = model.encode

        def memo_encode(features: np.ndarray) -> ctranslate2.StorageView:
            key = (features.shape, features.dtype.str, hashlib.sha256(features.tobytes()).digest())
            if key not in self._outputs:
                self._outputs[key] = encode(features)
            return self._outputs[key]

        model.encode = memo_encode
        try:
            yield
        finally:
            del model.encode  # the class's method again
