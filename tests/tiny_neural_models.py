"""Tiny, randomly initialised emotion2vec and ECAPA models in the released on-disk formats.

The extractors load these exactly as they load the real weights (funasr
AutoModel on an emotion2vec release folder, speechbrain EncoderClassifier on a
CommonAccent folder), so tests exercise the real loading and inference code on
a 2-core machine in seconds. The scores are meaningless; the formats, the label
files and the shapes of the outputs are the real ones.

Layouts mirror the hub releases:
- emotion2vec/emotion2vec_plus_large: config.yaml, configuration.json, model.pt
  (a plain state dict), tokens.txt ("中文/english" per line, "<unk>" last);
- Jzuluaga/accent-id-commonaccent_ecapa: hyperparams.yaml (with pretrained_path),
  embedding_model.ckpt, classifier.ckpt, accent_encoder.txt, normalizer_input.ckpt,
  config.json.
"""
from __future__ import annotations

import json
from pathlib import Path

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


def _emotion2vec_config(embed_dim: int, depth: int, heads: int) -> dict:
    """The release's config.yaml keys with tiny sizes (same strides: 50 frames per second)."""
    audio = {
        "type": "AUDIO",
        "prenet_depth": 1,
        "prenet_layerdrop": 0.0,
        "prenet_dropout": 0.0,
        "start_drop_path_rate": 0.0,
        "end_drop_path_rate": 0.0,
        "num_extra_tokens": 2,
        "init_extra_token_zero": False,  # random extra tokens, so they matter to the output
        "mask_noise_std": 0.01,
        "mask_prob_min": None,
        "mask_prob": 0.5,
        "inverse_mask": False,
        "mask_prob_adjust": 0.05,
        "keep_masked_pct": 0.0,
        "mask_length": 5,
        "add_masks": False,
        "remove_masks": False,
        "mask_dropout": 0.0,
        "encoder_zero_mask": True,
        "mask_channel_prob": 0.0,
        "mask_channel_length": 64,
        "ema_local_encoder": False,
        "local_grad_mult": 1.0,
        "use_alibi_encoder": True,
        "alibi_scale": 1.0,
        "learned_alibi": False,
        "alibi_max_pos": None,
        "learned_alibi_scale": True,
        "learned_alibi_scale_per_head": True,
        "learned_alibi_scale_per_layer": False,
        "num_alibi_heads": heads,
        "model_depth": depth,
        "decoder": {
            "decoder_dim": 16,
            "decoder_groups": 4,
            "decoder_kernel": 3,
            "decoder_layers": 1,
            "input_dropout": 0.0,
            "add_positions_masked": False,
            "add_positions_all": False,
            "decoder_residual": True,
            "projection_layers": 1,
            "projection_ratio": 2.0,
        },
        "extractor_mode": "layer_norm",
        "feature_encoder_spec": "[(16, 10, 5)] + [(16, 3, 2)] * 4 + [(16,2,2)] + [(16,2,2)]",
        "conv_pos_width": 10,
        "conv_pos_groups": 4,
        "conv_pos_depth": 2,
        "conv_pos_pre_ln": False,
    }
    model_conf = {
        "loss_beta": 0.0,
        "loss_scale": None,
        "depth": depth,
        "start_drop_path_rate": 0.0,
        "end_drop_path_rate": 0.0,
        "num_heads": heads,
        "norm_eps": 1e-05,
        "norm_affine": True,
        "encoder_dropout": 0.1,
        "post_mlp_drop": 0.1,
        "attention_dropout": 0.1,
        "activation_dropout": 0.0,
        "dropout_input": 0.0,
        "layerdrop": 0.0,
        "embed_dim": embed_dim,
        "mlp_ratio": 2.0,
        "layer_norm_first": False,
        "average_top_k_layers": depth,
        "end_of_block_targets": False,
        "clone_batch": 1,
        "layer_norm_target_layer": False,
        "batch_norm_target_layer": False,
        "instance_norm_target_layer": True,
        "instance_norm_targets": False,
        "layer_norm_targets": False,
        "ema_decay": 0.999,
        "ema_same_dtype": True,
        "log_norms": True,
        "ema_end_decay": 0.99999,
        "ema_anneal_end_step": 20000,
        "ema_encoder_only": False,
        "max_update": 100000,
        "extractor_mode": "layer_norm",
        "shared_decoder": None,
        "min_target_var": 0.1,
        "min_pred_var": 0.01,
        "supported_modality": "AUDIO",
        "mae_init": False,
        "seed": 1,
        "skip_ema": False,
        "cls_loss": 1.0,
        "recon_loss": 0.0,
        "d2v_loss": 1.0,
        "decoder_group": False,
        "adversarial_training": False,
        "adversarial_hidden_dim": 128,
        "adversarial_weight": 0.1,
        "cls_type": "chunk",
        "normalize": True,
        "modalities": {"audio": audio},
    }
    return {
        "model": "Emotion2vec",
        "model_conf": model_conf,
        "tokenizer": "CharTokenizer",
        "tokenizer_conf": {"unk_symbol": "<unk>", "split_with_space": True},
    }


