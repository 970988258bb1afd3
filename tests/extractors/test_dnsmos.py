"""DNSMOS: the stacked, shared-frame scorer gives the reference's scores."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cpu_shim import build_cpu_shim, without_avx512

from extractors import REGISTRY, Clip, ClipError, ExtractorUnavailable, Section, numerics
from extractors.dnsmos import (
    SAMPLE_RATE,
    SCORE_DECIMALS,
    SCORE_TOLERANCE,
    WINDOW_SAMPLES,
    Config,
    DnsmosExtractor,
    DnsmosScores,
    loudest_block_dbfs,
    score_one_window_at_a_time,
    tile_to_window,
    window_starts,
)
from trace_eval.audio import Audio, load_audio
from trace_eval.synth import Voice, have_tools, speak

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not have_tools(), reason="needs espeak-ng and sox")

TEXT = (
    "The quarterly report shows that revenue grew in every region, although costs rose faster than expected. "
    "We will review the budget next week and decide which projects to postpone until the spring. "
    "Please send your comments before Friday, so that the final version can be shared with the whole team. "
    "Thank you all for the careful work on this difficult quarter."
)
SHORT_TEXT = "Please send your comments before Friday, so that we can share the final version."
LENGTHS_S = (0.5, 3.0, 9.5, 25.0)
TOLERANCE = 1e-4
SCORE_FIELDS = ("signal", "background", "overall", "p808", "plain_signal", "plain_background", "plain_overall")


@pytest.fixture(scope="module")
def extractor() -> DnsmosExtractor:
    ext = DnsmosExtractor(Config(non_personalized=True, num_threads=2), "cpu")
    ext.load()
    return ext


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> np.ndarray:
    """About 30 s of real speech at 16 kHz."""
    path = speak(TEXT, tmp_path_factory.mktemp("dnsmos") / "long.wav", Voice(wpm=120))
    samples = load_audio(path).at(SAMPLE_RATE)
    assert len(samples) >= max(LENGTHS_S) * SAMPLE_RATE
    return samples


@pytest.fixture(scope="module")
def clips_by_length(speech) -> dict[float, np.ndarray]:
    return {seconds: speech[: int(seconds * SAMPLE_RATE)] for seconds in LENGTHS_S}


@pytest.fixture(scope="module")
def batched(extractor, clips_by_length) -> dict[float, DnsmosScores]:
    """Scores of the clips of every length, stacked into shared runs."""
    return dict(zip(LENGTHS_S, extractor.scorer.score(list(clips_by_length.values()))))


def _clip(samples: np.ndarray, name: str = "x") -> Clip:
    return Clip(name, Audio(np.asarray(samples, dtype=np.float32), SAMPLE_RATE))


def _assert_close(got: DnsmosScores, want: DnsmosScores) -> None:
    assert got.windows == want.windows
    for field in SCORE_FIELDS:
        assert getattr(got, field) == pytest.approx(getattr(want, field), abs=TOLERANCE), field


def test_registered_as_batched():
    assert REGISTRY["dnsmos"] is DnsmosExtractor
    assert DnsmosExtractor.batched and DnsmosExtractor.sample_rate == 16000


def test_windows_follow_the_reference():
    # Short clips are doubled until they fill a window: 0.5 s -> 16 s -> 7 windows.
    assert len(tile_to_window(np.ones(8000, np.float32))) == 256000
    assert window_starts(WINDOW_SAMPLES) == [0]
    assert window_starts(10 * SAMPLE_RATE) == [0]
    assert window_starts(12 * SAMPLE_RATE) == [0, 16000, 32000]
    # The reference's int((idx + 9.01) * 16000) is one sample short for idx 7..23, and it skips those windows.
    assert window_starts(25 * SAMPLE_RATE) == [i * SAMPLE_RATE for i in range(7)]
    assert window_starts(40 * SAMPLE_RATE) == [i * SAMPLE_RATE for i in (*range(7), *range(24, 31))]


def test_batched_equals_one_window_at_a_time(extractor, clips_by_length, batched):
    assert [batched[s].windows for s in LENGTHS_S] == [7, 3, 1, 7]
    for seconds, samples in clips_by_length.items():
        _assert_close(batched[seconds], score_one_window_at_a_time(extractor.scorer, samples))


def test_whole_window_scoring_equals_shared_frames(extractor, clips_by_length, batched):
    """Without the `onnx` package whole windows are scored; the scores are the same."""
    scorer = extractor.scorer
    clips = [clips_by_length[3.0], clips_by_length[25.0]]
    shared = [batched[3.0], batched[25.0]]
    head, tail = scorer.p835.head, scorer.p835.tail
    scorer.p835.head = scorer.p835.tail = None
    try:
        whole = scorer.score(clips)
    finally:
        scorer.p835.head, scorer.p835.tail = head, tail
    for got, want in zip(shared, whole):
        assert got.signal == pytest.approx(want.signal, abs=TOLERANCE)
        assert got.background == pytest.approx(want.background, abs=TOLERANCE)
        assert got.overall == pytest.approx(want.overall, abs=TOLERANCE)


def test_equals_speechmos(clips_by_length, batched):
    dnsmos = pytest.importorskip("speechmos.dnsmos")
    for seconds in (3.0, 25.0):
        samples, got = clips_by_length[seconds], batched[seconds]
        personalized = dnsmos.run(samples, SAMPLE_RATE, model_type="dnsmos_personalized")
        plain = dnsmos.run(samples, SAMPLE_RATE, model_type="dnsmos")
        assert got.signal == pytest.approx(personalized["sig_mos"], abs=TOLERANCE)
        assert got.background == pytest.approx(personalized["bak_mos"], abs=TOLERANCE)
        assert got.overall == pytest.approx(personalized["ovrl_mos"], abs=TOLERANCE)
        assert got.p808 == pytest.approx(personalized["p808_mos"], abs=TOLERANCE)
        assert got.plain_signal == pytest.approx(plain["sig_mos"], abs=TOLERANCE)
        assert got.plain_background == pytest.approx(plain["bak_mos"], abs=TOLERANCE)
        assert got.plain_overall == pytest.approx(plain["ovrl_mos"], abs=TOLERANCE)


def test_sections_hold_rounded_scores_in_order(extractor, clips_by_length, batched):
    lengths = LENGTHS_S[::-1]  # not sorted by length: results still follow the input order
    results = extractor.extract([_clip(clips_by_length[s], str(s)) for s in lengths])
    for section, scores in zip(results, (batched[s] for s in lengths)):
        assert isinstance(section, Section)
        quality = section.values["agent_audio_quality"]
        assert quality["DNSMOS_Personalized_Signal_Quality"] == round(scores.signal, SCORE_DECIMALS)
        assert quality["DNSMOS_Personalized_Background_Quality"] == round(scores.background, SCORE_DECIMALS)
        assert quality["DNSMOS_Personalized_Overall_Quality"] == round(scores.overall, SCORE_DECIMALS)
        assert quality["P808_Overall_Quality"] == round(scores.p808, SCORE_DECIMALS)
        assert quality["DNSMOS_Overall_Quality"] == round(scores.plain_overall, SCORE_DECIMALS)
        assert all(1.0 <= v <= 5.0 for v in quality.values())
        assert not section.null_reasons


def test_white_noise_lowers_background_quality(extractor, tmp_path):
    clean = load_audio(speak(SHORT_TEXT, tmp_path / "clean.wav", Voice()))
    noisy = load_audio(speak(SHORT_TEXT, tmp_path / "noisy.wav", Voice(noise_db=-20)))
    results = extractor.extract([Clip("c", clean), Clip("n", noisy)])
    clean_q, noisy_q = (r.values["agent_audio_quality"] for r in results)
    # Measured: background 2.30 -> 1.68, P.808 3.75 -> 2.66.
    key = "DNSMOS_Personalized_Background_Quality"
    assert clean_q[key] - noisy_q[key] > 0.4, (clean_q, noisy_q)
    assert clean_q["P808_Overall_Quality"] - noisy_q["P808_Overall_Quality"] > 0.5, (clean_q, noisy_q)


def _reason(section: Section) -> str:
    """The one reason every quality score of a section is null for."""
    assert set(section.values["agent_audio_quality"].values()) == {None}
    (reason,) = set(section.null_reasons.values())
    assert set(section.null_reasons) == {f"agent_audio_quality.{k}" for k in section.values["agent_audio_quality"]}
    return reason


def test_only_speech_is_rated(extractor, speech, tmp_path):
    noise = load_audio(synth_noise(tmp_path / "white.wav", seconds=20, gain_db=-10)).at(SAMPLE_RATE)
    ten_s = speech[: 10 * SAMPLE_RATE]
    silence, white, quiet, spoken, noisy = extractor.extract(
        [
            _clip(np.zeros(20 * SAMPLE_RATE, np.float32), "digital silence"),
            _clip(noise, "white noise"),
            _clip(ten_s * 10 ** (-60 / 20) / np.abs(ten_s).max(), "speech peaking at -60 dBFS"),
            _clip(ten_s, "speech"),
            _clip(ten_s + _white_at_snr(ten_s, noise, snr_db=0), "speech under white noise at 0 dB SNR"),
        ]
    )
    # Scored as they are, digital silence gets P.808 2.3 and background 4.1, white noise P.808 about 2.
    assert _reason(silence) == "digital silence: no speech to rate"
    assert _reason(white).startswith("no speech: voice activity detection (Silero VAD) finds 0.00 s of speech")
    level = re.fullmatch(
        r"silence: the loudest 400 ms is at (-\d+\.\d) dBFS, below -70 dBFS: no speech to rate", _reason(quiet)
    )
    assert level and -80 < float(level.group(1)) < -70
    for rated in (spoken, noisy):
        assert (
            all(isinstance(v, float) for v in rated.values["agent_audio_quality"].values()) and not rated.null_reasons
        )
    assert (
        noisy.values["agent_audio_quality"]["P808_Overall_Quality"]
        < spoken.values["agent_audio_quality"]["P808_Overall_Quality"] - 0.5
    )


LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def test_speech_under_loud_white_noise_is_rated_and_coloured_noise_alone_is_not(extractor, tmp_path):
    """The speech gate works in noise: speech at -10 dB SNR is rated (and rated bad), noise alone is not."""
    white = load_audio(synth_noise(tmp_path / "white.wav", seconds=20, gain_db=-10)).at(SAMPLE_RATE)
    spoken = [load_audio(LIBRIVOX / f"sense_and_sensibility_01_austen_64kb-{n}.wav").at(SAMPLE_RATE) for n in READ]
    noisy = [s + _white_at_snr(s, white, snr_db=-10) for s in spoken]
    noises = {kind: synth_noise(tmp_path / f"{kind}.wav", seconds=10, gain_db=-10, kind=kind) for kind in COLOURS}
    sections = extractor.extract(
        [_clip(s, f"read speech {i}") for i, s in enumerate(spoken)]
        + [_clip(s, f"read speech {i} under white noise at -10 dB SNR") for i, s in enumerate(noisy)]
        + [_clip(load_audio(path).at(SAMPLE_RATE), f"10 s of {kind}") for kind, path in noises.items()]
    )
    clean, under_noise, noise_alone = sections[:3], sections[3:6], sections[6:]
    for quiet, loud in zip(clean, under_noise):
        assert not loud.null_reasons and all(isinstance(v, float) for v in loud.values["agent_audio_quality"].values())
        drop = (
            quiet.values["agent_audio_quality"]["P808_Overall_Quality"]
            - loud.values["agent_audio_quality"]["P808_Overall_Quality"]
        )
        assert drop > 0.5, (quiet.values, loud.values)
    for kind, section in zip(noises, noise_alone):
        assert re.fullmatch(
            r"no speech: voice activity detection \(Silero VAD\) finds 0\.\d\d s of speech, less than 0\.25 s "
            r"\(noise or other sound only\)",
            _reason(section),
        ), (kind, section.null_reasons)


COLOURS = ("whitenoise", "pinknoise", "brownnoise")
READ = ("0870", "0890", "0920")  # sentences of 5-7 s (one of 3 s under this noise is not found)


def synth_noise(path: Path, seconds: float, gain_db: float, kind: str = "whitenoise") -> Path:
    """Noise (white by default; pinknoise, brownnoise) made by sox with a fixed seed (-R), the same on every run."""
    import subprocess

    subprocess.run(
        [
            "sox",
            "-R",
            "-n",
            "-r",
            str(SAMPLE_RATE),
            "-b",
            "16",
            "-c",
            "1",
            str(path),
            "synth",
            str(seconds),
            kind,
            "gain",
            str(gain_db),
        ],
        check=True,
    )
    return path


def _white_at_snr(speech: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    """Noise scaled so that its power is snr_db below the power of the speech's sounding samples."""
    active = speech[np.abs(speech) > 0.01]
    noise = noise[: len(speech)]
    return (noise * np.sqrt(np.mean(active**2) / np.mean(noise**2)) * 10 ** (-snr_db / 20)).astype(np.float32)


