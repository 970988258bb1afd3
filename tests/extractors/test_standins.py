"""The paper profile on full-size stand-ins: the published layouts and sizes, random weights.

emotion2vec_plus_large (315 M parameters) and the CommonAccent ECAPA stand-ins are
built once per session (about 20 s, 1.3 GB) for the default run. Whisper large-v3
(1.55 B parameters, 3.1 GB, about 7 GB of memory to build and run) is slow on two
cores: its tests are opt-in (`-m slow`). TRACE_STANDIN_DIR=DIR keeps the stand-ins
between runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_neural_models import build_tiny_ecapa

from extractors import Clip, Section
from extractors.accent import AccentExtractor
from extractors.accent import Config as AccentConfig
from extractors.asr import AsrConfig, AsrExtractor
from extractors.emotion import Config as EmotionConfig
from extractors.emotion import EmotionExtractor
from extractors.models import STANDIN_MARKER
from trace_eval.audio import Audio, load_audio
from trace_eval.stage1.standins import (
    ACCENT_LABELS,
    EMOTION_TOKENS,
    STANDIN_SENTENCE,
    build_standins,
    openai_whisper_tokenizer,
    transformers_whisper_tokenizer,
)

ROOT = Path(__file__).resolve().parents[2]
AUDIO = ROOT / "examples" / "mini" / "audio"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
RATE = 16000


@pytest.fixture(scope="session")
def standin_dir(tmp_path_factory) -> Path:
    root = Path(os.environ.get("TRACE_STANDIN_DIR") or tmp_path_factory.mktemp("standins"))
    build_standins(root, ["emotion2vec_plus_large", "accent-commonaccent-ecapa"], log=lambda _: None)
    return root


@pytest.fixture(scope="session")
def whisper_dir(standin_dir) -> Path:
    return build_standins(standin_dir, ["whisper-large-v3"], log=lambda _: None)["whisper-large-v3"]


@pytest.fixture(scope="module")
def emotion(standin_dir) -> EmotionExtractor:
    extractor = EmotionExtractor(EmotionConfig(model_path=str(standin_dir / "emotion2vec_plus_large")))
    extractor.load()
    return extractor


@pytest.fixture(scope="module")
def accent(standin_dir) -> AccentExtractor:
    extractor = AccentExtractor(AccentConfig(model_path=str(standin_dir / "accent-commonaccent-ecapa")))
    extractor.load()
    return extractor


@pytest.fixture(scope="module")
def clips() -> list[Clip]:
    """Clips of different lengths, none ending in digital silence: real read speech cut mid-word, and espeak."""
    speech = [load_audio(AUDIO / name) for name in ("mini-01_b.wav", "mini-05_a.wav", "mini-03_a.wav")]
    librivox = sorted(LIBRIVOX.glob("*.wav"))
    if librivox:
        read = load_audio(librivox[0])
        speech[2] = Audio(read.samples[: int(3.3 * read.sample_rate)].copy(), read.sample_rate)
    return [Clip(f"{i:064x}", audio) for i, audio in enumerate(speech)]


def _alone_and_in_batches(extractor, clips: list[Clip], rotate: bool = True) -> None:
    """Each clip alone, and among clips of other lengths (in two orders with `rotate`)."""
    alone = [extractor.extract([clip])[0] for clip in clips]
    assert all(isinstance(section, Section) for section in alone), alone
    batches = [clips] + ([clips[1:] + clips[:1]] if rotate else [])
    for batch in batches:
        sections = dict(zip((clip.sha256 for clip in batch), extractor.extract(batch)))
        for clip, section in zip(clips, alone):
            assert sections[clip.sha256].values == section.values, f"clip {clip.sha256[-1]} in a batch"


# -- emotion2vec and ECAPA at full size --------------------------------------------------------------------


def test_the_stand_ins_load_as_the_published_models_and_say_what_they_are(standin_dir, emotion, accent):
    assert accent.labels == list(ACCENT_LABELS)
    marker = json.loads((standin_dir / "emotion2vec_plus_large" / STANDIN_MARKER).read_text())
    assert marker["standin"] is True and 300e6 < marker["parameters"] < 330e6  # data2vec 2.0 large
    ecapa = json.loads((standin_dir / "accent-commonaccent-ecapa" / STANDIN_MARKER).read_text())
    assert 19e6 < ecapa["parameters"] < 23e6  # ECAPA-TDNN, 1024 channels
    for extractor in (emotion, accent):
        assert "stand-in weights" in extractor.model().standin
    # The fingerprint tells stand-in values from those of the published weights.
    assert emotion.fingerprint() != EmotionExtractor().fingerprint()

    section = emotion.extract([Clip("0" * 64, load_audio(AUDIO / "mini-01_a.wav"))])[0]
    names = [token.split("/")[-1] for token in EMOTION_TOKENS[:-1]] + ["unknown"]
    assert list(section.values["agent_emotion"]) == names
    assert sum(section.values["agent_emotion"].values()) == pytest.approx(1, abs=1e-3)


def test_emotion_and_accent_scores_do_not_depend_on_the_batch(emotion, accent, clips):
    _alone_and_in_batches(emotion, clips)
    _alone_and_in_batches(accent, clips)


def test_padding_without_a_mask_would_move_emotion2vec_at_full_size(emotion, clips):
    """Why emotion runs one clip per forward pass: the pitfall the test above guards against is real here."""
    import torch

    model = emotion._automodel.model
    wave = torch.from_numpy(clips[0].audio.samples.astype(np.float32))
    padded = torch.nn.functional.pad(wave, (0, RATE))  # one second of padding, as a longer clip in the batch would add
    with torch.inference_mode():
        alone = model.extract_features(wave[None], padding_mask=None)["x"].mean(dim=1)
        frames = len(wave) // 320
        in_batch = model.extract_features(padded[None], padding_mask=None)["x"][:, :frames].mean(dim=1)
    assert not torch.allclose(alone, in_batch, atol=1e-3)


def test_blueprints_made_with_stand_ins_are_made_again_with_the_real_weights(tmp_path, monkeypatch):
    """Provenance names the stand-in; once the folder holds real weights the section is recomputed."""
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints

    models = tmp_path / "models"
    folder = build_tiny_ecapa(models / "accent-commonaccent-ecapa")
    (folder / STANDIN_MARKER).write_text(json.dumps({"standin": True, "note": "test"}))
    bench = tmp_path / "bench"
    (bench / "audio").mkdir(parents=True)
    shutil.copy(AUDIO / "mini-01_a.wav", bench / "audio" / "a.wav")
    shutil.copy(AUDIO / "mini-01_b.wav", bench / "audio" / "b.wav")
    (bench / "manifest.json").write_text(
        json.dumps(
            [
                {
                    "index": "p1",
                    "instruction_text": "Say hello.",
                    "audio1_path": "audio/a.wav",
                    "audio2_path": "audio/b.wav",
                }
            ]
        )
    )
    monkeypatch.setenv("TRACE_MODELS_DIR", str(models))
    options = BlueprintOptions(device="cpu", only=["accent"], progress=False)

    first = run_blueprints(bench, options)
    record = _blueprint(bench, "a.wav")["provenance"]["extractors"]["accent"]
    assert first.sections["accent"] == {"ok": 2}
    assert first.standin == {"accent": "stand-in weights (test): the values are not cues"}
    assert record["standin"] == "stand-in weights (test): the values are not cues"
    assert run_blueprints(bench, options).sections["accent"] == {"cached": 2}  # still the stand-in: kept

    (folder / STANDIN_MARKER).unlink()  # the published weights arrive in the same folder
    real = run_blueprints(bench, options)
    assert real.sections["accent"] == {"ok": 2} and real.standin == {}
    assert "standin" not in _blueprint(bench, "a.wav")["provenance"]["extractors"]["accent"]


def _blueprint(bench: Path, name: str) -> dict:
    from trace_eval.audio import sha256_file
    from trace_eval.stage1.store import BlueprintStore

    return BlueprintStore(bench).get(sha256_file(bench / "audio" / name))


def test_a_folder_that_may_hold_the_published_weights_is_never_replaced(tmp_path):
    folder = tmp_path / "accent-commonaccent-ecapa"
    folder.mkdir()
    (folder / "embedding_model.ckpt").write_bytes(b"the published weights")
    with pytest.raises(ValueError, match="holds no stand-in"):
        build_standins(tmp_path, ["accent-commonaccent-ecapa"], force=True, log=lambda _: None)
    assert (folder / "embedding_model.ckpt").read_bytes() == b"the published weights"
    built = build_standins(tmp_path / "standins", ["accent-commonaccent-ecapa"], log=lambda _: None)
    assert (built["accent-commonaccent-ecapa"] / STANDIN_MARKER).is_file()
    assert not list((tmp_path / "standins").glob(".*partial"))  # written beside, then renamed


# -- Whisper large-v3 ---------------------------------------------------------------------------------------


def test_the_whisper_tokenizer_splits_text_as_openai_whisper_does():
    openai = openai_whisper_tokenizer()
    tokenizer = transformers_whisper_tokenizer(openai)
    assert len(tokenizer) == openai.encoding.n_vocab == 51866
    for token in (
        "<|endoftext|>",
        "<|startoftranscript|>",
        "<|en|>",
        "<|yue|>",
        "<|transcribe|>",
        "<|nospeech|>",
        "<|notimestamps|>",
        "<|0.00|>",
        "<|30.00|>",
    ):
        assert tokenizer.convert_tokens_to_ids(token) == openai.encoding.encode_single_token(token)
    texts = [
        "The quick brown fox jumps over the lazy dog.",
        "  Leading spaces, tabs\tand\nnew lines; numbers 1234567 and 3.14159!",
        "¿Dónde está la estación? Grüße aus Köln. Ça va très bien, merci.",
        "你好，世界。今天天气很好。こんにちは、元気ですか？안녕하세요",
        "Здравствуйте! مرحبا بالعالم שלום עולם नमस्ते दुनिया",
        "Emoji 🙂🎉 and symbols ♪♫ «quotes» — dashes… it's we'll they'd",
    ]
    for text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert ids == openai.encoding.encode(text), text
        assert tokenizer.decode(ids) == text


@pytest.mark.slow
def test_the_paper_profile_runs_end_to_end_on_the_stand_ins(whisper_dir, tmp_path):
    """`blueprints --profile paper --device cpu` with TRACE_MODELS_DIR: every extractor, real loaders."""
    bench = tmp_path / "bench"
    (bench / "audio").mkdir(parents=True)
    shutil.copy(AUDIO / "mini-01_b.wav", bench / "audio" / "b.wav")
    (bench / "manifest.json").write_text(
        json.dumps(
            [
                {
                    "index": "p1",
                    "instruction_text": "Say hello.",
                    "audio1_path": "audio/b.wav",
                    "audio2_path": "audio/b.wav",
                }
            ]
        )
    )
    env = {**os.environ, "TRACE_MODELS_DIR": str(whisper_dir.parent), "TRACE_OFFLINE": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trace_eval",
            "blueprints",
            str(bench),
            "--profile",
            "paper",
            "--device",
            "cpu",
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "stand-in weights: " in done.stderr and "their values are not cues" in done.stderr
    blueprint = _blueprint(bench, "b.wav")
    records = blueprint["provenance"]["extractors"]
    assert {name: r["status"] for name, r in records.items()} == {name: "ok" for name in records}
    assert len(records) == 8
    assert {name for name, r in records.items() if r.get("standin")} == {"asr", "emotion", "accent"}
    assert blueprint["agent_response"] == STANDIN_SENTENCE.strip()
    assert blueprint["asr"]["model"] == "openai/whisper-large-v3" and blueprint["asr"]["backend"] == "transformers"
    assert blueprint["transcript_quality"]["temperature"] == 0.0  # decoded once, as a fluent model would
    assert list(blueprint["accent_probabilities"]) == list(ACCENT_LABELS)


@pytest.mark.slow
def test_whisper_large_v3_does_not_depend_on_the_batch(whisper_dir, clips):
    """The same clip alone and among clips of other lengths: the same words, timings and decoding numbers."""
    asr = AsrExtractor(
        AsrConfig(backend="transformers", model="whisper-large-v3", model_path=str(whisper_dir)), device="cpu"
    )
    _alone_and_in_batches(asr, clips[:2], rotate=False)
