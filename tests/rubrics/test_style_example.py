"""The bundled style example (examples/mini-style): pointwise items that load, stay small, and
whose scores follow from how each clip was made (measured on the audio where a cue allows)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import soundfile as sf
from script_modules import load_script

from trace_eval.audio import load_audio
from trace_eval.synth import have_tools

ROOT = Path(__file__).resolve().parents[2]
MINI_STYLE = ROOT / "examples" / "mini-style"
SCRIPT = ROOT / "scripts" / "make_example_style.py"


@pytest.fixture(scope="module")
def manifest() -> list[dict]:
    return json.loads((MINI_STYLE / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def recipes() -> dict:
    module = load_script("make_example_style")  # it imports make_example beside it
    return {"module": module, **{r.index: r for r in module.RECIPES}}


def test_items_follow_the_schema_and_load_as_pointwise(manifest):
    from trace_eval.bench import load_benchmark
    from trace_eval.rubrics import load_rubric

    schema = json.loads((ROOT / "schemas" / "manifest.schema.json").read_text(encoding="utf-8"))
    for item in manifest:
        jsonschema.Draft202012Validator(schema).validate(item)
    bench = load_benchmark(MINI_STYLE)
    style = load_rubric("style")
    assert all(p.pointwise and p.audio_paths() == [p.audio_path] for p in bench.pairs)
    assert all(style.unusable_reason(p) is None for p in bench.pairs)
    kinds = {p.id: style.dimensions_for(p) for p in bench.pairs}
    assert sum(k == ("style_following",) for k in kinds.values()) == 5
    assert sum(k == ("style", "realism") for k in kinds.values()) == 2
    assert all(set(p.label) == set(kinds[p.id]) for p in bench.pairs)


def test_clips_decode_and_the_folder_stays_under_1_mb(manifest):
    for item in manifest:
        info = sf.info(str(MINI_STYLE / item["audio_path"]))
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
        assert 1.0 <= load_audio(MINI_STYLE / item["audio_path"]).duration_s <= 8.0
    on_disk = {p.relative_to(MINI_STYLE).as_posix() for p in (MINI_STYLE / "audio").iterdir()}
    assert on_disk == {item["audio_path"] for item in manifest}
    size = sum(p.stat().st_size for p in MINI_STYLE.rglob("*") if p.is_file() and "blueprints" not in p.parts)
    assert size < 1e6, f"examples/mini-style is {size / 1e6:.2f} MB"


def test_scores_are_those_of_the_recipes_and_cover_the_scale(manifest, recipes):
    for item in manifest:
        recipe = recipes[item["id"]]
        assert item["label"] == recipe.labels and item["model"] == recipe.model
        assert item["style_elements"] == list(recipe.style_elements)
    assert sorted(item["label"]["style_following"] for item in manifest if "style_following" in item["label"]) == [
        1,
        2,
        3,
        4,
        5,
    ]
    score = recipes["module"].style_following
    assert [score(False, 3, 3), score(True, 0, 3), score(True, 1, 3), score(True, 2, 3), score(True, 3, 3)] == [
        1,
        2,
        3,
        4,
        5,
    ]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def _measure(x: np.ndarray, sr: int, words: int) -> dict[str, float]:
    import parselmouth
    import pyloudnorm

    pitch = parselmouth.Sound(x.astype(np.float64), sampling_frequency=sr).to_pitch_ac(
        pitch_floor=50, pitch_ceiling=500
    )
    f0 = pitch.selected_array["frequency"]
    frame = sr // 50  # speech span: 20 ms frames within 30 dB of the loudest
    rms = np.sqrt(np.mean(x[: len(x) // frame * frame].reshape(-1, frame) ** 2, axis=1))
    active = np.nonzero(rms > rms.max() * 10 ** (-30 / 20))[0]
    return {
        "hz": float(np.median(f0[f0 > 0])),
        "lufs": float(pyloudnorm.Meter(sr).integrated_loudness(x)),
        "wpm": words / ((active[-1] - active[0] + 1) * frame / sr) * 60,
    }


# What each requested element means, measured on the clip (the thresholds of examples/mini).
ELEMENTS = {
    "slowly": lambda m: m["wpm"] < 130,
    "quickly": lambda m: m["wpm"] > 200,
    "quietly": lambda m: m["lufs"] < -30,
    "in a high-pitched voice": lambda m: m["hz"] > 180,
    "in a deep voice": lambda m: m["hz"] < 90,
}


def test_instruction_scores_follow_the_text_said_and_the_elements_measured(manifest, recipes):
    for item in manifest:
        recipe = recipes[item["id"]]
        if recipe.context is not None:
            continue
        said = _words(" ".join(segment.text for segment in recipe.answer))
        asked = _words(re.search(r'"([^"]+)"', recipe.instruction).group(1))
        audio = load_audio(MINI_STYLE / item["audio_path"])
        measured = _measure(audio.samples, audio.sample_rate, len(said))
        done = sum(ELEMENTS[element](measured) for element in recipe.style_elements)
        expected = recipes["module"].style_following(said == asked, done, len(recipe.style_elements))
        assert item["label"]["style_following"] == expected, f"{item['id']}: {measured}"


def test_dialogue_scores_follow_voices_and_pauses(manifest, recipes):
    for item in manifest:
        recipe = recipes[item["id"]]
        if recipe.context is None:
            continue
        voices = {segment.voice.voice for segment in recipe.answer}
        paused = all(segment.voice.pad_s > 0 for segment in recipe.answer)
        assert item["label"]["realism"] == int(len(voices) == 2 and paused)
        assert item["context"] == recipe.context
        audio = load_audio(MINI_STYLE / item["audio_path"])
        half = len(audio.samples) // 2  # the librarian speaks first, the child second
        first, second = (_measure(x, audio.sample_rate, 4) for x in (audio.samples[:half], audio.samples[half:]))
        in_style = [first["lufs"] < -30, second["hz"] > 180]
        assert item["label"]["style"] == 1 + round(4 * sum(in_style) / 2), f"{item['id']}: {first}, {second}"


@pytest.mark.skipif(not have_tools(), reason="needs espeak-ng and sox")
def test_committed_files_are_what_the_script_makes():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
