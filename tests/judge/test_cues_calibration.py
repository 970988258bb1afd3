"""The calibration set of the `cues` backbone (scripts/make_calibration.py) and the Voice Quality rule fitted on it.

Known answer: the same sentence, once clean and once under steady white noise at
+9 dB SNR, scored by the real DNSMOS extractor, gives Voice Quality to the clean one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from script_modules import load_script

from extractors import Clip
from extractors.dnsmos import Config, DnsmosExtractor
from trace_eval.audio import load_audio
from trace_eval.bench import load_benchmark
from trace_eval.judge.cues import DEFAULT_THRESHOLDS, judge_voice_quality
from trace_eval.synth import have_tools

pytestmark = pytest.mark.skipif(not have_tools(), reason="needs espeak-ng and sox")


@pytest.fixture(scope="module")
def calibration():
    return load_script("make_calibration")


@pytest.fixture(scope="module")
def dnsmos():
    extractor = DnsmosExtractor(Config(num_threads=2), "cpu")
    extractor.load()
    return extractor


@pytest.mark.parametrize("snr", [9, 12])
def test_white_noise_loses_voice_quality_to_the_clean_copy(calibration, dnsmos, tmp_path, snr):
    """9 dB SNR: the noisy copy is not acceptable; 12 dB: acceptable, but audibly worse than the clean one."""
    fit = calibration.SPLITS[0]
    text = fit.sentences[2]
    clean = calibration.Response(text, "en-us+f2")
    noisy = calibration.Response(text, "en-us+f2", degradation=calibration.noise("white", snr))
    names = ("fit-vq03_a.wav", "fit-vq03_b.wav")  # the noise is seeded by the file name
    for name, response in zip(names, (clean, noisy), strict=True):
        calibration.render(response, tmp_path / name, tmp_path)
    results = dnsmos.extract([Clip(n, load_audio(tmp_path / n)) for n in names])
    clean_bp, noisy_bp = (_quality(r.values["agent_audio_quality"]) for r in results)
    # Measured: P.808 3.40 clean (BAK 2.06); 2.66 at 9 dB (BAK 1.50), 2.77 at 12 dB (BAK 1.65). The rule before
    # calibration passed both noisy copies as both_good.
    earlier = replace(
        DEFAULT_THRESHOLDS,
        quality_min_p808=2.6,
        quality_min_background=1.0,
        quality_clear_margin=1.5,
        quality_noise_margin_p808=5.0,
    )
    assert judge_voice_quality(clean_bp, noisy_bp, earlier)[0] == "both_good"
    label, reading, undetermined = judge_voice_quality(clean_bp, noisy_bp, DEFAULT_THRESHOLDS)
    assert (label, undetermined) == ("1", None), reading
    label, reading, _ = judge_voice_quality(noisy_bp, clean_bp, DEFAULT_THRESHOLDS)
    assert label == "2", reading


def _quality(bp_values: dict, lufs: float = -23.0) -> dict:
    # One sentence in one voice at one espeak-ng rate: pitch and rate as the calibration set measures them alike.
    return {
        "agent_audio_quality": bp_values,
        "agent_audio_properties": {"Integrated_Loudness_LUFS": lufs, "Mean_Pitch_Hz": 190.0, "Speech_Rate_WPM": 160.0},
    }


def test_a_much_quieter_answer_loses_voice_quality_and_small_level_changes_do_not():
    """DNSMOS scores a 20 dB quieter copy like the original; the level rule hears it. The bias audit's 3 and
    6 dB probes stay below the rule's gap, and a loudness asked for leaves the level to Paralinguistics."""
    scores = {"P808_Overall_Quality": 3.5, "DNSMOS_Personalized_Background_Quality": 2.5}
    clear = _quality(scores, -20.5)

    def label(lufs1: float, lufs2: float, instruction: str = 'Say "hello there"') -> str | None:
        bp1, bp2 = _quality(scores, lufs1), _quality(scores, lufs2)
        return judge_voice_quality(bp1, bp2, DEFAULT_THRESHOLDS, (None, None), instruction)[0]

    # Before: both above the -45 LUFS floor, so both_good.
    assert judge_voice_quality(clear, _quality(scores, -40.5), DEFAULT_THRESHOLDS)[0] == "1"
    assert label(-40.5, -20.5) == "2"
    assert label(-20.5, -35.0) == "1"  # the calibration set's -35 LUFS copy
    for drop in (3.0, 6.0):  # the audit's level probes, from a clip at -20 or at -30 LUFS
        assert label(-20.0, -20.0 - drop) == label(-30.0, -30.0 - drop) == "both_good"
    assert label(-20.5, -30.0) == "both_good"  # the calibration set's -30 LUFS copy: still comfortable
    assert label(-34.0, -40.0) == "both_good"  # both low, 6 LU apart
    assert label(-20.5, -40.5, 'Say "hello there" very quietly.') == "both_good"


