"""Full-size stand-ins for the paper profile's models: the published layouts, random weights.

The paper profile (Whisper large-v3, emotion2vec_plus_large, CommonAccent ECAPA)
loads weights from the model hub. Where the hub cannot be reached, these stand-ins
let the whole path run anyway: each folder holds what the real loader reads, at the
real architecture and sizes, so loading, memory, batching and speed are those of
the published models; only the weights are random. `scripts/make_standin_models.py
DIR` writes them; with `TRACE_MODELS_DIR=DIR` the extractors load them like the
real thing.

Every folder carries `STANDIN.json` (extractors.models.STANDIN_MARKER). The
extractors put it in each section's provenance and in the fingerprint, so a
blueprint made with stand-ins says so, and is recomputed once real weights are
in place: its numbers are not cues.

- whisper-large-v3 (transformers layout, float16 safetensors as released):
  d_model 1280, 32 encoder and 32 decoder layers, 20 heads, 128 mel bins,
  vocabulary 51,866 with the real multilingual tokenizer, built from the
  vocabulary the `openai-whisper` package ships, and the real alignment heads
  and suppressed tokens. Random decoder weights would never say end-of-text,
  so decoding would run to 448 tokens and fall back through every temperature.
  The decoder's position embeddings therefore carry one fixed sentence
  (STANDIN_SENTENCE, then end-of-text; `<|en|>` at the first position for
  language detection): every window decodes it with full confidence, once, as
  a fluent model would, and every transcript says what it is.
- emotion2vec_plus_large (funasr layout: config.yaml, model.pt, tokens.txt):
  data2vec 2.0 large sizes (1024 wide, 8 + 16 blocks, 16 heads, about 300 M
  parameters), the nine classes of the release.
- accent-commonaccent-ecapa (speechbrain layout): ECAPA-TDNN with 1024 channels,
  192-dimensional embeddings, the 16 CommonAccent labels.
"""

from __future__ import annotations

import ast
import base64
import gzip
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from extractors.models import STANDIN_MARKER, is_complete, load_card
from trace_eval.io import write_json

__all__ = [
    "ACCENT_LABELS",
    "EMOTION_TOKENS",
    "STANDIN_SENTENCE",
    "build_ecapa",
    "build_emotion2vec",
    "build_standins",
    "build_whisper_large_v3",
    "emotion2vec_config",
    "ecapa_hyperparams",
    "openai_whisper_tokenizer",
    "transformers_whisper_tokenizer",
    "write_ecapa",
    "write_emotion2vec",
]

SEED = 20240601
# Only letters, commas and full stops: Whisper suppresses most other punctuation (non-speech tokens).
STANDIN_SENTENCE = " This is a stand-in for Whisper large-v3 with random weights, and these words are not a transcript."

# The release's tokens.txt: "中文/english" per class, the tokenizer's unknown symbol last.
EMOTION_TOKENS = (
    "生气/angry",
    "厌恶/disgusted",
    "恐惧/fearful",
    "开心/happy",
    "中立/neutral",
    "其他/other",
    "难过/sad",
    "吃惊/surprised",
    "<unk>",
)
# CommonAccent's 16 accents in class-index order (the release spells one "southatlandtic").
ACCENT_LABELS = (
    "england",
    "us",
    "canada",
    "australia",
    "indian",
    "scotland",
    "ireland",
    "african",
    "malaysia",
    "newzealand",
    "southatlandtic",
    "bermuda",
    "philippines",
    "hongkong",
    "wales",
    "singapore",
)

_WHISPER_LAYERS, _WHISPER_HEADS, _WHISPER_LANGUAGES = 32, 20, 100
# Position embeddings of the decoder point this far along the embedding of the token
# they make it say, against a residual stream of about 5 per coordinate from 64
# random sublayers: the planted token wins the softmax by some 20 logits.
_PLANT_PER_COORDINATE = 20.0


