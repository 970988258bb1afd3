"""Emotion scores of a clip from emotion2vec_plus_large, through funasr.

agent_emotion maps every class of the model to its utterance-level probability,
e.g. {"angry": 0.0123, "neutral": 0.8123, ...}. The labels are read from the
model's tokens.txt ("生气/angry" keeps its English part, the tokenizer's unknown
symbol "<unk>" becomes "unknown"), so a release with other classes needs no
code change; placeholder classes ("unuse_*") are dropped by funasr itself.

Each clip runs in its own forward pass. emotion2vec's convolutional feature
encoder and its relative positional convolutions take no padding mask, so in a
zero-padded batch the last frames of a shorter clip mix with the padding and its
scores move (by 0.01 on a probability with the two-layer test model; the real
model's five layers of width 19 reach about 0.9 s into the padding). A blueprint
must not depend on which clips happened to share its batch, and funasr's own
emotion2vec inference loops over clips for the same reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extractors.base import Clip, ClipError, Extractor, ExtractorUnavailable, ModelInfo, Section, register
from extractors.models import load_card, resolve_model, standin_note
from trace_eval.audio import repeat_to_length

__all__ = ["EmotionExtractor", "english_label"]

_CARD = "emotion2vec_plus_large"
_SETTING = "emotion.model_path"
_KEY = "agent_emotion"
_RATE = 16000
# Weights only used in pre-training (the masked-prediction decoder) may be absent from a release.
_TRAINING_ONLY = (".decoder.",)


@dataclass
class Config:
    model_path: str | None = None  # an emotion2vec release folder; None: resolve by models/emotion2vec_plus_large.json
    # Shorter clips are repeated up to this length: the feature encoder needs at least 400 samples (25 ms).
    min_seconds: float = 0.1


def english_label(token: str, unk_symbol: str = "<unk>") -> str:
    """'生气/angry' -> 'angry'; the tokenizer's unknown symbol -> 'unknown' (class 8 of the release)."""
    if token == unk_symbol:
        return "unknown"
    return token.rsplit("/", 1)[-1].strip() or token


_Settings = Config  # inside the extractor's body `Config` names its attribute, not this class


