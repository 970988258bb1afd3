"""Whisper through faster-whisper (CTranslate2): the CPU default, int8 on CPU, fp16 on CUDA.

Windows arrive already cut by voice activity detection, so faster-whisper's own
VAD and no-speech skipping are off here: the gate is applied by the caller, the
same way for both backends. Decoding uses Whisper's temperature fallback.
CTranslate2's sampler lives in the model's worker thread and takes the seed
once, when that thread first samples: a run that decodes the same clips in the
same order gives the same transcripts, but a window decoded twice in one
process may be sampled differently the second time.
"""
from __future__ import annotations

import logging
from pathlib import Path

import ctranslate2
import numpy as np

from extractors.asr import Fallback, WindowTranscript, Word

__all__ = ["FasterWhisper"]


class FasterWhisper:
    name = "faster-whisper"

    def __init__(
        self,
        directory: Path,
        fallback: Fallback,
        device: str = "cpu",
        compute_type: str = "int8",
        beam_size: int = 5,
        num_threads: int = 0,
    ):
        from faster_whisper import WhisperModel

        # faster-whisper logs a line per clip at INFO, which floods the progress bar whenever
        # another library (funasr) has configured the root logger.
        logging.getLogger("faster_whisper").setLevel(logging.WARNING)
        ctranslate2.set_random_seed(fallback.seed)  # before the worker thread starts sampling
        kind, _, index = device.partition(":")
        self.model = WhisperModel(
            str(directory),
            device=kind,
            device_index=int(index or 0),
            compute_type=compute_type,
            cpu_threads=num_threads,
            local_files_only=True,
        )
        self.beam_size = beam_size
        self.fallback = fallback

    def supports_language(self, language: str | None) -> bool:
        return language is None or language in self.model.supported_languages

    def transcribe(self, windows: list[np.ndarray], language: str | None) -> list[WindowTranscript]:
        # CTranslate2 batches inside one call only for chunks of one file; windows from
        # different clips go one at a time (on CPU, batching would not be faster anyway).
        return [self._transcribe_one(np.asarray(w, dtype=np.float32), language) for w in windows]

    def _transcribe_one(self, audio: np.ndarray, language: str | None) -> WindowTranscript:
        segments, info = self.model.transcribe(
            audio,
            language=language,
            task="transcribe",
            beam_size=self.beam_size,
            temperature=list(self.fallback.temperatures),
            compression_ratio_threshold=self.fallback.compression_ratio_threshold,
            log_prob_threshold=self.fallback.logprob_threshold,
            no_speech_threshold=None,  # the caller judges no-speech; it must not stop the fallback
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
        avg_logprob = (
            sum(s.avg_logprob * len(s.tokens) for s in segments) / tokens if tokens else 0.0
        )
        no_speech_prob = float(segments[0].no_speech_prob) if segments else 1.0
        text = "".join(s.text for s in segments).strip()
        # The worst piece of the window speaks for it; its temperature is the one its text came from.
        compression = max((float(s.compression_ratio) for s in segments), default=0.0)
        temperature = max((float(s.temperature or 0.0) for s in segments), default=0.0)
        return WindowTranscript(
            text, words, info.language, no_speech_prob, float(avg_logprob), compression, temperature, tokens
        )