def build_standins(
    directory: str | Path, only: list[str] | None = None, force: bool = False, log: Callable[[str], None] = print
) -> dict[str, Path]:
    """Write every stand-in (or those named) under `directory`/<card>/; complete ones are kept."""
    builders = {
        "whisper-large-v3": build_whisper_large_v3,
        "emotion2vec_plus_large": build_emotion2vec,
        "accent-commonaccent-ecapa": build_ecapa,
    }
    unknown = sorted(set(only or ()) - set(builders))
    if unknown:
        raise ValueError(f"no stand-in for {', '.join(unknown)}; expected any of: {', '.join(builders)}")
    root = Path(directory)
    written = {}
    for name, build in builders.items():
        if only and name not in only:
            continue
        folder = root / name
        card = load_card(name)
        if folder.exists() and not (folder / STANDIN_MARKER).is_file():
            # Perhaps the published weights: never replace those with random ones.
            raise ValueError(
                f"{folder} exists and holds no stand-in ({STANDIN_MARKER}); write the stand-ins into another folder"
            )
        if not force and (folder / STANDIN_MARKER).is_file() and is_complete(folder, card):
            log(f"{name}: kept {folder}")
        else:
            started = time.perf_counter()
            # Written beside, then renamed: an interrupted build leaves no half folder that looks complete.
            partial = root / f".{name}.partial"
            _remove(partial)
            build(partial)
            _remove(folder)
            partial.rename(folder)
            log(f"{name}: wrote {folder} in {time.perf_counter() - started:.0f} s ({_size_gb(folder):.2f} GB)")
        written[name] = folder
    return written


def _mark(directory: Path, card: str, parameters: int, note: str) -> None:
    write_json(
        directory / STANDIN_MARKER,
        {
            "standin": True,
            "card": card,
            "parameters": parameters,
            "weights": "random",
            "note": note,
            "made_by": "scripts/make_standin_models.py (trace_eval/stage1/standins.py)",
        },
    )


# -- Whisper large-v3 -------------------------------------------------------------------------------
def _openai_whisper_folder() -> Path:
    """The installed `whisper` package (openai-whisper), found without importing it: its __init__
    needs numba and triton, and only its vocabulary and tables are read here."""
    spec = importlib.util.find_spec("whisper")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the Whisper stand-in needs the multilingual vocabulary of the openai-whisper package: "
            "pip install --no-deps openai-whisper==20250625 (make install does this)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def openai_whisper_tokenizer(folder: Path | None = None):
    """openai-whisper's multilingual tokenizer (large-v3's 100 languages), its module loaded on its own
    (it needs tiktoken only)."""
    folder = folder or _openai_whisper_folder()
    spec = importlib.util.spec_from_file_location("_openai_whisper_tokenizer", folder / "tokenizer.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{folder / 'tokenizer.py'}: not a Python module openai-whisper's tokenizer loads from")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module.get_tokenizer(multilingual=True, num_languages=_WHISPER_LANGUAGES)


def _alignment_heads(folder: Path) -> list[list[int]]:
    """large-v3's alignment heads from openai-whisper's table (a base85, gzipped boolean mask)."""
    tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_ALIGNMENT_HEADS" for t in node.targets):
            table = ast.literal_eval(node.value)
            mask = np.frombuffer(gzip.decompress(base64.b85decode(table["large-v3"])), dtype=bool)
            return [
                [int(layer), int(head)] for layer, head in np.argwhere(mask.reshape(_WHISPER_LAYERS, _WHISPER_HEADS))
            ]
    raise RuntimeError(f"{folder / '__init__.py'} has no _ALIGNMENT_HEADS table")


def transformers_whisper_tokenizer(openai, folder: Path | None = None):
    """The same vocabulary as a transformers WhisperTokenizer, checked token for token against tiktoken."""
    folder = folder or _openai_whisper_folder()
    from transformers import AddedToken, WhisperTokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter

    vocabulary = folder / "assets" / "multilingual.tiktoken"
    vocab, merges = TikTokenConverter(vocab_file=str(vocabulary)).extract_vocab_merges_from_model(str(vocabulary))
    tokenizer = WhisperTokenizer(vocab=vocab, merges=merges)
    specials = sorted(openai.encoding._special_tokens.items(), key=lambda item: item[1])
    for token, token_id in specials:
        if token != "<|endoftext|>":  # already there: unknown, start and end token of the tokenizer
            timestamp = token[2:3].isdigit()
            tokenizer.add_tokens(
                [AddedToken(token, special=not timestamp, normalized=False)], special_tokens=not timestamp
            )
        if tokenizer.convert_tokens_to_ids(token) != token_id:
            raise RuntimeError(f"{token} became id {tokenizer.convert_tokens_to_ids(token)}, not {token_id}")
    sample = "Hello world, it's 7:45 — Grüße aus Köln! 你好，世界。こんにちは Здравствуйте ♪"
    if tokenizer.encode(sample, add_special_tokens=False) != openai.encoding.encode(sample):
        raise RuntimeError("the transformers tokenizer does not split text as openai-whisper's does")
    return tokenizer