def build_tiny_emotion2vec(
    directory: str | Path,
    tokens: tuple[str, ...] = EMOTION_TOKENS,
    embed_dim: int = 32,
    depth: int = 1,
    heads: int = 2,
) -> Path:
    """Write a random emotion2vec release folder (funasr format) and return it."""
    import torch
    import yaml
    from funasr.models.emotion2vec.model import Emotion2vec

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = _emotion2vec_config(embed_dim, depth, heads)
    (directory / "config.yaml").write_text(
        "# network architecture\n" + yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    (directory / "configuration.json").write_text(
        json.dumps(
            {
                "framework": "pytorch",
                "task": "emotion-recognition",
                "pipeline": {"type": "funasr-pipeline"},
                "model": {"type": "funasr"},
                "file_path_metas": {
                    "init_param": "model.pt",
                    "tokenizer_conf": {"token_list": "tokens.txt"},
                    "config": "config.yaml",
                },
                "model_name_in_hub": {"ms": "", "hf": ""},
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    (directory / "tokens.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")

    torch.manual_seed(_SEED)
    model = Emotion2vec(model_conf=config["model_conf"], vocab_size=len(tokens))
    # Random weights are small; scale the class projection so scores differ visibly between classes.
    with torch.no_grad():
        model.proj.weight.mul_(8.0)
    torch.save(model.state_dict(), directory / "model.pt")
    return directory


def _ecapa_hyperparams(n_labels: int, channels: int, emb_dim: int) -> str:
    """The release's hyperparams.yaml with tiny channel sizes (paths relative to pretrained_path)."""
    return f"""\
# ############################################################################
# Model: ECAPA-TDNN for Accent Identification (tiny random test model)
# ############################################################################

# Pretrain folder (HuggingFace)
pretrained_path: tiny/accent-id-ecapa

# Feature parameters
n_mels: 80

# Output parameters
n_languages: {n_labels}
emb_dim: {emb_dim}

# Model params
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>

mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False

embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    activation: !name:torch.nn.LeakyReLU
    channels: [{channels}, {channels}, {channels}, {channels}, {channels * 3}]
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    attention_channels: 8
    se_channels: 8
    lin_neurons: !ref <emb_dim>

# Classifier based on cosine distance
classifier: !new:speechbrain.lobes.models.ECAPA_TDNN.Classifier
    input_size: !ref <emb_dim>
    out_neurons: !ref <n_languages>

modules:
    compute_features: !ref <compute_features>
    mean_var_norm: !ref <mean_var_norm>
    embedding_model: !ref <embedding_model>
    classifier: !ref <classifier>

label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder

pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
        classifier: !ref <classifier>
        label_encoder: !ref <label_encoder>
    paths:
        embedding_model: !ref <pretrained_path>/embedding_model.ckpt
        classifier: !ref <pretrained_path>/classifier.ckpt
        label_encoder: !ref <pretrained_path>/accent_encoder.txt
"""


def build_tiny_ecapa(
    directory: str | Path,
    labels: tuple[str, ...] = ACCENT_LABELS,
    channels: int = 16,
    emb_dim: int = 8,
) -> Path:
    """Write a random CommonAccent-style ECAPA folder (speechbrain format) and return it."""
    import torch
    from hyperpyyaml import load_hyperpyyaml

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    text = _ecapa_hyperparams(len(labels), channels, emb_dim)
    (directory / "hyperparams.yaml").write_text(text, encoding="utf-8")
    (directory / "config.json").write_text(json.dumps({"speechbrain_interface": "EncoderClassifier"}) + "\n")

    torch.manual_seed(_SEED)
    hparams = load_hyperpyyaml(text)
    torch.save(hparams["embedding_model"].state_dict(), directory / "embedding_model.ckpt")
    torch.save(hparams["classifier"].state_dict(), directory / "classifier.ckpt")
    hparams["mean_var_norm"]._save(directory / "normalizer_input.ckpt")
    encoder = hparams["label_encoder"]
    encoder.update_from_iterable(labels)
    encoder.save(directory / "accent_encoder.txt")
    return directory
