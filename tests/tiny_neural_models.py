"""Tiny, randomly initialised emotion2vec and ECAPA models in the released on-disk formats.

The extractors load these exactly as they load the real weights (funasr
AutoModel on an emotion2vec release folder, speechbrain EncoderClassifier on a
CommonAccent folder), so tests exercise the real loading and inference code on
a 2-core machine in seconds. The scores are meaningless; the formats, the label
files and the shapes of the outputs are the real ones.

The folders are written by trace_eval/stage1/standins.py, which writes the full-size
stand-ins too; here with tiny sizes. Layouts mirror the hub releases:
- emotion2vec/emotion2vec_plus_large: config.yaml, configuration.json, model.pt
  (a plain state dict), tokens.txt ("中文/english" per line, "<unk>" last);
- Jzuluaga/accent-id-commonaccent_ecapa: hyperparams.yaml (with pretrained_path),
  embedding_model.ckpt, classifier.ckpt, accent_encoder.txt, normalizer_input.ckpt,
  config.json.
"""

from __future__ import annotations

from pathlib import Path

from trace_eval.stage1.standins import ecapa_hyperparams, emotion2vec_config, write_ecapa, write_emotion2vec

__all__ = [
    "EMOTION_TOKENS",
    "ACCENT_LABELS",
    "build_tiny_emotion2vec",
    "build_tiny_ecapa",
]

# Unusual names, so a test can tell labels read from the files from any built-in list.
# "unuse_*" entries are placeholders funasr drops (the early plus releases had them).
EMOTION_TOKENS = ("怒/zangry", "unuse_0", "喜/zjoyful", "平/zcalm", "悲/zgloomy", "<unk>")
ACCENT_LABELS = ("zz_atlantis", "zz_lemuria", "zz_mu", "zz_hyperborea")

_SEED = 1234


def build_tiny_emotion2vec(
    directory: str | Path,
    tokens: tuple[str, ...] = EMOTION_TOKENS,
    embed_dim: int = 32,
    depth: int = 1,
    heads: int = 2,
) -> Path:
    """Write a random emotion2vec release folder (funasr format) and return it."""
    config = emotion2vec_config(
        embed_dim=embed_dim,
        depth=depth,
        prenet_depth=1,
        heads=heads,
        conv_channels=16,
        conv_pos_width=10,
        conv_pos_groups=4,
        conv_pos_depth=2,
        extra_tokens=2,
        mlp_ratio=2.0,
        decoder_dim=16,
        decoder_groups=4,
        decoder_kernel=3,
        decoder_layers=1,
    )
    # Random weights are small; scale the class projection so scores differ visibly between classes.
    return write_emotion2vec(directory, config, tokens, _SEED, projection_gain=8.0)[0]


def build_tiny_ecapa(
    directory: str | Path,
    labels: tuple[str, ...] = ACCENT_LABELS,
    channels: int = 16,
    emb_dim: int = 8,
) -> Path:
    """Write a random CommonAccent-style ECAPA folder (speechbrain format) and return it."""
    text = ecapa_hyperparams(len(labels), channels=channels, emb_dim=emb_dim, attention_channels=8, se_channels=8)
    return write_ecapa(directory, text, labels, _SEED)[0]