def build_whisper_large_v3(directory: str | Path, seed: int = SEED) -> Path:
    import torch
    from transformers import GenerationConfig, WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    folder = _openai_whisper_folder()
    openai = openai_whisper_tokenizer(folder)
    tokenizer = transformers_whisper_tokenizer(openai, folder)
    encoding, eot, sot = openai.encoding, openai.eot, openai.sot
    special = encoding.encode_single_token
    languages = {f"<|{code}|>": special(f"<|{code}|>") for code in openai.all_language_codes}
    task_to_id = {"transcribe": openai.transcribe, "translate": openai.translate}
    # As openai-whisper decodes: no speaker tags or music symbols, no task or start tokens mid-text.
    suppress = sorted(
        {
            *openai.non_speech_tokens,
            openai.transcribe,
            openai.translate,
            sot,
            openai.sot_prev,
            openai.sot_lm,
            openai.no_speech,
        }
    )
    begin_suppress = [encoding.encode(" ")[0], eot]

    config = WhisperConfig(
        vocab_size=encoding.n_vocab,
        num_mel_bins=128,
        d_model=1280,
        encoder_layers=_WHISPER_LAYERS,
        decoder_layers=_WHISPER_LAYERS,
        encoder_attention_heads=_WHISPER_HEADS,
        decoder_attention_heads=_WHISPER_HEADS,
        encoder_ffn_dim=5120,
        decoder_ffn_dim=5120,
        max_source_positions=1500,
        max_target_positions=448,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot - 1,
        decoder_start_token_id=sot,
    )
    sentence = encoding.encode(STANDIN_SENTENCE)
    if set(sentence) & set(suppress):
        raise RuntimeError(f"the stand-in sentence uses suppressed tokens: {sorted(set(sentence) & set(suppress))}")
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config).to(torch.float16).eval()
    _plant_sentence(model, sentence + [eot], languages["<|en|>"])
    model.generation_config = GenerationConfig(
        alignment_heads=_alignment_heads(folder),
        begin_suppress_tokens=begin_suppress,
        bos_token_id=eot,
        decoder_start_token_id=sot,
        eos_token_id=eot,
        pad_token_id=eot - 1,
        is_multilingual=True,
        lang_to_id=languages,
        task_to_id=task_to_id,
        max_initial_timestamp_index=50,
        max_length=448,
        no_timestamps_token_id=openai.no_timestamps,
        prev_sot_token_id=openai.sot_prev,
        return_timestamps=False,
        suppress_tokens=suppress,
    )
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    WhisperFeatureExtractor(feature_size=128).save_pretrained(directory)
    parameters = sum(p.numel() for p in model.parameters())
    _mark(
        directory,
        "whisper-large-v3",
        parameters,
        f"random weights in openai/whisper-large-v3's layout and sizes; every window decodes the planted "
        f"sentence{STANDIN_SENTENCE!r}",
    )
    return directory


def _plant_sentence(model, targets: list[int], language: int, prompt_length: int = 4) -> None:
    """Make position p of the decoder predict targets[p - prompt_length + 1] (and `language` at 0).

    The prompt is <|startoftranscript|> <|language|> <|transcribe|> <|notimestamps|>:
    its last position predicts the first text token. The output layer is the token
    embedding (tied), so a position embedding along a token's embedding makes the
    model say that token there, whatever the audio.
    """
    import torch

    embeddings = model.get_output_embeddings().weight.float()
    positions = model.model.decoder.embed_positions.weight
    width = positions.shape[1]
    with torch.no_grad():
        for position, token in [(0, language)] + [(prompt_length - 1 + k, t) for k, t in enumerate(targets)]:
            direction = embeddings[token] / embeddings[token].norm()
            positions[position] += (_PLANT_PER_COORDINATE * width**0.5 * direction).to(positions.dtype)


# -- emotion2vec_plus_large -------------------------------------------------------------------------
def emotion2vec_config(
    embed_dim: int = 1024,
    depth: int = 16,
    prenet_depth: int = 8,
    heads: int = 16,
    conv_channels: int = 512,
    conv_pos_width: int = 95,
    conv_pos_groups: int = 16,
    conv_pos_depth: int = 5,
    extra_tokens: int = 10,
    mlp_ratio: float = 4.0,
    decoder_dim: int = 768,
    decoder_groups: int = 16,
    decoder_kernel: int = 7,
    decoder_layers: int = 4,
) -> dict:
    """funasr's config.yaml for emotion2vec, with data2vec 2.0 large's sizes by default."""
    audio = {
        "type": "AUDIO",
        "prenet_depth": prenet_depth,
        "prenet_layerdrop": 0.0,
        "prenet_dropout": 0.0,
        "start_drop_path_rate": 0.0,
        "end_drop_path_rate": 0.0,
        "num_extra_tokens": extra_tokens,
        "init_extra_token_zero": False,  # random extra tokens, so that they matter to the output
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
            "decoder_dim": decoder_dim,
            "decoder_groups": decoder_groups,
            "decoder_kernel": decoder_kernel,
            "decoder_layers": decoder_layers,
            "input_dropout": 0.0,
            "add_positions_masked": False,
            "add_positions_all": False,
            "decoder_residual": True,
            "projection_layers": 1,
            "projection_ratio": 2.0,
        },
        "extractor_mode": "layer_norm",
        # Strides 5·2·2·2·2·2·2 = 320 samples: 50 frames per second, as released.
        "feature_encoder_spec": f"[({conv_channels}, 10, 5)] + [({conv_channels}, 3, 2)] * 4 + "
        f"[({conv_channels},2,2)] + [({conv_channels},2,2)]",
        "conv_pos_width": conv_pos_width,
        "conv_pos_groups": conv_pos_groups,
        "conv_pos_depth": conv_pos_depth,
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
        "mlp_ratio": mlp_ratio,
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


