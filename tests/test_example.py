"""The bundled example benchmark (examples/mini): it loads, every clip decodes, the labels are
consistent with the `cap` fusion policy, and each label follows from how its clips sound.

In this example every dimension label is decided by acceptability alone (no pair has two
acceptable answers of which one is better), so a label is re-derived here from one yes/no
per answer: both acceptable -> both_good, neither -> both_bad, else the acceptable one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import soundfile as sf
from script_modules import load_script

from trace_eval.audio import load_audio
from trace_eval.rubrics import load_rubric
from trace_eval.synth import have_tools

TRACE = load_rubric("trace")

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "examples" / "mini"
SCRIPT = ROOT / "scripts" / "make_example.py"
LABELS = {"1", "2", "both_good", "both_bad"}
DIMENSIONS = ("content", "voice_quality", "paralinguistics", "overall")
AUDIO_KEYS = ("instruction_path", "audio1_path", "audio2_path")


@pytest.fixture(scope="module")
def manifest() -> list[dict]:
    return json.loads((MINI / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def recipes() -> dict:
    module = load_script("make_example")
    return {r.index: r for r in module.RECIPES}


def typed_tie(first_ok: bool, second_ok: bool) -> str:
    if first_ok and second_ok:
        return "both_good"
    if not first_ok and not second_ok:
        return "both_bad"
    return "1" if first_ok else "2"


def answers(item: dict) -> tuple[tuple[np.ndarray, int], tuple[np.ndarray, int]]:
    a = load_audio(MINI / item["audio1_path"])
    b = load_audio(MINI / item["audio2_path"])
    return (a.samples, a.sample_rate), (b.samples, b.sample_rate)


# --- structure -------------------------------------------------------------------------------------


def test_manifest_items_follow_the_schema(manifest):
    schema = json.loads((ROOT / "schemas" / "manifest.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    assert isinstance(manifest, list) and len(manifest) >= 8
    for item in manifest:
        validator.validate(item)
        assert set(item["label"]) == set(DIMENSIONS), item["index"]
    ids = [item["index"] for item in manifest]
    assert len(ids) == len(set(ids))


def test_the_benchmark_loader_reads_it(manifest):
    from trace_eval.bench import load_benchmark

    bench = load_benchmark(MINI)
    assert [pair.id for pair in bench.pairs] == [item["index"] for item in manifest]
    assert all(pair.label == item["label"] for pair, item in zip(bench.pairs, manifest))


def test_every_clip_exists_and_decodes_at_16k_mono_16bit(manifest):
    referenced = {item[key] for item in manifest for key in AUDIO_KEYS}
    for rel in sorted(referenced):
        info = sf.info(str(MINI / rel))
        assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16"), rel
        audio = load_audio(MINI / rel)
        assert audio.sample_rate == 16000 and audio.channels == 1, rel
        assert 1.5 <= audio.duration_s <= 8.0, f"{rel}: {audio.duration_s:.2f} s"
    on_disk = {p.relative_to(MINI).as_posix() for p in (MINI / "audio").iterdir()}
    assert on_disk == referenced, "audio/ holds exactly the files the manifest names"


def test_shared_instruction_is_one_file(manifest):
    # Two pairs with the same instruction point at one file: one blueprint serves both.
    by_text: dict[str, set[str]] = {}
    for item in manifest:
        by_text.setdefault(item["instruction_text"], set()).add(item["instruction_path"])
    assert all(len(paths) == 1 for paths in by_text.values())
    assert len(by_text) < len(manifest)


def test_folder_stays_small():
    size = sum(p.stat().st_size for p in MINI.rglob("*") if p.is_file())
    assert size < 3.2e6, f"examples/mini is {size / 1e6:.2f} MB"


# --- labels ----------------------------------------------------------------------------------------


def test_labels_are_valid_and_overall_is_the_cap_policy(manifest):
    for item in manifest:
        label = item["label"]
        assert set(label.values()) <= LABELS, item["index"]
        fused = TRACE.fusion.fuse("cap", label)
        assert label["overall"] == fused, f"{item['index']}: overall {label['overall']}, cap gives {fused}"


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_every_label_value_appears(manifest, dimension):
    assert {item["label"][dimension] for item in manifest} == LABELS


def test_manifest_matches_the_recipes(manifest, recipes):
    assert [item["index"] for item in manifest] == list(recipes)
    for item in manifest:
        recipe = recipes[item["index"]]
        assert item["instruction_text"] == recipe.instruction
        assert item["label"]["paralinguistics"] == recipe.paralinguistics


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def test_content_follows_what_each_answer_says(manifest, recipes):
    # An answer is acceptable on content when it says the quoted sentence(s) of the instruction, all of them.
    for item in manifest:
        recipe = recipes[item["index"]]
        asked = _words(" ".join(re.findall(r'"([^"]+)"', recipe.instruction)))
        assert asked, f"{item['index']}: the instruction quotes no sentence"
        said = [_words(" ".join(seg.text for seg in answer)) for answer in (recipe.answer_a, recipe.answer_b)]
        assert item["label"]["content"] == typed_tie(said[0] == asked, said[1] == asked), item["index"]


# --- the cues a judge reads separate the answers the way the labels say -------------------------------


def test_voice_quality_follows_dnsmos_p808(manifest):
    # P.808 MOS is the quality cue that separates clean from noisy espeak speech; the personalized P.835
    # background score also drops with fast speech and some voices, so it is no yardstick for synthetic clips.
    from speechmos import dnsmos

    for item in manifest:
        mos = [float(dnsmos.run(x, sr, model_type="dnsmos_personalized")["p808_mos"]) for x, sr in answers(item)]
        clean = [score > 2.7 for score in mos]  # clean clips score 3.0-3.9, clips with noise 2.2-2.4
        assert item["label"]["voice_quality"] == typed_tie(*clean), f"{item['index']}: P.808 MOS {mos}"


def _median_pitch_hz(x: np.ndarray, sr: int) -> float:
    import parselmouth

    pitch = parselmouth.Sound(x.astype(np.float64), sampling_frequency=sr).to_pitch_ac(
        pitch_floor=50, pitch_ceiling=500
    )
    f0 = pitch.selected_array["frequency"]
    return float(np.median(f0[f0 > 0]))


def _loudness_lufs(x: np.ndarray, sr: int) -> float:
    import pyloudnorm

    return float(pyloudnorm.Meter(sr).integrated_loudness(x))


def _words_per_minute(x: np.ndarray, sr: int, words: int) -> float:
    # Speech span: first to last 20 ms frame within 30 dB of the loudest frame.
    frame = sr // 50
    rms = np.sqrt(np.mean(x[: len(x) // frame * frame].reshape(-1, frame) ** 2, axis=1))
    active = np.nonzero(rms > rms.max() * 10 ** (-30 / 20))[0]
    span_s = (active[-1] - active[0] + 1) * frame / sr
    return words / span_s * 60


def test_paralinguistics_follows_pace_pitch_and_loudness(manifest, recipes):
    checked = 0
    for item in manifest:
        recipe = recipes[item["index"]]
        instruction = re.sub(r'"[^"]*"', "", recipe.instruction).lower()  # the request, not the words to say
        clips = answers(item)
        word_counts = [len(_words(" ".join(seg.text for seg in a))) for a in (recipe.answer_a, recipe.answer_b)]
        if " then " in instruction:
            continue  # a change of pace needs word times (ASR); its label rests on the recipe's two rates
        if "slowly" in instruction or "quickly" in instruction:
            cue = [_words_per_minute(x, sr, n) for (x, sr), n in zip(clips, word_counts)]
            ok = [wpm < 130 for wpm in cue] if "slowly" in instruction else [wpm > 200 for wpm in cue]
        elif "high-pitched" in instruction or "deep" in instruction:
            cue = [_median_pitch_hz(x, sr) for x, sr in clips]
            ok = [hz > 180 for hz in cue] if "high-pitched" in instruction else [hz < 90 for hz in cue]
        elif "quietly" in instruction or "loudly" in instruction:
            cue = [_loudness_lufs(x, sr) for x, sr in clips]
            ok = [lufs < -30 for lufs in cue] if "quietly" in instruction else [lufs > -26 for lufs in cue]
        else:
            pytest.fail(f"{item['index']}: no paralinguistic request recognised in {recipe.instruction!r}")
        assert item["label"]["paralinguistics"] == typed_tie(*ok), f"{item['index']}: cues {cue}"
        checked += 1
    assert checked >= 7


def test_change_of_pace_recipe(recipes):
    (pair,) = [r for r in recipes.values() if " then " in r.instruction]
    rates_a = [seg.voice.wpm for seg in pair.answer_a]
    rates_b = [seg.voice.wpm for seg in pair.answer_b]
    paced = [len(rates) == 2 and rates[1] >= 2 * rates[0] for rates in (rates_a, rates_b)]
    assert pair.paralinguistics == typed_tie(*paced)


# --- regeneration -----------------------------------------------------------------------------------

needs_synthesis = pytest.mark.skipif(not have_tools(), reason="needs espeak-ng and sox")


def _run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


@needs_synthesis
def test_committed_files_are_what_the_script_makes():
    proc = _run_script("--check")
    assert proc.returncode == 0, proc.stderr


@needs_synthesis
def test_check_reports_a_changed_file(tmp_path):
    copy = tmp_path / "mini"
    shutil.copytree(MINI, copy)
    clip = copy / "audio" / "mini-03_b.wav"
    data = bytearray(clip.read_bytes())
    data[-1] ^= 0xFF
    clip.write_bytes(bytes(data))
    (copy / "audio" / "stray.wav").write_bytes(b"")
    proc = _run_script("--check", "--out", str(copy))
    assert proc.returncode == 1
    assert "differs: audio/mini-03_b.wav" in proc.stderr
    assert "not made by the script: audio/stray.wav" in proc.stderr


def test_the_example_on_the_cpus_own_kernels_is_recorded_as_such_and_never_mixed(example_with_blueprints):
    # The stored blueprints come from a pinned numeric class (the default). oneDNN let loose on the CPU's widest
    # code (AVX-512 and VNNI where the CPU has them) is another arithmetic: its sections say "unpinned" and
    # the recogniser's fingerprint differs, so a store read by such a process is recomputed, never mixed.
    from trace_eval.stage1.store import BlueprintStore

    store = BlueprintStore(example_with_blueprints)
    path = sorted(store.index())[0]
    script = (
        "import json, sys; from extractors.asr import AsrConfig, AsrExtractor; from extractors import Clip; "
        "from trace_eval.audio import load_audio; asr = AsrExtractor(AsrConfig()); "
        "(section,) = asr.extract([Clip('x' * 64, load_audio(sys.argv[1]))]); "
        "print(json.dumps([asr.fingerprint(), asr.numerics(), section.values['agent_response']]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(example_with_blueprints / path)],
        cwd=ROOT,
        env={**os.environ, "ONEDNN_MAX_CPU_ISA": "ALL"},
        capture_output=True,
        text=True,
        check=True,
    )
    fingerprint, numerics, text = json.loads(done.stdout)
    stored = store.get_by_path(path)["provenance"]["extractors"]["asr"]
    assert stored["numerics"]["class"] in ("avx2", "generic") and "unpinned" not in stored["numerics"]
    from extractors.numerics import environment

    wanted = environment(stored["numerics"]["class"])["ONEDNN_MAX_CPU_ISA"]
    assert numerics["class"] == "unpinned" and numerics["unpinned"] == [
        f"ONEDNN_MAX_CPU_ISA='ALL' where class {stored['numerics']['class']} sets {wanted!r}",
        f"onednn runs ALL kernels where class {stored['numerics']['class']} runs {wanted}",
    ]
    assert fingerprint != stored["fingerprint"] and text
