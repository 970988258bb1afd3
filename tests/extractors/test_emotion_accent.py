"""Emotion (emotion2vec via funasr) and accent (ECAPA via speechbrain) extractors on tiny real-format models.

The models are random, so the tests check what does not depend on training:
labels come from the model files, every label gets a finite score, results do
not depend on which clips share a call, very short clips work, and missing or
broken weights make the extractor unavailable with the setting that fixes it.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_neural_models import ACCENT_LABELS, build_tiny_ecapa, build_tiny_emotion2vec

from extractors import REGISTRY, Clip, ClipError, ExtractorUnavailable, Section
from extractors.accent import AccentExtractor
from extractors.accent import Config as AccentConfig
from extractors.emotion import Config as EmotionConfig
from extractors.emotion import EmotionExtractor, english_label
from trace_eval.audio import Audio, load_audio
from trace_eval.synth import Voice, speak

RATE = 16000
EMOTION_LABELS = ["zangry", "zjoyful", "zcalm", "zgloomy", "unknown"]  # EMOTION_TOKENS in English, "unuse_0" dropped


# ---------------------------------------------------------------------------------------
# Fixtures: models and speech are made once per module.


@pytest.fixture(scope="module")
def emotion_dir(tmp_path_factory) -> Path:
    return build_tiny_emotion2vec(tmp_path_factory.mktemp("models") / "emotion2vec")


@pytest.fixture(scope="module")
def ecapa_dir(tmp_path_factory) -> Path:
    return build_tiny_ecapa(tmp_path_factory.mktemp("models") / "ecapa")


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> dict[str, Audio]:
    folder = tmp_path_factory.mktemp("speech")
    long = load_audio(speak("The quick brown fox jumps over the lazy dog.", folder / "long.wav"))
    short = load_audio(speak("Hello there.", folder / "short.wav", Voice(voice="en-gb", pitch=70)))
    noisy = load_audio(speak("Yes.", folder / "noisy.wav", Voice(noise_db=-30)))
    return {
        "long": long,
        "short": short,
        "noisy": noisy,
        # cut mid-speech: no trailing silence, so padding in a batch would show
        "cut": Audio(long.samples[RATE // 2 : 2 * RATE].copy(), RATE),
    }


def spoken_in(code: str | None, decoded: str | None = None) -> dict:
    """What accent reads of a clip's blueprint: its language as asr settled it, and the one it was decoded in."""
    language = {"code": code, "probability": 0.9, "source": "detected"} if code else None
    return {"language": language, "asr": {"language": decoded or code}}


ENGLISH = spoken_in("en")


@pytest.fixture(scope="module")
def clips(speech) -> list[Clip]:
    return [Clip(f"sha-{name}", audio, ENGLISH) for name, audio in speech.items()]