def test_the_loudest_400_ms_sets_the_level():
    second = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    sine = (0.1 * np.sin(2 * np.pi * 440 * second)).astype(np.float32)  # mean square 0.005: -23.0 dB
    clip = np.concatenate([np.zeros(5 * SAMPLE_RATE, np.float32), sine, 0.01 * sine])
    assert loudest_block_dbfs(clip) == pytest.approx(20 * np.log10(0.1) - 10 * np.log10(2), abs=0.01)
    assert loudest_block_dbfs(sine[:1000]) == pytest.approx(-23.0, abs=0.1)  # shorter than 400 ms: the whole clip


def test_tiny_clips_are_not_rated(extractor, speech):
    """A clip of 100 ms is repeated 90 times to fill one window: there is no utterance to rate."""
    clips = [
        _clip(speech[SAMPLE_RATE : SAMPLE_RATE + SAMPLE_RATE // 10], "100 ms"),
        _clip(speech[SAMPLE_RATE : SAMPLE_RATE + 320], "20 ms"),
    ]
    for section in extractor.extract(clips):
        json.dumps(section.values, allow_nan=False)
        assert _reason(section).startswith("no speech: voice activity detection (Silero VAD) finds")


def test_long_runs_are_scored_a_block_at_a_time(extractor, clips_by_length, batched, monkeypatch):
    """The head's output over a stretch of windows is the same computed in any block size."""
    import extractors._dnsmos_net as net

    monkeypatch.setattr(net, "HEAD_BLOCK_FRAMES", 137)  # blocks end inside windows and inside edges
    for seconds in (9.5, 25.0):
        _assert_close(extractor.scorer.score([clips_by_length[seconds]])[0], batched[seconds])


def test_a_bad_clip_fails_alone(extractor, clips_by_length):
    bad = np.array(clips_by_length[3.0])
    bad[100] = np.nan
    results = extractor.extract([_clip(clips_by_length[3.0], "good"), _clip(bad, "nan"), _clip(np.zeros(0), "empty")])
    assert isinstance(results[0], Section)
    assert isinstance(results[1], ClipError) and "NaN" in str(results[1])
    assert isinstance(results[2], ClipError)


def test_model_directory_without_the_files_is_unavailable(tmp_path):
    ext = DnsmosExtractor(Config(model_path=str(tmp_path)))
    with pytest.raises(ExtractorUnavailable, match="missing"):
        ext.load()


def test_changed_weights_are_refused(extractor, tmp_path):
    source = extractor._model_dir
    for rel in ("pdnsmos_models/sig_bak_ovr.onnx", "dnsmos_models/sig_bak_ovr.onnx", "dnsmos_models/model_v8.onnx"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(source) / rel, tmp_path / rel)
    with open(tmp_path / "dnsmos_models/model_v8.onnx", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ExtractorUnavailable, match="sha256"):
        DnsmosExtractor(Config(model_path=str(tmp_path))).load()


def test_fingerprint_ignores_speed_settings():
    base = DnsmosExtractor(Config()).fingerprint()
    assert DnsmosExtractor(Config(batch_seconds=500, num_threads=1)).fingerprint() == base
    assert DnsmosExtractor(Config(non_personalized=True)).fingerprint() != base


def test_the_reference_layout_gives_the_default_layouts_scores_within_float_rounding(clips_by_length, batched):
    """The default, onnxruntime's NCHWc layout, sums the convolutions' channels in blocks that follow the CPU; the
    reference layout sums as the numeric class does on every CPU. The same scores within float rounding, but a
    fingerprint each, and the layout and its blocks recorded in the section's numerics."""
    assert DnsmosExtractor().config.layout == "nchwc"
    reference = DnsmosExtractor(Config(non_personalized=True, num_threads=2, layout="reference"), "cpu")
    assert reference.fingerprint() != DnsmosExtractor(Config(non_personalized=True)).fingerprint()
    reference.load()
    for seconds, scores in zip(LENGTHS_S, reference.scorer.score(list(clips_by_length.values()))):
        assert scores.windows == batched[seconds].windows
        for field in SCORE_FIELDS:
            assert getattr(scores, field) == pytest.approx(getattr(batched[seconds], field), abs=1e-5), field
    assert reference.numerics()["onnxruntime_layout"].startswith("reference: ")
    block = 16 if "avx512f" in numerics._cpu_flags() else 8
    nchwc = DnsmosExtractor().numerics()["onnxruntime_layout"]
    assert nchwc == f"NCHWc, convolutions summed by blocks of {block} channels"
    with pytest.raises(ValueError, match="expected one of: nchwc, reference"):
        DnsmosExtractor(Config(layout="class"))


SCORE_IN_A_NEW_PROCESS = """
import json, sys
import numpy as np
from extractors.dnsmos import Config, DnsmosExtractor
dnsmos = DnsmosExtractor(Config(non_personalized=True, num_threads=2), "cpu")
dnsmos.load()
clips = np.load(sys.argv[1])
print(json.dumps([[s.signal, s.background, s.overall, s.p808] for s in dnsmos.scorer.score(list(clips.values()))]))
"""


def test_a_cpu_without_avx512_sums_otherwise_and_scores_within_the_tolerance(clips_by_length, batched, tmp_path):
    """What an AVX2 CPU computes (MLAS's FMA3 kernels, NCHWc blocks of 8 channels), shown on an AVX-512 one whose
    CPUID hides AVX-512 from the process (tests/cpu_caches.c): other sums, so other raw scores, within 1e-5 of
    this process's, far inside the promise for stored scores."""
    env = {**os.environ, **without_avx512(build_cpu_shim(tmp_path))}
    np.savez(tmp_path / "clips.npz", **{str(i): clips_by_length[s] for i, s in enumerate(LENGTHS_S)})
    proc = subprocess.run(
        [sys.executable, "-c", SCORE_IN_A_NEW_PROCESS, str(tmp_path / "clips.npz")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    elsewhere = np.array(json.loads(proc.stdout.splitlines()[-1]))
    here = np.array([[getattr(batched[s], f) for f in ("signal", "background", "overall", "p808")] for s in LENGTHS_S])
    assert (elsewhere != here).any(), "the process without AVX-512 summed as this one: the shim did not reach MLAS"
    assert np.abs(elsewhere - here).max() < SCORE_TOLERANCE / 10