@register
class EmotionExtractor(Extractor):
    name = "emotion"
    version = "1"
    description = "emotion class probabilities (emotion2vec_plus_large via funasr)"
    sample_rate = _RATE
    uses_gpu = True
    batched = True
    outputs = (_KEY,)
    libraries = ("torch", "funasr")
    Config = Config

    def __init__(self, config: _Settings | None = None, device: str = "cpu"):
        super().__init__(config, device)
        self._card = load_card(_CARD)
        self._automodel: Any = None
        self._unk_symbol = "<unk>"
        self._source: Path | None = None
        self._standin = standin_note(self._card, self.config.model_path)  # read once, not for every clip

    def model(self) -> ModelInfo:
        return ModelInfo(
            self._card.hub_id, self._card.revision, str(self._source) if self._source else None, self._standin
        )

    def load(self) -> None:
        if self._automodel is not None:
            return
        # The weights before the libraries: importing funasr and torch costs seconds of CPU, wasted where
        # the weights are missing (a missing library is still the error reported first).
        directory = (
            resolve_model(self._card, self.config.model_path, _SETTING) if _present(("torch", "funasr")) else None
        )
        try:
            import torch
            from funasr import AutoModel
        except ImportError as e:
            raise ExtractorUnavailable(
                f"emotion needs funasr and torch ({e}), which the models extra installs: "
                "pip install 'trace-eval[models]' (or make install)"
            ) from e
        if directory is None:
            directory = resolve_model(self._card, self.config.model_path, _SETTING)
        try:
            # funasr prints its version and a line per missing weight; the checkpoint is checked below instead.
            with contextlib.redirect_stdout(io.StringIO()):
                automodel = AutoModel(
                    model=str(directory),
                    disable_update=True,  # no version check over the network
                    disable_pbar=True,
                    log_level="WARNING",
                    device=self.device,
                    ncpu=torch.get_num_threads(),  # funasr would otherwise set the process to 4 threads
                )
        except Exception as e:  # funasr raises anything from AssertionError to KeyError on a bad folder
            raise ExtractorUnavailable(
                f"{directory}: funasr could not load emotion2vec ({type(e).__name__}: {e}). "
                f"To fix: pass --set {_SETTING}=DIR with a complete {_CARD} folder ({', '.join(self._card.files)})"
            ) from e
        _check_weights(automodel, directory)
        tokenizer = automodel.kwargs.get("tokenizer")
        if getattr(automodel.model, "proj", None) is None or not getattr(tokenizer, "token_list", None):
            raise ExtractorUnavailable(
                f"{directory} has no emotion classes (tokens.txt and a classification head are needed); "
                f"pass --set {_SETTING}=DIR with an emotion2vec_plus release, not a bare emotion2vec encoder"
            )
        self._unk_symbol = getattr(tokenizer, "unk_symbol", "<unk>")
        self._automodel = automodel
        self._source = directory
        self._standin = standin_note(self._card, resolved=directory)

    def extract(self, clips: list[Clip]) -> list[Section | ClipError]:
        if self._automodel is None:
            self.load()
        min_samples = max(1, math.ceil(self.config.min_seconds * _RATE))
        waves = [repeat_to_length(np.ascontiguousarray(c.samples(_RATE), dtype=np.float32), min_samples) for c in clips]
        try:
            raw = self._generate(waves)  # one call: funasr loops over the clips, one forward pass each
        except Exception:
            raw = None
        if raw is None or len(raw) != len(waves):
            return [self._extract_one(w) for w in waves]  # find the clip that failed, keep the others
        return [self._section(r) for r in raw]

    # -----------------------------------------------------------------------------------
    def _generate(self, waves: list[np.ndarray]) -> list[dict]:
        import torch

        with torch.inference_mode():
            return self._automodel.generate(waves, granularity="utterance", extract_embedding=False)

    def _extract_one(self, wave: np.ndarray) -> Section | ClipError:
        try:
            return self._section(self._generate([wave])[0])
        except Exception as e:  # e.g. CUDA out of memory on a very long clip: this clip fails, the run goes on
            return ClipError(f"emotion2vec failed on this clip: {type(e).__name__}: {e}")

    def _section(self, result: dict) -> Section | ClipError:
        labels, scores = list(result.get("labels") or []), list(result.get("scores") or [])
        if not labels or len(labels) != len(scores):
            return ClipError(f"emotion2vec returned {len(scores)} scores for {len(labels)} labels")
        if not all(math.isfinite(float(s)) for s in scores):
            return ClipError("emotion2vec returned non-finite scores")
        names = [english_label(str(t), self._unk_symbol) for t in labels]
        if len(set(names)) != len(names):  # two tokens with the same English part: keep them apart
            names = [str(t) for t in labels]
        return Section({_KEY: {n: round(float(s), 4) for n, s in zip(names, scores)}})


def _check_weights(automodel: Any, directory: Path) -> None:
    """funasr only prints a warning for weights missing from model.pt and keeps random ones: refuse instead."""
    import torch

    path = automodel.kwargs.get("init_param") or str(directory / "model.pt")
    try:
        stored = torch.load(path, map_location="meta", weights_only=True)  # shapes only, no memory
    except Exception as e:
        raise ExtractorUnavailable(f"{path}: not a readable checkpoint ({type(e).__name__}: {e})") from e
    for key in ("state_dict", "model_state_dict", "model"):  # the nestings funasr accepts
        if isinstance(stored, dict) and isinstance(stored.get(key), dict):
            stored = stored[key]
    stored = {k.removeprefix("module."): v for k, v in stored.items()}
    wrong = [
        name
        for name, tensor in automodel.model.state_dict().items()
        if not any(part in name for part in _TRAINING_ONLY)
        and (name not in stored or tuple(stored[name].shape) != tuple(tensor.shape))
    ]
    if wrong:
        raise ExtractorUnavailable(
            f"{path} does not match {directory / 'config.yaml'}: {len(wrong)} weights missing or of another shape "
            f"(first: {wrong[0]}). To fix: pass --set {_SETTING}=DIR with an unmodified {_CARD} folder"
        )


def _present(packages: tuple[str, ...]) -> bool:
    """Whether every package can be imported, without importing it (an import hook may refuse to say)."""
    try:
        return all(importlib.util.find_spec(p) is not None for p in packages)
    except (ImportError, ValueError):
        return False
