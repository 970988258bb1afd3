"""Whisper through faster-whisper (CTranslate2): the CPU default, fp16 on CUDA.

Windows arrive already cut by voice activity detection, so faster-whisper's own
VAD and no-speech skipping are off here: the gate is applied by the caller, the
same way for both backends. Decoding uses Whisper's temperature fallback
(extractors/_whisper_decoding.py), run here one temperature at a time so that
the attempt kept and its temperature are known.

What makes it fast without making a window's transcript depend on anything but its audio:

- the encoder hears the window and `encoder_padding_s` of silence after it, not the window padded to
  Whisper's 30 s (CTranslate2 takes any length up to 30 s): a 4 s answer costs a sixth of the encoder
  passes it cost, and its beam search attends to a sixth of the frames;
- a window's audio is encoded once: its language token, the check of an unsure token's first guesses and
  the attempts at every temperature decode the same encoder output (the encoder draws no random numbers, and
  the models that decode them load the same files with the same options);
- windows are decoded several at a time, each on one thread of its own (`workers`, by default one per
  core): a window's arithmetic is the same whatever runs beside it and however many cores the machine has
  (no thread count cuts its sums);
- on the CPU, int8 weights and activations: the matrix products are exact integer sums, the same in every
  GEMM kernel and for every batch, and faster than float32 ones (extractors/numerics.py pins the rest).

CTranslate2 draws its samples from a generator that each worker thread seeds
once, from the global seed, when it first samples; a model's worker threads live
as long as the model. So the sampled temperatures of a window run on a model
loaded for that window, after the window's own seed is set, one window at a time
(the seed is global): a few tenths of a second for tiny.en, spent only on the
windows that beam search could not pass. Beam search at temperature 0 uses no
randomness and runs on the model loaded once.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ctranslate2
import numpy as np

from extractors._whisper_decoding import Fallback, WindowTranscript, Word, compression_ratio

__all__ = ["FasterWhisper", "encoder_frames"]

FRAMES_PER_S = 100  # Whisper's log-mel frames: one every 10 ms
SAMPLES_PER_FRAME = 160
MAX_FRAMES = 3000  # Whisper's input: 30 s


def encoder_frames(samples: int, padding_s: float | None, sample_rate: int = 16000) -> int:
    """The log-mel frames the encoder hears for a window of `samples`: its own and `padding_s` of padding
    after them, in whole seconds (None: Whisper's 30 s)."""
    if padding_s is None:
        return MAX_FRAMES
    seconds = math.ceil(samples / sample_rate + padding_s - 1e-9)
    return min(MAX_FRAMES, seconds * FRAMES_PER_S)


def _cores() -> int:
    """The cores this process may use: OMP_NUM_THREADS where a scheduler sets it (Ray does, to an actor's CPUs),
    else the CPUs it may run on."""
    hint = os.environ.get("OMP_NUM_THREADS", "")
    if hint.isdigit() and int(hint) > 0:
        return int(hint)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_WINDOW = threading.local()  # the window a thread is decoding: its encoder frames


class _Encodings:
    """The latest encoder outputs, by model files and features, up to `frames` log-mel frames in all (300 s:
    about 30 MB for Whisper base): a window's language token, the check of its first guesses and its
    attempts at every temperature decode one encoding, whichever worker thread decodes them (the encoder
    draws no random numbers, and models that load the same files with the same options encode alike)."""

    def __init__(self, frames: int) -> None:
        self.budget = frames
        self.kept: OrderedDict[tuple, tuple[int, ctranslate2.StorageView]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple, encode) -> ctranslate2.StorageView:
        with self.lock:
            if key in self.kept:
                self.kept.move_to_end(key)
                return self.kept[key][1]
        output = encode()  # outside the lock: other threads encode meanwhile
        with self.lock:
            self.kept[key] = (key[1][-1], output)
            while sum(frames for frames, _ in self.kept.values()) > self.budget and len(self.kept) > 1:
                self.kept.popitem(last=False)
        return output


_ENCODED = _Encodings(300 * FRAMES_PER_S)


def _model_class():
    from faster_whisper import WhisperModel

    class WindowModel(WhisperModel):
        """faster-whisper's model, whose encoder hears only the frames of the window being decoded (the
        features it is given are padded to 30 s) and keeps its output for the window's other decodings."""

        def __init__(self, model_size_or_path: str, **kwargs):
            super().__init__(model_size_or_path, **kwargs)
            self.files = model_size_or_path

        def encode(self, features: np.ndarray) -> ctranslate2.StorageView:
            window = getattr(_WINDOW, "current", None)
            if window is None:
                return super().encode(features)
            features = features[..., : window.frames]
            key = (self.files, features.shape, hashlib.sha256(np.ascontiguousarray(features).tobytes()).digest())
            return _ENCODED.get(key, lambda: super(WindowModel, self).encode(features))

    return WindowModel


class _Window:
    def __init__(self, frames: int) -> None:
        self.frames = frames


@contextlib.contextmanager
def _decoding(frames: int) -> Iterator[None]:
    _WINDOW.current = _Window(frames)
    try:
        yield
    finally:
        _WINDOW.current = None


class FasterWhisper:
    name = "faster-whisper"

    def __init__(
        self,
        directory: Path,
        fallback: Fallback,
        device: str = "cpu",
        compute_type: str = "int8",
        beam_size: int = 5,
        workers: int = 0,
        encoder_padding_s: float | None = 5.0,
    ):
        # faster-whisper logs a line per clip at INFO, which floods the progress bar whenever
        # another library (funasr) has configured the root logger.
        logging.getLogger("faster_whisper").setLevel(logging.WARNING)
        kind, _, index = device.partition(":")
        on_cpu = kind == "cpu"
        self.workers = max(1, workers or _cores()) if on_cpu else 1
        self._load_args = dict(
            model_size_or_path=str(directory),
            device=kind,
            device_index=int(index or 0),
            compute_type=compute_type,
            # One thread per window: no thread count cuts a window's sums, whatever the machine's cores.
            cpu_threads=1,
            num_workers=self.workers,
            local_files_only=True,
        )
        self.model = self._load()
        self.beam_size = beam_size
        self.fallback = fallback
        self.encoder_padding_s = encoder_padding_s
        self._sampling = threading.Lock()  # CTranslate2's seed is global: one window samples at a time

    def _load(self, **overrides):
        return _model_class()(**{**self._load_args, **overrides})

    def supports_language(self, language: str | None) -> bool:
        return language is None or language in self.model.supported_languages

    @property
    def multilingual(self) -> bool:
        return bool(self.model.model.is_multilingual)

    def detect_languages(self, windows: list[np.ndarray]) -> list[dict[str, float]]:
        """Whisper's probability of every language it knows, for each window (its first 30 s), `workers`
        windows at a time. The encoder hears the window as its decoding does (its own frames and
        `encoder_padding_s`: a fifth of the cost on a 4 s answer), and the check of an unsure token decodes from
        the same encoding."""
        audio = [np.asarray(w, dtype=np.float32) for w in windows]
        if self.workers == 1 or len(audio) == 1:
            return [self._detect_one(a) for a in audio]
        with ThreadPoolExecutor(self.workers, thread_name_prefix="whisper") as pool:
            return list(pool.map(self._detect_one, audio))

    def _detect_one(self, audio: np.ndarray) -> dict[str, float]:
        frames, padded = self._padded(audio)
        with _decoding(frames):
            return dict(self.model.detect_language(audio=padded)[2])

    def decode_in_languages(self, audio: np.ndarray, languages: list[str], max_tokens: int) -> list[WindowTranscript]:
        """The window decoded by beam search in each language, without timestamps or words, all languages in one
        batch over the window's one encoding (the check of an unsure language token). Each language's result is
        the same as alone: the hypotheses of a batch share no arithmetic (int8 products quantised row by row,
        attention and normalisation per hypothesis)."""
        from faster_whisper.audio import pad_or_trim
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        frames, padded = self._padded(np.asarray(audio, dtype=np.float32))
        features = pad_or_trim(self.model.feature_extractor(padded)[..., :MAX_FRAMES])  # as the token read it
        with _decoding(frames):
            encoding = self.model.encode(features)
        if encoding.device != "cpu":  # numpy reads host memory; generate moves the batch to the model's device
            encoding = encoding.to_device(ctranslate2.Device.cpu)
        batch = ctranslate2.StorageView.from_array(np.repeat(np.asarray(encoding), len(languages), axis=0))
        # An English-only model (tiny.en) takes no language or task token.
        multilingual = self.multilingual
        tokenizers = [
            Tokenizer(self.model.hf_tokenizer, multilingual, *(("transcribe", c) if multilingual else ()))
            for c in languages
        ]
        prompts = [[*t.sot_sequence, t.no_timestamps] for t in tokenizers]
        results = self.model.model.generate(
            batch,
            prompts,
            beam_size=self.beam_size,
            max_length=len(prompts[0]) + max_tokens,
            return_scores=True,
            suppress_blank=True,
            suppress_tokens=list(get_suppressed_tokens(tokenizers[0], [-1])),
        )
        transcripts = []
        for language, tokenizer, result in zip(languages, tokenizers, results):
            tokens = [t for t in result.sequences_ids[0] if t < tokenizer.eot]
            # CTranslate2's score is the sequence's log-probability (its end included) over its token count.
            cumulative = result.scores[0] * len(result.sequences_ids[0])
            text = tokenizer.decode(tokens).strip()
            transcripts.append(
                WindowTranscript(
                    text,
                    [],
                    language,
                    0.0,
                    cumulative / max(1, len(tokens)),
                    compression_ratio(text),
                    0.0,
                    len(tokens),
                )
            )
        return transcripts

    def _padded(self, audio: np.ndarray) -> tuple[int, np.ndarray]:
        """The encoder frames a window is heard in, and the window with digital silence up to them (the silence
        Whisper's own padding sounds like)."""
        frames = encoder_frames(len(audio), self.encoder_padding_s)
        if frames < MAX_FRAMES:
            audio = np.concatenate([audio, np.zeros(frames * SAMPLES_PER_FRAME - len(audio), np.float32)])
        return frames, audio

    def transcribe(
        self,
        windows: list[np.ndarray],
        language: str | None,
        seeds: list[int],
        fallback: bool = True,
        max_tokens: int | None = None,
    ) -> list[WindowTranscript]:
        """Each window alone (its own encoder input, its own seed), `workers` windows at a time; without
        `fallback`, beam search alone; at most `max_tokens` tokens a window (None: Whisper's own limit)."""
        audio = [np.asarray(w, dtype=np.float32) for w in windows]
        if self.workers == 1 or len(audio) == 1:
            return [self._transcribe_one(a, language, seed, fallback, max_tokens) for a, seed in zip(audio, seeds)]
        with ThreadPoolExecutor(self.workers, thread_name_prefix="whisper") as pool:
            n = len(audio)
            return list(pool.map(self._transcribe_one, audio, [language] * n, seeds, [fallback] * n, [max_tokens] * n))

    def _transcribe_one(
        self, audio: np.ndarray, language: str | None, seed: int, fallback: bool, max_tokens: int | None = None
    ) -> WindowTranscript:
        attempts: list[WindowTranscript] = []
        frames, audio = self._padded(audio)
        with _decoding(frames):
            for temperature in self.fallback.temperatures if fallback else self.fallback.temperatures[:1]:
                if temperature > 0:
                    return self._sampled(audio, language, seed, attempts)
                attempt = self._decode(self.model, audio, language, temperature, max_tokens)
                if not self.fallback.needs_retry(attempt):
                    return attempt
                attempts.append(attempt)
        return self.fallback.best_of_failed(attempts)

    def _sampled(
        self, audio: np.ndarray, language: str | None, seed: int, attempts: list[WindowTranscript]
    ) -> WindowTranscript:
        """The sampled temperatures, on a model whose worker thread seeds its generator from this window's seed."""
        with self._sampling:
            ctranslate2.set_random_seed(seed)
            sampler = self._load(num_workers=1)  # a new worker thread: its generator starts from this seed
            for temperature in self.fallback.sampled:
                attempt = self._decode(sampler, audio, language, temperature)
                if not self.fallback.needs_retry(attempt):
                    return attempt
                attempts.append(attempt)
        return self.fallback.best_of_failed(attempts)

    def _decode(
        self, model, audio: np.ndarray, language: str | None, temperature: float, max_tokens: int | None = None
    ) -> WindowTranscript:
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
            max_new_tokens=max_tokens,
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