def test_missing_quality_scores_leave_voice_quality_undetermined():
    scored = _quality({"P808_Overall_Quality": 3.5, "DNSMOS_Personalized_Background_Quality": 2.5})
    label, _, why = judge_voice_quality(scored, _quality({"P808_Overall_Quality": 3.4}), DEFAULT_THRESHOLDS)
    assert label is None and why == "response 2 BAK unmeasured"
    label, _, why = judge_voice_quality(None, scored, DEFAULT_THRESHOLDS)
    assert label is None and why == "response 1 P.808 and BAK and loudness unmeasured"
    # A measured failure is evidence even when the other score is missing.
    failed = _quality({"P808_Overall_Quality": 2.1})
    assert judge_voice_quality(failed, failed, DEFAULT_THRESHOLDS)[0] == "both_bad"


def test_noise_is_mixed_at_the_snr_asked_for(calibration):
    rng = np.random.default_rng(0)
    t = np.arange(32000) / 16000
    speech = 0.3 * np.sin(2 * np.pi * 220 * t) * (t > 0.5)  # a tone after half a second of silence
    for kind in ("white", "pink"):
        mixed = calibration.mix_at_snr(speech, kind, 9.0, seed=int(rng.integers(1 << 30)))
        noise = mixed - speech
        snr = 10 * np.log10(calibration.active_power(speech) / np.mean(noise**2))
        assert snr == pytest.approx(9.0, abs=0.01), kind


def _digest(folder: Path, files: list[Path]) -> dict[str, str]:
    return {str(rel): hashlib.sha256((folder / rel).read_bytes()).hexdigest() for rel in files}


def test_generation_is_deterministic_and_writes_the_manifest_it_describes(calibration, tmp_path):
    every = calibration.pairs_of(calibration.SPLITS[1])
    wanted = {
        "heldout-vq01",
        "heldout-vq08",
        "heldout-vq12",
        "heldout-vq14",
        "heldout-vq17",
        "heldout-vq19",
        "heldout-c05",
        "heldout-p03",
        "heldout-p09",
    }
    pairs = [p for p in every if p.index in wanted]
    first = calibration.write_pairs(pairs, tmp_path / "one")
    second = calibration.write_pairs(pairs, tmp_path / "two")
    assert first == second
    assert _digest(tmp_path / "one", first) == _digest(tmp_path / "two", second)

    bench = load_benchmark(tmp_path / "one")
    assert [pair.id for pair in bench.pairs] == [p.index for p in pairs]
    manifest = {item["index"]: item for item in json.loads((tmp_path / "one" / "manifest.json").read_text())}
    recipes = {r["index"]: r for r in json.loads((tmp_path / "one" / "recipes.json").read_text())}
    # Labels follow from the recipe: heavy degradation and audible noise lose, faint noise does not.
    assert manifest["heldout-vq01"]["label"]["voice_quality"] == "1"
    assert recipes["heldout-vq01"]["b"]["degradation"] == "white noise at 0 dB SNR"
    assert recipes["heldout-vq08"]["a"]["degradation"] == "pink noise at 13 dB SNR"
    assert manifest["heldout-vq08"]["label"]["voice_quality"] == "2"  # audible noise against none
    assert recipes["heldout-vq12"]["a"]["degradation"] == "pink noise at 25 dB SNR"
    assert manifest["heldout-vq12"]["label"]["voice_quality"] == "both_good"  # faint noise
    assert recipes["heldout-vq14"]["a"]["degradation"] == "scaled to -60 LUFS"
    assert manifest["heldout-vq14"]["label"]["voice_quality"] == "2"  # too quiet to hear comfortably
    assert recipes["heldout-vq17"]["b"]["degradation"] == "scaled to -40 LUFS"
    assert manifest["heldout-vq17"]["label"]["voice_quality"] == "1"  # much quieter than the natural level
    assert recipes["heldout-vq19"]["b"]["degradation"] == "scaled to -30 LUFS"
    assert manifest["heldout-vq19"]["label"]["voice_quality"] == "both_good"
    assert manifest["heldout-c05"]["label"] == {
        "content": "2",
        "voice_quality": "both_good",
        "paralinguistics": "both_good",
        "overall": "2",
    }
    assert manifest["heldout-p03"]["label"]["paralinguistics"] == "2"  # loudly: the -20 dB response fails
    assert manifest["heldout-p09"]["label"] == {
        "content": "2",
        "voice_quality": "2",
        "paralinguistics": "2",
        "overall": "2",
    }  # silence fails all
    audio = {item["index"]: load_audio(tmp_path / "one" / item["audio1_path"]) for item in manifest.values()}
    assert calibration.loudness_lufs(audio["heldout-vq14"].samples) == pytest.approx(-60.0, abs=0.1)
    for item in manifest.values():
        for key in ("instruction_path", "audio1_path", "audio2_path"):
            audio = load_audio(tmp_path / "one" / item[key])
            assert audio.sample_rate == 16000 and 1.0 < audio.duration_s < 8.0, (item["index"], key)
