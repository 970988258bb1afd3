"""Accent scores of a clip from the CommonAccent ECAPA-TDNN model, through speechbrain.

The model was trained with an additive-angular-margin softmax: its classifier
returns the cosine similarity between the clip's embedding and each accent's
class centre (speechbrain's ECAPA `Classifier` normalises both before the
product). Two keys are written:

- agent_accent: {label: cosine in [-1, 1]}, as in the TRACE blueprints;
- accent_probabilities: {label: softmax(scale * cosine)}, with the scale the
  model was trained with (30). A softmax over raw cosines would be nearly flat
  over 16 classes whatever the clip, because cosines only span [-1, 1].

Labels are read from the release's label file (accent_encoder.txt) in class
index order.

Each clip runs in its own forward pass. ECAPA's convolutions see the padding of
a batch (only its statistics pooling and squeeze-excitation use the lengths), so
a padded clip that does not end in digital silence gets other scores than alone
(0.007 cosine for a clip cut mid-speech, 0.12 for noise, with the test model).
A blueprint must not depend on which clips shared its batch; the model is small
enough (about 20 M parameters) that one clip per pass costs milliseconds.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extractors.base import Clip, ClipError, Extractor, ExtractorUnavailable, ModelInfo, Section, register
from extractors.models import load_card, resolve_model, standin_note
from trace_eval.audio import repeat_to_length

__all__ = ["AccentExtractor"]

_CARD = "accent-commonaccent-ecapa"
_SETTING = "accent.model_path"
_COSINE_KEY = "agent_accent"
_PROBABILITY_KEY = "accent_probabilities"
_RATE = 16000
# BatchNorm step counters are bookkeeping, not weights; older checkpoints may lack them.
_BOOKKEEPING = ("num_batches_tracked",)


@dataclass
class Config:
    model_path: str | None = None  # the speechbrain release folder; None: resolve by the model card
    # Shorter clips are repeated up to this length: the dilated convolutions need at least 0.04 s.
    min_seconds: float = 0.1
    # accent_probabilities = softmax(probability_scale * cosine); 30 is the AAM-softmax scale used in training.
    probability_scale: float = 30.0


_Settings = Config  # inside the extractor's body `Config` names its attribute, not this class


@register
class AccentExtractor(Extractor):
    name = "accent"
    version = "1"
    description = "English accent cosine scores and probabilities (CommonAccent ECAPA-TDNN via speechbrain)"
    sample_rate = _RATE
    uses_gpu = True
    batched = True
    outputs = (_COSINE_KEY, _PROBABILITY_KEY)
    libraries = ("torch", "speechbrain")
    Config = Config

    def __init__(self, config: _Settings | None = None, device: str = "cpu"):
        super().__init__(config, device)
        self._card = load_card(_CARD)
        self._classifier: Any = None
        self._labels: list[str] = []
        self._source: Path | None = None
        self._standin = standin_note(self._card, self.config.model_path)  # read once, not for every clip

    def model(self) -> ModelInfo:
        return ModelInfo(
            self._card.hub_id, self._card.revision, str(self._source) if self._source else None, self._standin
        )

    @property
    def labels(self) -> list[str]:
        """Accent labels in class index order (empty before load)."""
        return list(self._labels)

    def load(self) -> None:
        if self._classifier is not None:
            return
        # The weights before the libraries: importing speechbrain and torch costs seconds of CPU, wasted where
        # the weights are missing (a missing library is still the error reported first).
        directory = (
            resolve_model(self._card, self.config.model_path, _SETTING) if _present(("torch", "speechbrain")) else None
        )
        try:
            import torch

            tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
            try:
                from speechbrain.inference.classifiers import EncoderClassifier
                from speechbrain.utils.fetching import FetchConfig, LocalStrategy
            finally:
                # Importing speechbrain turns TF32 matmuls on for the whole process, which would change
                # the GPU results of the other models depending on whether this extractor was loaded.
                torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        except ImportError as e:
            raise ExtractorUnavailable(
                f"accent needs speechbrain and torch ({e}), which the models extra installs: "
                "pip install 'trace-eval[models]' (or make install)"
            ) from e
        if directory is None:
            directory = resolve_model(self._card, self.config.model_path, _SETTING)
        try:
            classifier = EncoderClassifier.from_hparams(
                source=str(directory),
                hparams_file="hyperparams.yaml",
                # The release's hyperparams point at the hub id; load the files from this folder instead.
                overrides={"pretrained_path": str(directory)},
                # No savedir: speechbrain reuses whatever files a savedir already holds, so a stale
                # one could shadow the weights resolved here. NO_LINK reads them where they are.
                savedir=None,
                local_strategy=LocalStrategy.NO_LINK,
                fetch_config=FetchConfig(allow_network=False),
                run_opts={"device": self.device},
            )
        except Exception as e:  # hyperpyyaml and the pretrainer raise many kinds of errors on a bad folder
            raise ExtractorUnavailable(
                f"{directory}: speechbrain could not load the accent model ({type(e).__name__}: {e}). "
                f"To fix: pass --set {_SETTING}=DIR with a complete {_CARD} folder ({', '.join(self._card.files)})"
            ) from e
        _check_weights(classifier, directory)
        self._labels = _labels(classifier, directory)
        classifier.eval()
        self._classifier = classifier
        self._source = directory
        self._standin = standin_note(self._card, resolved=directory)

    def extract(self, clips: list[Clip]) -> list[Section | ClipError]:
        if self._classifier is None:
            self.load()
        min_samples = max(1, math.ceil(self.config.min_seconds * _RATE))
        return [
            self._extract_one(repeat_to_length(np.asarray(c.samples(_RATE), dtype=np.float32), min_samples))
            for c in clips
        ]

    # -----------------------------------------------------------------------------------
    def _extract_one(self, wave: np.ndarray) -> Section | ClipError:
        import torch

        try:
            with torch.inference_mode():
                wavs = torch.from_numpy(np.ascontiguousarray(wave)).unsqueeze(0)
                scores, _, _, _ = self._classifier.classify_batch(wavs, torch.ones(1))
                cosines = scores.reshape(-1).double().cpu()
        except Exception as e:  # e.g. CUDA out of memory on a very long clip: this clip fails, the run goes on
            return ClipError(f"accent model failed on this clip: {type(e).__name__}: {e}")
        if cosines.numel() != len(self._labels) or not bool(torch.isfinite(cosines).all()):
            return ClipError(
                f"accent model returned {cosines.numel()} scores (finite: "
                f"{bool(torch.isfinite(cosines).all())}) for {len(self._labels)} labels"
            )
        probabilities = torch.softmax(self.config.probability_scale * cosines, dim=0)
        return Section(
            {
                _COSINE_KEY: {lab: round(float(c), 4) for lab, c in zip(self._labels, cosines)},
                _PROBABILITY_KEY: {lab: round(float(p), 4) for lab, p in zip(self._labels, probabilities)},
            }
        )


def _labels(classifier: Any, directory: Path) -> list[str]:
    """Labels by class index from the label file, checked against the classifier's outputs."""
    encoder = classifier.hparams.label_encoder
    outputs = int(classifier.mods.classifier.weight.shape[0])
    labels = [encoder.ind2lab.get(i) for i in range(outputs)]
    if len(encoder) != outputs or any(lab is None for lab in labels):
        raise ExtractorUnavailable(
            f"{directory}: the label file has {len(encoder)} labels but the classifier has {outputs} outputs. "
            f"To fix: pass --set {_SETTING}=DIR with an unmodified {_CARD} folder"
        )
    encoder.expect_len(outputs)
    return [str(lab) for lab in labels]


def _check_weights(classifier: Any, directory: Path) -> None:
    """speechbrain only logs a warning for weights missing from a checkpoint and keeps random ones: refuse instead."""
    import torch

    paths = classifier.hparams.pretrainer.paths
    for name in ("embedding_model", "classifier"):
        path = paths.get(name)
        try:
            stored = torch.load(path, map_location="meta", weights_only=True)  # shapes only, no memory
        except Exception as e:
            raise ExtractorUnavailable(f"{path}: not a readable checkpoint ({type(e).__name__}: {e})") from e
        wanted = getattr(classifier.mods, name).state_dict()
        missing = [k for k in wanted if not k.endswith(_BOOKKEEPING) and k not in stored]
        if missing:
            raise ExtractorUnavailable(
                f"{path} lacks {len(missing)} weights of the {name} (first: {missing[0]}). "
                f"To fix: pass --set {_SETTING}=DIR with an unmodified {_CARD} folder"
            )


def _present(packages: tuple[str, ...]) -> bool:
    """Whether every package can be imported, without importing it (an import hook may refuse to say)."""
    try:
        return all(importlib.util.find_spec(p) is not None for p in packages)
    except (ImportError, ValueError):
        return False