def write_emotion2vec(
    directory: str | Path, config: dict, tokens: tuple[str, ...], seed: int, projection_gain: float = 1.0
) -> tuple[Path, int]:
    """A random emotion2vec release folder as funasr reads it; returns it and the parameter count."""
    import torch
    import yaml
    from funasr.models.emotion2vec.model import Emotion2vec

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.yaml").write_text(
        "# network architecture\n" + yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    write_json(
        directory / "configuration.json",
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
    )
    (directory / "tokens.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    model = Emotion2vec(model_conf=config["model_conf"], vocab_size=len(tokens))
    with torch.no_grad():
        model.proj.weight.mul_(projection_gain)
    torch.save(model.state_dict(), directory / "model.pt")
    return directory, sum(p.numel() for p in model.parameters())


def build_emotion2vec(directory: str | Path, seed: int = SEED) -> Path:
    # Random weights give nearly equal class scores; a larger head spreads them as a trained one would.
    directory, parameters = write_emotion2vec(
        directory, emotion2vec_config(), EMOTION_TOKENS, seed, projection_gain=8.0
    )
    _mark(
        directory,
        "emotion2vec_plus_large",
        parameters,
        "random weights in emotion2vec_plus_large's funasr layout, data2vec 2.0 large sizes, the release's classes",
    )
    return directory


# -- CommonAccent ECAPA -----------------------------------------------------------------------------
def ecapa_hyperparams(
    n_labels: int, channels: int = 1024, emb_dim: int = 192, attention_channels: int = 128, se_channels: int = 128
) -> str:
    """The release's hyperparams.yaml (paths relative to pretrained_path), sizes as given."""
    return f"""\
# ############################################################################
# Model: ECAPA-TDNN for Accent Identification
# ############################################################################

# Pretrain folder (HuggingFace)
pretrained_path: Jzuluaga/accent-id-commonaccent_ecapa

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
    attention_channels: {attention_channels}
    se_channels: {se_channels}
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


def write_ecapa(directory: str | Path, hyperparams: str, labels: tuple[str, ...], seed: int) -> tuple[Path, int]:
    """A random CommonAccent-style release folder as speechbrain reads it; returns it and the parameter count."""
    import torch
    from hyperpyyaml import load_hyperpyyaml

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "hyperparams.yaml").write_text(hyperparams, encoding="utf-8")
    write_json(directory / "config.json", {"speechbrain_interface": "EncoderClassifier"})
    torch.manual_seed(seed)
    hparams = load_hyperpyyaml(hyperparams)
    torch.save(hparams["embedding_model"].state_dict(), directory / "embedding_model.ckpt")
    torch.save(hparams["classifier"].state_dict(), directory / "classifier.ckpt")
    hparams["mean_var_norm"]._save(directory / "normalizer_input.ckpt")
    encoder = hparams["label_encoder"]
    encoder.update_from_iterable(labels)
    encoder.save(directory / "accent_encoder.txt")
    parameters = sum(p.numel() for key in ("embedding_model", "classifier") for p in hparams[key].parameters())
    return directory, parameters


def build_ecapa(directory: str | Path, seed: int = SEED) -> Path:
    directory, parameters = write_ecapa(directory, ecapa_hyperparams(len(ACCENT_LABELS)), ACCENT_LABELS, seed)
    _mark(
        directory,
        "accent-commonaccent-ecapa",
        parameters,
        "random weights in the CommonAccent ECAPA-TDNN release's speechbrain layout, sizes and labels",
    )
    return directory


# -- helpers -----------------------------------------------------------------------------------------
def _remove(path: Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def _size_gb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e9