def tiny_clips(speech) -> list[Clip]:
    """0.02 s (the shortest clip load_audio accepts), 0.05 s and 0.3 s of speech."""
    voiced = speech["long"].samples[RATE // 2 :]
    return [Clip(f"sha-{ms}ms", Audio(voiced[: RATE * ms // 1000].copy(), RATE), ENGLISH) for ms in (20, 50, 300)]


@pytest.fixture(scope="module")
def emotion(emotion_dir) -> EmotionExtractor:
    ext = EmotionExtractor(EmotionConfig(model_path=str(emotion_dir)))
    ext.load()
    return ext


@pytest.fixture(scope="module")
def accent(ecapa_dir) -> AccentExtractor:
    ext = AccentExtractor(AccentConfig(model_path=str(ecapa_dir)))
    ext.load()
    return ext


def values(results: list[Section | ClipError]) -> list[dict]:
    assert all(isinstance(r, Section) for r in results), results
    return [r.values for r in results]


# ---------------------------------------------------------------------------------------
# Both


def test_registered_with_their_contract():
    for name, cls in (("emotion", EmotionExtractor), ("accent", AccentExtractor)):
        assert REGISTRY[name] is cls
        assert cls.batched and cls.uses_gpu and cls.sample_rate == RATE
    assert EmotionExtractor.outputs == ("agent_emotion",)
    assert AccentExtractor.outputs == ("agent_accent", "accent_probabilities")
    assert EmotionExtractor().model().id == "emotion2vec/emotion2vec_plus_large"
    assert AccentExtractor().model().id == "Jzuluaga/accent-id-commonaccent_ecapa"


# ---------------------------------------------------------------------------------------
# Emotion


def test_english_label():
    assert english_label("生气/angry") == "angry"
    assert english_label("<unk>") == "unknown"
    assert english_label("[UNK]", unk_symbol="[UNK]") == "unknown"
    assert english_label("calm") == "calm"


def test_emotion_scores_every_class_named_in_tokens(emotion, clips):
    for result in values(emotion.extract(clips)):
        scores = result["agent_emotion"]
        assert list(scores) == EMOTION_LABELS  # tokens.txt order; the "unuse_0" placeholder is dropped
        assert all(0.0 <= s <= 1.0 and math.isfinite(s) for s in scores.values())
        assert sum(scores.values()) == pytest.approx(1.0, abs=1e-3)
        assert all(s == round(s, 4) for s in scores.values())


def test_emotion_labels_follow_the_tokens_file(emotion_dir, clips, tmp_path):
    renamed = shutil.copytree(emotion_dir, tmp_path / "renamed")
    tokens = "甲/alpha\n乙/beta\n丙/gamma\n丁/delta\n戊/epsilon\n<unk>\n"
    (renamed / "tokens.txt").write_text(tokens, encoding="utf-8")
    ext = EmotionExtractor(EmotionConfig(model_path=str(renamed)))
    ext.load()
    [result] = values(ext.extract(clips[:1]))
    assert list(result["agent_emotion"]) == ["alpha", "beta", "gamma", "delta", "epsilon", "unknown"]


def test_emotion_same_result_in_one_call_or_one_by_one(emotion, clips):
    together = values(emotion.extract(clips))
    alone = [values(emotion.extract([c]))[0] for c in clips]
    assert together == alone
    assert len({tuple(v["agent_emotion"].values()) for v in together}) == len(clips)  # clips are told apart


def test_padded_emotion2vec_batch_would_change_scores(emotion, speech):
    """Why the extractor runs one clip per forward pass: emotion2vec's convolutions ignore the padding mask."""
    import torch
    import torch.nn.functional as F

    net = emotion._automodel.model
    waves = [speech["long"].samples, speech["cut"].samples]

    def probabilities(batch: torch.Tensor, padding_mask: torch.Tensor | None) -> torch.Tensor:
        with torch.inference_mode():
            out = net.extract_features(batch, padding_mask=padding_mask)
            keep = torch.ones(out["x"].shape[:2]) if out["padding_mask"] is None else (~out["padding_mask"]).float()
            pooled = (out["x"] * keep.unsqueeze(-1)).sum(1) / keep.sum(1, keepdim=True)
            return torch.softmax(net.proj(pooled), dim=-1)

    normalised = [F.layer_norm(torch.from_numpy(w), w.shape) for w in waves]  # as funasr does per clip
    alone = [probabilities(n.view(1, -1), None)[0] for n in normalised]
    batch = torch.zeros(2, len(waves[0]))
    mask = torch.ones(2, len(waves[0]), dtype=torch.bool)
    for i, n in enumerate(normalised):
        batch[i, : len(n)], mask[i, : len(n)] = n, False
    padded = probabilities(batch, mask)
    assert torch.allclose(padded[0], alone[0], atol=1e-5)  # the longest clip has no padding
    assert (padded[1] - alone[1]).abs().max() > 1e-3  # the padded one moves


def test_emotion_very_short_clips(emotion, speech):
    for result in values(emotion.extract(tiny_clips(speech))):
        assert list(result["agent_emotion"]) == EMOTION_LABELS
        assert all(math.isfinite(s) for s in result["agent_emotion"].values())


def test_emotion_missing_folder_names_the_setting(tmp_path):
    with pytest.raises(ExtractorUnavailable, match=r"--set emotion\.model_path=DIR") as error:
        EmotionExtractor(EmotionConfig(model_path=str(tmp_path / "absent"))).load()
    assert str(tmp_path / "absent") in str(error.value)


def test_emotion_nothing_found_offline_names_the_setting(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.setenv("TRACE_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("TRACE_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ExtractorUnavailable, match=r"--set emotion\.model_path=DIR"):
        EmotionExtractor().load()


def test_emotion_checkpoint_of_another_model_is_refused(emotion_dir, tmp_path):
    other = build_tiny_emotion2vec(tmp_path / "other", embed_dim=16)
    mixed = shutil.copytree(emotion_dir, tmp_path / "mixed")
    shutil.copy(other / "model.pt", mixed / "model.pt")
    with pytest.raises(ExtractorUnavailable, match="does not match"):
        EmotionExtractor(EmotionConfig(model_path=str(mixed))).load()


# ---------------------------------------------------------------------------------------
# Accent


def test_accent_cosines_and_probabilities_for_every_label(accent, clips):
    assert accent.labels == list(ACCENT_LABELS)  # accent_encoder.txt, in class index order
    for result in values(accent.extract(clips)):
        cosines, probabilities = result["agent_accent"], result["accent_probabilities"]
        assert list(cosines) == list(probabilities) == list(ACCENT_LABELS)
        assert all(-1.0 <= c <= 1.0 for c in cosines.values())
        assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-3)
        expected = np.exp(30.0 * np.array(list(cosines.values())))
        np.testing.assert_allclose(list(probabilities.values()), expected / expected.sum(), atol=5e-3)


def test_accent_labels_follow_the_label_file(tmp_path, clips):
    names = ("q_north", "q_south", "q_east")
    ext = AccentExtractor(AccentConfig(model_path=str(build_tiny_ecapa(tmp_path / "ecapa3", labels=names))))
    ext.load()
    [result] = values(ext.extract(clips[:1]))
    assert list(result["agent_accent"]) == list(names)


def test_accent_same_result_in_one_call_or_one_by_one(accent, clips):
    together = values(accent.extract(clips))
    alone = [values(accent.extract([c]))[0] for c in clips]
    assert together == alone
    assert len({tuple(v["agent_accent"].values()) for v in together}) == len(clips)


def test_accent_very_short_clips(accent, speech):
    for result in values(accent.extract(tiny_clips(speech))):
        assert list(result["agent_accent"]) == list(ACCENT_LABELS)
        assert all(math.isfinite(c) for c in result["agent_accent"].values())


def test_accent_is_null_with_the_reason_where_the_clip_is_not_english(accent, speech):
    """The model knows English accents only: French speech, or speech whose language cannot be told, gets no
    scores; English decoded by a recogniser unsure of the language (or English-only) does."""
    audio = speech["long"]
    blueprints = {
        "fr": spoken_in("fr"),
        "zh": spoken_in("zh"),
        "silent": {"language": None, "asr": {"language": None, "reason": "no speech detected: digital silence"}},
        "english-only recogniser": spoken_in(None, "en"),
        "en": ENGLISH,
    }
    results = accent.extract([Clip(name, audio, bp) for name, bp in blueprints.items()])
    by_name = dict(zip(blueprints, results))
    for name in ("fr", "zh", "silent"):
        assert by_name[name].values == {"agent_accent": None, "accent_probabilities": None}
    assert by_name["fr"].null_reasons == {
        "agent_accent": "the accent model knows English accents only; this clip is fr",
        "accent_probabilities": "the accent model knows English accents only; this clip is fr",
    }
    assert by_name["silent"].null_reasons["agent_accent"] == (
        "the accent model knows English accents only; this clip's language is not known "
        "(no speech detected: digital silence)"
    )
    for name in ("english-only recogniser", "en"):
        assert list(by_name[name].values["agent_accent"]) == list(ACCENT_LABELS)
    assert by_name["en"].values == by_name["english-only recogniser"].values
    assert AccentExtractor.depends_on == ("asr",)


def test_accent_missing_folder_names_the_setting(tmp_path):
    with pytest.raises(ExtractorUnavailable, match=r"--set accent\.model_path=DIR"):
        AccentExtractor(AccentConfig(model_path=str(tmp_path / "absent"))).load()


def test_accent_found_under_trace_models_dir(ecapa_dir, clips, tmp_path, monkeypatch):
    shutil.copytree(ecapa_dir, tmp_path / "accent-commonaccent-ecapa")
    monkeypatch.setenv("TRACE_MODELS_DIR", str(tmp_path))
    ext = AccentExtractor()
    ext.load()
    assert ext.model().source == str(tmp_path / "accent-commonaccent-ecapa")
    assert values(ext.extract(clips[:1]))[0]["agent_accent"]


def test_accent_label_file_of_another_size_is_refused(ecapa_dir, tmp_path):
    broken = shutil.copytree(ecapa_dir, tmp_path / "broken")
    (broken / "accent_encoder.txt").write_text("'only' => 0\n================\n'starting_index' => 0\n")
    with pytest.raises(ExtractorUnavailable, match="1 labels but the classifier has 4 outputs"):
        AccentExtractor(AccentConfig(model_path=str(broken))).load()


def test_accent_classifier_without_weights_is_refused(ecapa_dir, tmp_path):
    import torch

    broken = shutil.copytree(ecapa_dir, tmp_path / "broken")
    torch.save({}, broken / "classifier.ckpt")
    with pytest.raises(ExtractorUnavailable, match="lacks 1 weights of the classifier"):
        AccentExtractor(AccentConfig(model_path=str(broken))).load()


def test_loading_accent_leaves_torch_precision_alone(ecapa_dir):
    """speechbrain turns TF32 on when imported; the other models' GPU results must not depend on it."""
    script = (
        "import torch; from extractors.accent import AccentExtractor, Config; "
        f"AccentExtractor(Config(model_path={str(ecapa_dir)!r})).load(); "
        "print(torch.backends.cuda.matmul.allow_tf32)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize(
    "make",
    [
        lambda d: EmotionExtractor(EmotionConfig(model_path=str(d["emotion"]), min_seconds=0.0)),
        lambda d: AccentExtractor(AccentConfig(model_path=str(d["accent"]), min_seconds=0.0)),
    ],
    ids=["emotion", "accent"],
)
def test_a_clip_the_model_cannot_take_fails_alone(make, emotion_dir, ecapa_dir, speech, clips):
    """Without the minimum length, 20 ms is too short for the convolutions: that clip fails, the others do not."""
    ext = make({"emotion": emotion_dir, "accent": ecapa_dir})
    ext.load()
    too_short = tiny_clips(speech)[0]
    results = ext.extract([clips[0], too_short, clips[1]])
    assert isinstance(results[0], Section) and isinstance(results[2], Section)
    assert isinstance(results[1], ClipError) and "RuntimeError" in str(results[1])
